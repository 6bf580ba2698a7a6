#include "ingest/metrics_csv.h"

#include <algorithm>

#include <charconv>
#include <cmath>
#include <limits>

#include "core/error.h"
#include "core/json_io.h"
#include "ingest/line_reader.h"
#include "ingest/series_builder.h"

namespace lockstep {

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool equals_lower(std::string_view s, std::string_view lower) {
  if (s.size() != lower.size()) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    if (c != lower[i]) return false;
  }
  return true;
}

std::string line_field(uint64_t line) { return "line " + std::to_string(line); }

}  // namespace

std::string split_csv_line(std::string_view line, std::vector<std::string>& cells) {
  cells.clear();
  size_t i = 0;
  while (true) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    std::string cell;
    if (i < line.size() && line[i] == '"') {
      size_t open = i++;
      bool closed = false;
      while (i < line.size()) {
        if (line[i] == '"') {
          if (i + 1 < line.size() && line[i + 1] == '"') {
            cell += '"';
            i += 2;
            continue;
          }
          ++i;
          closed = true;
          break;
        }
        cell += line[i++];
      }
      if (!closed)
        return "a closing quote for the cell opened at column " + std::to_string(open + 1) +
               " (a quoted cell spanning lines is not supported)";
      while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
      if (i < line.size() && line[i] != ',')
        return "a comma or the end of the line after the closing quote at column " + std::to_string(i);
    } else {
      size_t comma = line.find(',', i);
      size_t end = comma == line.npos ? line.size() : comma;
      std::string_view raw = line.substr(i, end - i);
      if (raw.find('"') != raw.npos)
        return "a double quote only around a whole cell (column " + std::to_string(i + raw.find('"') + 1) + ")";
      cell = std::string(trim(raw));
      i = end;
    }
    cells.push_back(std::move(cell));
    if (i >= line.size()) return "";
    ++i;  // the comma
    if (i == line.size()) {
      cells.emplace_back();  // "a,b," ends with an empty cell
      return "";
    }
  }
}

bool parse_csv_number(std::string_view s, double& out) {
  std::string_view body = s;
  bool negative = false;
  if (!body.empty() && (body[0] == '+' || body[0] == '-')) {
    negative = body[0] == '-';
    body.remove_prefix(1);
  }
  if (equals_lower(body, "nan")) {
    out = std::numeric_limits<double>::quiet_NaN();
    return true;
  }
  if (equals_lower(body, "inf") || equals_lower(body, "infinity")) {
    out = negative ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
    return true;
  }
  if (body.empty() || (s[0] == '+' && (body[0] == '+' || body[0] == '-'))) return false;
  for (char c : body)
    if (!((c >= '0' && c <= '9') || c == '.' || c == 'e' || c == 'E' || c == '-' || c == '+')) return false;
  // from_chars takes no '+' but a '-': parse the text with its own sign.
  std::string_view text = s[0] == '+' ? body : s;
  auto r = std::from_chars(text.data(), text.data() + text.size(), out);
  return r.ec == std::errc() && r.ptr == text.data() + text.size() && std::isfinite(out);
}

bool parse_csv_step(std::string_view s, int64_t& out) {
  if (!s.empty() && s[0] == '+') s.remove_prefix(1);  // "+3", as a value may be written
  size_t dot = s.find('.');
  std::string_view whole = s.substr(0, dot);
  if (dot != s.npos) {
    std::string_view frac = s.substr(dot + 1);
    if (frac.empty()) return false;
    for (char c : frac)
      if (c != '0') return false;
  }
  if (whole.empty()) return false;
  for (char c : whole)
    if (c < '0' || c > '9') return false;
  auto r = std::from_chars(whole.data(), whole.data() + whole.size(), out);
  return r.ec == std::errc() && r.ptr == whole.data() + whole.size();
}

namespace {

// Where a CSV metrics file keeps what is read: its column count, the step
// column (and the name messages give it), a column per requested series.
struct CsvColumns {
  size_t count = 0;
  size_t step = 0;
  std::string step_name;
  std::vector<size_t> values;  ///< one per series of `set`, in its order
};

// Reads the header (the first line that is not blank) of `lines` and finds
// the step and series columns. Throws exit-2 Error naming the file and the
// column or line.
CsvColumns read_csv_header(const MetricsSpec& spec, LineReader& lines, SeriesSet& set) {
  std::vector<std::string> cells;
  std::string_view line;
  // The header: the first line that is not blank.
  bool have_header = false;
  while (!have_header && lines.next(line)) have_header = !is_blank_line(line);
  if (!have_header) throw BadInput(spec.path, "", "a CSV header row (the file holds only blank lines)");
  if (std::string bad = split_csv_line(line, cells); !bad.empty())
    throw BadInput(spec.path, line_field(lines.line_number()) + " (the header)", bad);
  size_t columns = cells.size();
  std::vector<std::string> header = cells;
  const bool unnamed_index = header[0].empty();  // pandas' unnamed index column
  size_t first = unnamed_index ? 1 : 0;
  auto column_of = [&](const std::string& name, const std::string& role) -> size_t {
    size_t found = columns;
    for (size_t c = first; c < columns; ++c) {
      if (header[c] != name) continue;
      if (found != columns)
        throw BadInput(spec.path, line_field(lines.line_number()) + " (the header)",
                       "the " + role + " column '" + name + "' once; it is columns " + std::to_string(found + 1) +
                           " and " + std::to_string(c + 1));
      found = c;
    }
    if (found == columns) {
      std::vector<std::string> names(header.begin() + static_cast<std::ptrdiff_t>(first), header.end());
      std::string hint = closest_spelling(name, names);
      throw BadInput(spec.path, "column '" + name + "'",
                     "a " + role + " column '" + name + "' in the header" +
                         (hint.empty() ? std::string(" (it has none)") : " (did you mean '" + hint + "'?)") +
                         (role == "step" && unnamed_index ? "; the first column is unnamed (pandas' index): "
                                                            "step key \"\" names it" : ""));
    }
    return found;
  };
  // The step: the named column; "" names pandas' unnamed index column
  // (the first header cell empty, as pytest-regressions writes it), which
  // is also the step when the file has no column of the default name.
  size_t step_column = 0;
  if (spec.step_key.empty()) {
    if (!unnamed_index)
      throw BadInput(spec.path, "column ''", "an unnamed first column (the header's first cell empty, pandas' "
                                             "index) for the step key \"\"; the first cell is '" +
                                             input_excerpt(header[0]) + "'");
  } else if (unnamed_index && spec.step_key == "step" &&
             std::find(header.begin(), header.end(), std::string("step")) == header.end()) {
    step_column = 0;  // pandas' index column: the row's step
  } else {
    step_column = column_of(spec.step_key, "step");
  }
  CsvColumns out;
  out.count = columns;
  out.step = step_column;
  out.step_name = step_column == 0 && unnamed_index ? std::string("(unnamed index)") : spec.step_key;
  for (size_t i = 0; i < set.size(); ++i) {
    out.values.push_back(column_of(set.key(i), "metric"));
    // One column cannot be both: its values would be read as their own steps.
    if (out.values.back() == step_column)
      throw BadInput(spec.path, "column '" + set.key(i) + "'",
                     "a metric column other than the step column '" + out.step_name + "' (the step key names it too)");
  }
  return out;
}

}  // namespace


std::map<std::string, Series> read_csv_metrics(const MetricsSpec& spec) {
  IngestSources sources("line");
  uint32_t file = sources.add(spec.path);
  SeriesSet set(spec.series, "column", sources);
  set.begin_file(file);
  LineReader lines(spec.path);
  lines.require_final_newline();  // a cut value would parse
  std::vector<std::string> cells;
  std::string_view line;

  const CsvColumns col = read_csv_header(spec, lines, set);
  const size_t columns = col.count, step_column = col.step;
  const std::string& step_name = col.step_name;
  const std::vector<size_t>& value_columns = col.values;

  while (lines.next(line)) {
    if (is_blank_line(line)) continue;
    uint64_t n = lines.line_number();
    if (n == kExtrapolateAfterLines) set.extrapolate(lines.offset(), lines.file_bytes());
    if (std::string bad = split_csv_line(line, cells); !bad.empty()) throw BadInput(spec.path, line_field(n), bad);
    if (cells.size() != columns)
      throw BadInput(spec.path, line_field(n),
                     std::to_string(columns) + " cells, as in the header; got " + std::to_string(cells.size()));
    int64_t step;
    if (!parse_csv_step(cells[step_column], step))
      throw BadInput(spec.path, line_field(n) + ": column '" + step_name + "'",
                     "a non-negative integer step, got \"" + input_excerpt(cells[step_column]) + "\"");
    for (size_t i = 0; i < value_columns.size(); ++i) {
      const std::string& cell = cells[value_columns[i]];
      if (cell.empty()) continue;  // not logged at this step
      double v;
      if (!parse_csv_number(cell, v))
        throw BadInput(spec.path, line_field(n) + ": column '" + set.key(i) + "'",
                       "a number (or nan, inf, -inf, Infinity in any case, or an empty cell), got \"" + input_excerpt(cell) + "\"");
      set.at(i).add(step, v, Series::Dtype::kFloat64, n);
    }
  }
  return set.finish(spec.path, "with a value on any row (the column is empty)");
}

}  // namespace lockstep
