// Reads a text log line by line in large chunks, with a cap on the length
// of one line, for the JSONL, MLLOG, CSV and probe readers.
//
//   LineReader lines("logs/metrics.jsonl");     // exit 2 if empty, io_error if unreadable
//   std::string_view line;
//   while (lines.next(line)) use(lines.line_number(), line);
//
// Lines end at "\n"; a "\r" before it and a UTF-8 byte-order mark at the
// start of the file are dropped; a "\r" inside the first line (a file of
// classic Mac OS "\r" endings, read as one line) is exit 2 naming it. Memory stays
// bounded by the cap, whatever the file holds.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace lockstep {

/// Longest line a reader accepts (16 MiB); a longer one is exit 2.
constexpr size_t kMaxLineBytes = size_t{16} << 20;

/// Sequential reader of the lines of one file.
class LineReader {
 public:
  /// Opens `path`; throws io_error (exit 2 or 3) when it cannot be read,
  /// exit-2 Error when it is not a regular file or is empty.
  explicit LineReader(std::string path, size_t max_line_bytes = kMaxLineBytes);
  ~LineReader();
  LineReader(const LineReader&) = delete;
  LineReader& operator=(const LineReader&) = delete;

  /// The next line, without its line end; valid until the next call. False
  /// at the end of the file. Throws exit-2 Error naming the file and the
  /// line when a line is longer than the cap.
  bool next(std::string_view& line);

  /// From now on a last line that does not end in "\n" (and is not blank)
  /// is exit 2 naming it: for logs whose lines a cut could leave parseable
  /// ("1.125" cut to "1.1": CSV, torchtitan's loss file), where only the
  /// missing newline shows the file was cut short.
  void require_final_newline() { final_newline_ = true; }

  /// 1-based number of the line last returned by next().
  uint64_t line_number() const { return line_; }
  /// Bytes of the file up to the end of the line last returned.
  uint64_t offset() const { return read_ - (end_ - pos_); }
  /// Size of the file when it was opened, in bytes.
  uint64_t file_bytes() const { return file_bytes_; }
  const std::string& path() const { return path_; }

 private:
  /// Reads more bytes after end_; false at the end of the file.
  bool read_more();

  std::string path_;
  size_t max_line_;
  int fd_ = -1;
  bool eof_ = false;
  bool final_newline_ = false;
  std::vector<char> buf_;
  size_t pos_ = 0, end_ = 0;
  uint64_t line_ = 0;
  uint64_t read_ = 0;        // bytes read from the file so far
  uint64_t file_bytes_ = 0;  // its size at open
};

/// True when `line` holds only spaces and tabs (or nothing).
inline bool is_blank_line(std::string_view line) {
  for (char c : line)
    if (c != ' ' && c != '\t') return false;
  return true;
}

}  // namespace lockstep
