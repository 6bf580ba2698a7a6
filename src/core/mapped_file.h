// A regular file mapped read-only into memory, followed by zeros that
// simdjson may read past the end of a document: a long record is parsed
// straight from the page cache, with neither a copy nor fresh memory (a
// 154 MB record read into a string costs 154 MB of zeroed pages and their
// page faults, which some VMs charge dearly for).
//
//   MappedFile file("runs/run.json");        // exit 2 naming the file if it cannot be read
//   std::string_view text = file.text();
//   parse(text.data(), text.size(), file.capacity());   // capacity() >= size + 64
//
// A file that another process shortens while it is mapped would make a
// read of the pages it lost raise SIGBUS. While a MappedFile lives, a
// SIGBUS inside its pages ends the process with exit 2 and
// "lockstep: error: <path>: changed while being read (...)", never a crash.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace lockstep {

/// A read-only view of a whole regular file of at most kMaxReadBytes
/// (core/atomic_file.h). Not copyable; the view lives as long as this.
class MappedFile {
 public:
  /// Maps `path`. Throws what read_file() throws: exit 2 naming the file
  /// for a folder, something other than a regular file, a file larger than
  /// kMaxReadBytes, or one that cannot be opened or mapped.
  explicit MappedFile(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  /// The file's bytes.
  std::string_view text() const { return {data_, size_}; }
  /// Bytes readable from text().data(): the size plus at least 64 zeros.
  size_t capacity() const { return mapped_; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  const char* data_ = nullptr;
  size_t size_ = 0;
  size_t mapped_ = 0;
  int guard_ = -1;  // its slot in the SIGBUS guard's table
};

}  // namespace lockstep
