#include "data/csv_source.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <vector>

#include "core/atomic_file.h"
#include "core/error.h"
#include "core/hash.h"

namespace lockstep {

namespace {

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


// Parses decoded bytes line by line as they arrive; holds at most one
// partial line (at most max_line_bytes) besides the table itself.
class CsvParser {
 public:
  CsvParser(const CsvOptions& o, CsvTable& t) : o_(o), t_(t) {}

  void feed(const char* data, size_t n) {
    decoded_ += n;
    if (decoded_ > o_.max_bytes)
      throw BadInput(o_.path, "", "at most " + std::to_string(o_.max_bytes) +
                                      " bytes of data after decompression (data.max_bytes; raise it in the smoke "
                                      "config for a larger file)");
    const char* p = data;
    const char* end = data + n;
    while (p < end) {
      const char* nl = static_cast<const char*>(std::memchr(p, '\n', static_cast<size_t>(end - p)));
      size_t take = static_cast<size_t>((nl ? nl : end) - p);
      if (carry_.size() + take > o_.max_line_bytes)
        throw BadInput(o_.path, "line " + std::to_string(line_no_ + 1),
                       "at most " + std::to_string(o_.max_line_bytes) +
                           " bytes per line (data.max_line_bytes; raise it in the smoke config for wider rows)");
      if (!nl) {
        carry_.append(p, take);
        return;
      }
      if (carry_.empty()) {
        line(std::string_view(p, take));
      } else {
        carry_.append(p, take);
        line(carry_);
        carry_.clear();
      }
      p = nl + 1;
    }
  }

  void finish() {
    if (!carry_.empty()) line(carry_);
    if (t_.rows == 0) throw BadInput(o_.path, "", "at least one data row (the dataset is empty)");
    t_.features = columns_ - 1;
  }

 private:
  void line(std::string_view line) {
    ++line_no_;
    uint64_t start = line_start_;
    line_start_ += line.size() + 1;
    // Classic Mac OS line endings (CR alone) would read as one long line;
    // a CR is allowed only as the end of a CRLF.
    if (size_t cr = line.find('\r'); cr != std::string_view::npos && cr + 1 < line.size())
      throw BadInput(o_.path, "byte " + std::to_string(start + cr),
                     "lines ending in LF or CRLF; this file ends its lines with CR alone (classic Mac OS): "
                     "convert it, e.g. `tr '\\r' '\\n'`");
    // A NUL would cut a cell short for one reader and not another.
    if (size_t nul = line.find('\0'); nul != std::string_view::npos)
      throw BadInput(o_.path, "byte " + std::to_string(start + nul),
                     "text without NUL bytes (the file holds binary data, or was damaged)");
    if (line_no_ <= o_.skip_rows) return;
    if (trim(line).empty()) return;
    std::string where = "line " + std::to_string(line_no_);
    auto cells = split(line);
    if (columns_ < 0) {
      columns_ = static_cast<int64_t>(cells.size());
      if (columns_ < 2) throw BadInput(o_.path, where, "at least 2 columns (features and a label)");
    } else if (static_cast<int64_t>(cells.size()) != columns_) {
      throw BadInput(o_.path, where,
                     std::to_string(columns_) + " columns like the first data row, got " + std::to_string(cells.size()));
    }
    int64_t label_col = o_.label_column < 0 ? columns_ + o_.label_column : o_.label_column;
    if (label_col < 0 || label_col >= columns_)
      throw BadInput(o_.path, where, "a label column within the " + std::to_string(columns_) + " columns");
    for (int64_t c = 0; c < columns_; ++c) {
      std::string_view cell = trim(cells[static_cast<size_t>(c)]);
      double v = 0;
      auto res = std::from_chars(cell.data(), cell.data() + cell.size(), v);
      if (res.ec != std::errc() || res.ptr != cell.data() + cell.size() || !std::isfinite(v))
        throw BadInput(o_.path, where + ", column " + std::to_string(c + 1),
                       "a finite number, got '" + std::string(cell.substr(0, 64)) + "'");
      if (c == label_col) {
        if (v < 0 || v != std::floor(v) || v > 1e9)
          throw BadInput(o_.path, where + ", column " + std::to_string(c + 1),
                         "a non-negative integer class label, got '" + std::string(cell.substr(0, 64)) + "'");
        t_.labels.push_back(static_cast<int64_t>(v));
        t_.num_classes = std::max(t_.num_classes, static_cast<int64_t>(v) + 1);
      } else {
        float f = static_cast<float>(v * o_.scale);
        if (!std::isfinite(f))
          throw BadInput(o_.path, where + ", column " + std::to_string(c + 1),
                         "a value finite in float32 after scaling, got '" + std::string(cell.substr(0, 64)) + "'");
        t_.values.push_back(f);
      }
    }
    ++t_.rows;
  }

  const CsvOptions& o_;
  CsvTable& t_;
  std::string carry_;
  uint64_t decoded_ = 0;
  int64_t line_no_ = 0;
  int64_t columns_ = -1;
  uint64_t line_start_ = 0;  // decoded offset of the next line
};

// Inflates gzip members (RFC 1952 allows several, as `gzip -d` reads them)
// piece by piece into the parser; trailing bytes that are not a gzip
// member are an error, and so is a stream that ends early.
class Gunzip {
 public:
  Gunzip(const std::string& path, uint64_t file_size) : path_(path), file_size_(file_size) {
    if (inflateInit2(&zs_, 16 + MAX_WBITS) != Z_OK) throw BadUsage(path + ": cannot initialise zlib");
  }
  ~Gunzip() { inflateEnd(&zs_); }

  void feed(const char* data, size_t n, uint64_t offset, CsvParser& out) {
    zs_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data));
    zs_.avail_in = static_cast<uInt>(n);
    char buf[1 << 16];
    while (zs_.avail_in > 0) {
      if (ended_) {  // another member must follow: its magic bytes 1f 8b
        uint64_t at = offset + (n - zs_.avail_in);
        bool magic = zs_.next_in[0] == 0x1f && (zs_.avail_in < 2 ? at + 1 < file_size_ : zs_.next_in[1] == 0x8b);
        if (!magic)
          throw BadInput(path_, "", "nothing after the last gzip member (found " + std::to_string(file_size_ - at) +
                                        " trailing bytes)");
        inflateReset(&zs_);
        ended_ = false;
      }
      zs_.next_out = reinterpret_cast<Bytef*>(buf);
      zs_.avail_out = sizeof buf;
      int rc = inflate(&zs_, Z_NO_FLUSH);
      if (rc != Z_OK && rc != Z_STREAM_END && rc != Z_BUF_ERROR)
        throw BadInput(path_, "", "a valid gzip stream (" + std::string(zs_.msg ? zs_.msg : "corrupt or truncated") + ")");
      out.feed(buf, sizeof buf - zs_.avail_out);
      if (rc == Z_STREAM_END) ended_ = true;
      if (rc == Z_BUF_ERROR && zs_.avail_out != 0) break;  // needs the next piece
    }
    // Output still buffered in zlib after the input is used up.
    while (!ended_) {
      zs_.next_out = reinterpret_cast<Bytef*>(buf);
      zs_.avail_out = sizeof buf;
      int rc = inflate(&zs_, Z_NO_FLUSH);
      size_t got = sizeof buf - zs_.avail_out;
      if (got) out.feed(buf, got);
      if (rc == Z_STREAM_END) ended_ = true;
      if (rc != Z_OK || got == 0) break;
    }
  }

  void finish() {
    if (!ended_) throw BadInput(path_, "", "a complete gzip stream (the file is truncated)");
  }

 private:
  std::string path_;
  uint64_t file_size_;
  z_stream zs_{};
  bool ended_ = false;
};

}  // namespace

CsvTable read_csv(const CsvOptions& o) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_directory(o.path, ec)) throw BadUsage(o.path + ": cannot read: is a directory");
  if (fs::exists(o.path, ec) && !fs::is_regular_file(o.path, ec))
    throw BadUsage(o.path + ": cannot read: not a regular file");
  std::ifstream in(o.path, std::ios::binary);
  if (!in) throw BadUsage(o.path + ": cannot read: " + std::strerror(errno));
  uint64_t size = fs::file_size(o.path, ec);

  // One pass over the stored bytes: hash them, inflate if gzip (RFC 1952
  // magic 1f 8b), parse as they arrive. Memory: the table and a piece.
  CsvTable t;
  CsvParser parser(o, t);
  Xxh3Stream stored;
  std::unique_ptr<Gunzip> gz;
  std::vector<char> piece(1 << 20);
  uint64_t offset = 0;
  while (in) {
    in.read(piece.data(), static_cast<std::streamsize>(piece.size()));
    size_t n = static_cast<size_t>(in.gcount());
    if (n == 0) break;
    if (offset == 0 && n >= 2 && static_cast<unsigned char>(piece[0]) == 0x1f &&
        static_cast<unsigned char>(piece[1]) == 0x8b)
      gz = std::make_unique<Gunzip>(o.path, size);
    stored.update(piece.data(), n);
    if (gz) gz->feed(piece.data(), n, offset, parser);
    else parser.feed(piece.data(), n);
    offset += n;
  }
  if (in.bad()) throw BadUsage(o.path + ": cannot read: " + std::strerror(errno));
  if (gz) gz->finish();
  parser.finish();
  t.bytes = offset;
  t.file_xxh3 = stored.hex();
  return t;
}

}  // namespace lockstep
