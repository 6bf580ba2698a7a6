#include "ingest/peer_goldens.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <set>
#include <cstdlib>
#include <string_view>

#include "core/error.h"
#include "core/json_io.h"
#include "ingest/json_line.h"
#include "ingest/line_reader.h"
#include "ingest/number_text.h"
#include "ingest/series_builder.h"

namespace lockstep {

namespace {

// A metric value: a number, or "nan" / "NaN" / "inf" / "-inf".
bool metric_value(simdjson::dom::element v, double& out) {
  std::string_view s;
  if (v.get_string().get(s) == simdjson::SUCCESS) return (s == "nan" || s == "NaN" || s == "inf" || s == "-inf") && float_repr(s, out);
  return json_number(v, out);
}

// An integer in [lo, hi] at `path`, else exit 2 naming it.
int64_t integer_at(simdjson::dom::element v, const std::string& file, const std::string& path, int64_t lo, int64_t hi) {
  int64_t x;
  double d;
  bool ok = v.get_int64().get(x) == simdjson::SUCCESS ||
            (v.get_double().get(d) == simdjson::SUCCESS && std::floor(d) == d && d >= -9e15 && d <= 9e15 &&
             (x = static_cast<int64_t>(d), true));
  if (!ok || x < lo || x > hi)
    throw BadInput(file, path, "an integer between " + std::to_string(lo) + " and " + std::to_string(hi) + ", got " +
                                   json_type_name(v));
  return x;
}

// A values object whose step keys are not in increasing order: each key
// read as a decimal step, the pairs sorted by step (stable), each passed
// to `add(step, value, path)`; exit 2 naming a key that is no decimal step
// or a step written under two keys ("1" and "01").
template <typename Add>
void add_sorted_by_step(simdjson::dom::object by_key, const std::string& name, const std::string& file, Add& add) {
  std::vector<std::pair<int64_t, simdjson::dom::key_value_pair>> steps;
  steps.reserve(by_key.size());
  for (simdjson::dom::key_value_pair kv : by_key) {
    int64_t step;
    if (!decimal_step(kv.key, step))
      throw BadInput(file, name + ".values." + input_excerpt(std::string(kv.key)),
                     "a value under a decimal step key, not '" + input_excerpt(std::string(kv.key)) + "'");
    steps.emplace_back(step, kv);
  }
  auto by_step = [](const auto& a, const auto& b) { return a.first < b.first; };
  if (!std::is_sorted(steps.begin(), steps.end(), by_step)) std::stable_sort(steps.begin(), steps.end(), by_step);
  for (size_t k = 0; k < steps.size(); ++k) {
    std::string_view key = steps[k].second.key;
    if (k > 0 && steps[k].first == steps[k - 1].first)
      throw BadInput(file, name + ".values." + input_excerpt(std::string(key)),
                     "one value for step " + std::to_string(steps[k].first) + " (it is also '" +
                         input_excerpt(std::string(steps[k - 1].second.key)) + "')");
    add(steps[k].first, steps[k].second.value, [&] { return name + ".values." + input_excerpt(std::string(key)); });
  }
}

// A Megatron metric block's fields besides its values.
struct MegatronBlock {
  int64_t start = 0, end = -1, interval = 1;
  bool have_start = false;       ///< start_step given: the first value must be at it
  bool full = false;             ///< "value_precision": "full"
  simdjson::dom::element values;
};

// Reads metric `name`'s block fields; exit 2 naming a field of another
// type, an unknown field, missing values or end_step before start_step.
MegatronBlock megatron_block_fields(simdjson::dom::element block, const std::string& name, const std::string& file) {
  simdjson::dom::object m;
  if (block.get_object().get(m) != simdjson::SUCCESS)
    throw BadInput(file, name, std::string("an object with \"values\", got ") + json_type_name(block));
  MegatronBlock f;
  bool have_values = false;
  for (simdjson::dom::key_value_pair kv : m) {
    std::string path = name + "." + input_excerpt(std::string(kv.key));
    if (kv.key == "start_step") f.start = integer_at(kv.value, file, path, 0, int64_t{1} << 52), f.have_start = true;
    else if (kv.key == "end_step") f.end = integer_at(kv.value, file, path, 0, int64_t{1} << 52);
    else if (kv.key == "step_interval") f.interval = integer_at(kv.value, file, path, 1, int64_t{1} << 40);
    else if (kv.key == "values") f.values = kv.value, have_values = true;
    else if (kv.key == "value_precision") {
      std::string_view p;
      if (kv.value.get_string().get(p) != simdjson::SUCCESS || (p != "full" && p != "rounded"))
        throw BadInput(file, path, "one of \"full\", \"rounded\"");
      f.full = p == "full";
    } else {
      throw BadInput(file, path, "one of the keys start_step, end_step, step_interval, values, value_precision "
                                 "(unknown field)");
    }
  }
  if (!have_values) throw BadInput(file, name + ".values", "a value (the field is missing)");
  if (f.end >= 0 && f.end < f.start)
    throw BadInput(file, name + ".end_step", "a step at or after start_step " + std::to_string(f.start));
  return f;
}

// After a block's values: at least one was logged (`n`; `not_logged`
// "nan" steps aside), and they reach end_step: values that stop a whole
// interval short of it are a golden cut short (end_step may be the last
// step logged or one interval past it). `last`: the last step read.
void check_block_end(const MegatronBlock& f, const std::string& name, const std::string& file, uint64_t n,
                     uint64_t not_logged, int64_t last) {
  if (n == 0)
    throw BadInput(file, name + ".values",
                   not_logged > 0 ? "at least one logged value; every step of the block is \"nan\" (not logged)"
                                  : "at least one value");
  if (f.end >= 0 && last >= 0 && last + f.interval < f.end)
    throw BadInput(file, name + ".values",
                   "values up to end_step " + std::to_string(f.end) + " (every " + std::to_string(f.interval) +
                       " step(s) from start_step " + std::to_string(f.start) + "); they stop at step " +
                       std::to_string(last));
}

// One Megatron metric block into builder `b`. Returns whether it says
// "value_precision": "full".
bool read_megatron_block(simdjson::dom::element block, const std::string& name, const std::string& file, SeriesBuilder& b) {
  const MegatronBlock f = megatron_block_fields(block, name, file);
  const int64_t start = f.start, end = f.end, interval = f.interval;
  const bool have_start = f.have_start;
  const simdjson::dom::element values = f.values;
  b.allow_gaps();  // the grid is checked here; "nan" steps are left out
  uint64_t n = 0, not_logged = 0;
  int64_t last = -1;
  // `path()` names the value, built only for a message: a string per value
  // was a tenth of the reader's time on a million steps. Megatron-LM writes
  // every step_interval-th step from start_step ("nan" where none was
  // logged): a step missing or off that grid is a golden cut or edited.
  auto add = [&](int64_t step, simdjson::dom::element v, const auto& path) {
    if (last < 0 && have_start && step != start)
      throw BadInput(file, path(), "the first value at start_step " + std::to_string(start) +
                                       " (Megatron-LM writes every step from start_step, \"nan\" where none was "
                                       "logged), got step " + std::to_string(step));
    if (last >= 0 && step != last + interval)
      throw BadInput(file, path(), "step " + std::to_string(last + interval) + " next (every " +
                                       std::to_string(interval) + " step(s) from start_step " + std::to_string(start) +
                                       ", \"nan\" where none was logged), got step " + std::to_string(step));
    last = step;
    double x;
    if (!metric_value(v, x)) throw BadInput(file, path(), "a number or \"nan\"");
    if (end >= 0 && step > end) throw BadInput(file, path(), "a step at most end_step " + std::to_string(end));
    if (step < start) throw BadInput(file, path(), "a step at least start_step " + std::to_string(start));
    // "nan" is Megatron-LM's "not logged at this step" (a resumed run's
    // _2nd file before its resume): an absent step, not a value.
    std::string_view text;
    if (v.get_string().get(text) == simdjson::SUCCESS && (text == "nan" || text == "NaN")) {
      b.skip(step);
      ++not_logged;
      return;
    }
    b.add(step, x, Series::Dtype::kFloat64, ++n);
  };
  simdjson::dom::array list;
  simdjson::dom::object by_key;
  if (values.get_array().get(list) == simdjson::SUCCESS) {  // older goldens: a list from start_step by step_interval
    b.reserve(b.size() + list.size());
    int64_t k = 0;
    for (simdjson::dom::element v : list) {
      auto path = [&] { return name + ".values[" + std::to_string(k) + "]"; };
      if (k > ((int64_t{1} << 52) - start) / interval)  // start + k * interval past 2^52, before it overflows
        throw BadInput(file, path(), "a step below 2^52 (start_step + index * step_interval)");
      add(start + k * interval, v, path);
      ++k;
    }
  } else if (values.get_object().get(by_key) == simdjson::SUCCESS) {
    b.reserve(b.size() + by_key.size());
    // Steps as numbers, in order: "10" after "9", not after "1". Megatron
    // writes them in that order: read as they come, without a copy.
    bool increasing = true;
    int64_t previous = -1;
    for (simdjson::dom::key_value_pair kv : by_key) {
      int64_t step;
      if (!decimal_step(kv.key, step) || step <= previous) {
        increasing = false;
        break;
      }
      previous = step;
    }
    if (increasing) {
      for (simdjson::dom::key_value_pair kv : by_key) {
        int64_t step = 0;
        decimal_step(kv.key, step);
        add(step, kv.value, [&] { return name + ".values." + input_excerpt(std::string(kv.key)); });
      }
    } else {
      add_sorted_by_step(by_key, name, file, add);
    }
  } else {
    throw BadInput(file, name + ".values", std::string("an object of step keys or a list, got ") + json_type_name(values));
  }
  check_block_end(f, name, file, n, not_logged, last);
  return f.full;
}

}  // namespace

std::map<std::string, Series> read_megatron_metrics(const MetricsSpec& spec) {
  JsonDocument doc;
  simdjson::dom::object root;
  if (doc.parse_file(spec.path).get_object().get(root) != simdjson::SUCCESS)
    throw BadInput(spec.path, "(top level)", "an object");
  IngestSources sources("value");
  uint32_t file = sources.add(spec.path);
  SeriesSet set(spec.series, "metric", sources);
  set.begin_file(file);
  std::set<std::string> full;  // metrics whose block says "value_precision": "full"
  for (simdjson::dom::key_value_pair kv : root) {
    std::string name(kv.key);
    int i = set.find(name);
    if (i < 0) {
      set.note_unrequested(name);
      continue;
    }
    if (read_megatron_block(kv.value, name, spec.path, set.at(static_cast<size_t>(i)))) full.insert(name);
  }
  std::map<std::string, Series> out = set.finish(spec.path, "among the file's metrics");
  // Megatron's legacy goldens hold 5 decimals unless the block says
  // "value_precision": "full": those are never marked rounded.
  for (auto& [name, s] : out)
    s.rounded = full.count(spec.series.at(name)) ? 0 : decimal_grid(s.values, s.dtype == Series::Dtype::kFloat32);
  return out;
}

std::map<std::string, Series> read_torchtitan_metrics(const MetricsSpec& spec) {
  if (spec.series.size() != 1)
    throw BadUsage("torchtitan: a loss file holds one series; give one --series NAME=TAG (the TAG is not read)");
  IngestSources sources("line");
  uint32_t file = sources.add(spec.path);
  SeriesBuilder b("the loss", sources);
  b.begin_file(file);
  LineReader lines(spec.path);
  lines.require_final_newline();  // a cut value would parse
  std::string_view line;
  // Byte loops, not find_first_of/not_of: those search their set with a
  // memchr per byte, most of the reader's time on a million lines.
  while (lines.next(line)) {
    const size_t size = line.size();
    auto blank = [&](size_t i, bool cr) { return line[i] == ' ' || line[i] == '\t' || (cr && line[i] == '\r'); };
    auto skip = [&](size_t i, bool cr) {  // past spaces, tabs (and CRs)
      while (i < size && blank(i, cr)) ++i;
      return i;
    };
    auto field_end = [&](size_t i, bool cr) {
      while (i < size && !blank(i, cr)) ++i;
      return i;
    };
    size_t a = skip(0, false);
    if (skip(a, true) == size) continue;  // a blank line
    uint64_t n = lines.line_number();
    if (n == kExtrapolateAfterLines) b.extrapolate(lines.offset(), lines.file_bytes());
    size_t gap = field_end(a, false), c = skip(gap, false), e = field_end(c, true);
    int64_t step;
    double value;
    if (c == size || skip(e, true) != size)
      throw BadInput(spec.path, "line " + std::to_string(n), "\"<step> <loss>\" (two fields)");
    if (!decimal_step(line.substr(a, gap - a), step))
      throw BadInput(spec.path, "line " + std::to_string(n), "a decimal step first, got '" + std::string(line.substr(a, gap - a)) + "'");
    std::string_view v = line.substr(c, e - c);
    if (!float_repr(v, value))
      throw BadInput(spec.path, "line " + std::to_string(n), "a number after the step, got '" + std::string(v) + "'");
    b.add(step, value, Series::Dtype::kFloat64, n);
  }
  if (b.size() == 0) throw BadInput(spec.path, "", "at least one \"<step> <loss>\" line");
  return {{spec.series.begin()->first, b.finish()}};
}

std::map<std::string, Series> read_hf_trainer_metrics(const MetricsSpec& spec) {
  JsonDocument doc;
  simdjson::dom::object root;
  if (doc.parse_file(spec.path).get_object().get(root) != simdjson::SUCCESS)
    throw BadInput(spec.path, "(top level)", "an object");
  simdjson::dom::element history_element;
  if (root["log_history"].get(history_element) != simdjson::SUCCESS)
    throw BadInput(spec.path, "(top level)", "a \"log_history\" list (Hugging Face Trainer's trainer_state.json)");
  simdjson::dom::array history;
  if (history_element.get_array().get(history) != simdjson::SUCCESS)
    throw BadInput(spec.path, "log_history", std::string("an array, got ") + json_type_name(history_element));
  IngestSources sources("log_history entry");
  uint32_t file = sources.add(spec.path);
  SeriesSet set(spec.series, "key", sources);
  set.begin_file(file);
  // Each requested key is logged once per entry at most: room for that
  // (pages never written are never touched).
  for (size_t i = 0; i < set.size(); ++i) set.reserve(i, history.size());
  std::vector<std::pair<int, simdjson::dom::element>> logged;
  size_t k = 0;
  for (simdjson::dom::element entry_element : history) {
    auto path = [&k] { return "log_history[" + std::to_string(k) + "]"; };  // for a message only
    simdjson::dom::object entry;
    if (entry_element.get_object().get(entry) != simdjson::SUCCESS)
      throw BadInput(spec.path, path(), std::string("an object, got ") + json_type_name(entry_element));
    logged.clear();
    bool have_step = false;
    simdjson::dom::element step_element;
    for (simdjson::dom::key_value_pair kv : entry) {
      if (kv.key == "step") {
        step_element = kv.value;
        have_step = true;
      } else if (int i = set.find(kv.key); i >= 0) {
        logged.emplace_back(i, kv.value);
      } else {
        set.note_unrequested(kv.key);
      }
    }
    if (!logged.empty()) {
      if (!have_step) throw BadInput(spec.path, path(), "a \"step\" in an entry that logs a requested key");
      int64_t step;  // an integer in range as it comes; anything else through integer_at (a float step, a refusal)
      if (step_element.get_int64().get(step) != simdjson::SUCCESS || step < 0 || step > (int64_t{1} << 52))
        step = integer_at(step_element, spec.path, path() + ".step", 0, int64_t{1} << 52);
      for (const auto& [i, value] : logged) {
        double x;
        if (!metric_value(value, x)) throw BadInput(spec.path, path() + "." + set.key(static_cast<size_t>(i)), "a number or \"nan\"");
        set.at(static_cast<size_t>(i)).add(step, x, Series::Dtype::kFloat64, k);
      }
    }
    ++k;
  }
  return set.finish(spec.path, "in log_history");
}

}  // namespace lockstep
