#include "data/csv_source.h"

#include <zlib.h>

#include <charconv>
#include <cmath>

#include "core/atomic_file.h"
#include "core/error.h"
#include "core/hash.h"

namespace lockstep {

namespace {

bool is_gzip(const std::string& bytes) {
  return bytes.size() >= 2 && static_cast<unsigned char>(bytes[0]) == 0x1f &&
         static_cast<unsigned char>(bytes[1]) == 0x8b;
}

// Decompresses every gzip member (RFC 1952 allows several, as `gzip -d`
// reads them); trailing bytes that are not a gzip member are an error, and
// so is output beyond kMaxReadBytes (a gzip bomb).
std::string gunzip(const std::string& bytes, const std::string& path) {
  z_stream zs{};
  if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK) throw BadUsage(path + ": cannot initialise zlib");
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
  zs.avail_in = static_cast<uInt>(bytes.size());
  std::string out;
  char buf[1 << 16];
  auto fail = [&](const std::string& what) {
    inflateEnd(&zs);
    return BadInput(path, "", what);
  };
  while (true) {
    zs.next_out = reinterpret_cast<Bytef*>(buf);
    zs.avail_out = sizeof buf;
    int rc = inflate(&zs, Z_NO_FLUSH);
    if (rc != Z_OK && rc != Z_STREAM_END)
      throw fail("a valid gzip stream (" + std::string(zs.msg ? zs.msg : "corrupt or truncated") + ")");
    out.append(buf, sizeof buf - zs.avail_out);
    if (out.size() > kMaxReadBytes)
      throw fail("at most " + std::to_string(kMaxReadBytes >> 20) + " MiB of decompressed data");
    if (rc == Z_STREAM_END) {
      if (zs.avail_in == 0) break;
      if (zs.avail_in < 2 || zs.next_in[0] != 0x1f || zs.next_in[1] != 0x8b)
        throw fail("nothing after the last gzip member (found " + std::to_string(zs.avail_in) + " trailing bytes)");
      inflateReset(&zs);
      continue;
    }
    if (zs.avail_in == 0 && zs.avail_out != 0) throw fail("a complete gzip stream (the file is truncated)");
  }
  inflateEnd(&zs);
  return out;
}

std::vector<std::string_view> split(std::string_view line) {
  std::vector<std::string_view> cells;
  size_t start = 0;
  while (true) {
    size_t comma = line.find(',', start);
    cells.push_back(line.substr(start, comma == std::string_view::npos ? line.npos : comma - start));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return cells;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

}  // namespace

CsvTable read_csv(const CsvOptions& o) {
  std::string raw = read_file(o.path);
  CsvTable t;
  t.bytes = raw.size();
  t.file_xxh3 = xxh3_128_hex(raw.data(), raw.size());
  std::string text = is_gzip(raw) ? gunzip(raw, o.path) : std::move(raw);

  // Classic Mac OS line endings (CR alone) would read as one long line.
  if (text.find('\n') == std::string::npos && text.find('\r') != std::string::npos)
    throw BadInput(o.path, "byte " + std::to_string(text.find('\r')),
                   "lines ending in LF or CRLF; this file ends its lines with CR alone (classic Mac OS): "
                   "convert it, e.g. `tr '\\r' '\\n'`");
  size_t pos = 0;
  int64_t line_no = 0;
  int64_t columns = -1;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    std::string_view line(text.data() + pos, (nl == std::string::npos ? text.size() : nl) - pos);
    pos = nl == std::string::npos ? text.size() : nl + 1;
    ++line_no;
    if (line_no <= o.skip_rows) continue;
    if (trim(line).empty()) continue;
    std::string where = "line " + std::to_string(line_no);

    auto cells = split(line);
    if (columns < 0) {
      columns = static_cast<int64_t>(cells.size());
      if (columns < 2) throw BadInput(o.path, where, "at least 2 columns (features and a label)");
    } else if (static_cast<int64_t>(cells.size()) != columns) {
      throw BadInput(o.path, where,
                     std::to_string(columns) + " columns like the first data row, got " +
                         std::to_string(cells.size()));
    }
    int64_t label_col = o.label_column < 0 ? columns + o.label_column : o.label_column;
    if (label_col < 0 || label_col >= columns)
      throw BadInput(o.path, where, "a label column within the " + std::to_string(columns) + " columns");

    for (int64_t c = 0; c < columns; ++c) {
      std::string_view cell = trim(cells[static_cast<size_t>(c)]);
      double v = 0;
      auto res = std::from_chars(cell.data(), cell.data() + cell.size(), v);
      if (res.ec != std::errc() || res.ptr != cell.data() + cell.size() || !std::isfinite(v))
        throw BadInput(o.path, where + ", column " + std::to_string(c + 1),
                       "a finite number, got '" + std::string(cell) + "'");
      if (c == label_col) {
        if (v < 0 || v != std::floor(v) || v > 1e9)
          throw BadInput(o.path, where + ", column " + std::to_string(c + 1),
                         "a non-negative integer class label, got '" + std::string(cell) + "'");
        t.labels.push_back(static_cast<int64_t>(v));
        t.num_classes = std::max(t.num_classes, static_cast<int64_t>(v) + 1);
      } else {
        float f = static_cast<float>(v * o.scale);
        if (!std::isfinite(f))
          throw BadInput(o.path, where + ", column " + std::to_string(c + 1),
                         "a value finite in float32 after scaling, got '" + std::string(cell) + "'");
        t.values.push_back(f);
      }
    }
    ++t.rows;
  }
  if (t.rows == 0) throw BadInput(o.path, "", "at least one data row (the dataset is empty)");
  t.features = columns - 1;
  return t;
}

}  // namespace lockstep
