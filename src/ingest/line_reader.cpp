#include "ingest/line_reader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "core/error.h"

namespace lockstep {

namespace {
constexpr size_t kChunk = size_t{1} << 20;
}

LineReader::LineReader(std::string path, size_t max_line_bytes) : path_(std::move(path)), max_line_(max_line_bytes) {
  // O_NONBLOCK: a FIFO without a writer must not hang the open (it is refused below).
  fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd_ < 0) throw io_error(path_, "open the log", errno);
  struct stat st {};
  if (::fstat(fd_, &st) != 0) {
    int e = errno;
    ::close(fd_);
    throw io_error(path_, "read the log", e);
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd_);
    throw BadInput(path_, "", "a regular file");
  }
  if (st.st_size == 0) {
    ::close(fd_);
    throw BadInput(path_, "", "a non-empty log (the file has 0 bytes)");
  }
  file_bytes_ = static_cast<uint64_t>(st.st_size);
  buf_.resize(std::min<size_t>(kChunk, static_cast<size_t>(st.st_size) + 1));
}

LineReader::~LineReader() {
  if (fd_ >= 0) ::close(fd_);
}

bool LineReader::read_more() {
  if (eof_) return false;
  if (pos_ > 0) {  // keep the partial line at the front
    std::memmove(buf_.data(), buf_.data() + pos_, end_ - pos_);
    end_ -= pos_;
    pos_ = 0;
  }
  if (end_ == buf_.size()) buf_.resize(std::min(buf_.size() * 2, max_line_ + 2));
  while (true) {
    ssize_t got = ::read(fd_, buf_.data() + end_, buf_.size() - end_);
    if (got < 0) {
      if (errno == EINTR) continue;
      throw io_error(path_, "read the log", errno);
    }
    if (got == 0) {
      eof_ = true;
      return false;
    }
    end_ += static_cast<size_t>(got);
    read_ += static_cast<uint64_t>(got);
    return true;
  }
}

bool LineReader::next(std::string_view& line) {
  size_t scanned = 0;  // bytes of the current line already searched for '\n'
  while (true) {
    const char* start = buf_.data() + pos_;
    const char* nl = static_cast<const char*>(std::memchr(start + scanned, '\n', end_ - pos_ - scanned));
    size_t length = nl ? static_cast<size_t>(nl - start) : end_ - pos_;
    // Lines ended by "\r" alone (classic Mac OS) read as one long line:
    // said as such where that line is refused.
    auto cr_only = [&] {
      const void* cr = std::memchr(start, '\r', length);
      if (cr && static_cast<const char*>(cr) + 1 < start + length)
        throw BadInput(path_, "line " + std::to_string(line_ + 1),
                       "lines ending in \"\\n\" or \"\\r\\n\", got \"\\r\" alone (a file with classic Mac OS line "
                       "endings?)");
    };
    if (length > max_line_) {
      cr_only();
      throw BadInput(path_, "line " + std::to_string(line_ + 1),
                     "a line of at most " + std::to_string(max_line_) + " bytes (the file is not a line-based log)");
    }
    if (nl || (eof_ && end_ > pos_)) {
      line = std::string_view(start, length);
      // A '\r' inside the first line (not its "\r\n" ending) is a file of
      // "\r" line endings read as one line: said so, not left to the
      // parser. Only there: the lines after it are not scanned twice.
      if (line_ == 0 && length > 1) {
        size_t body = line.back() == '\r' ? length - 1 : length;
        if (std::memchr(start, '\r', body)) {
          length = body;
          cr_only();
        }
      }
      if (!nl && final_newline_ && !is_blank_line(line.substr(0, line.find_last_not_of('\r') + 1))) {
        cr_only();
        throw BadInput(path_, "line " + std::to_string(line_ + 1),
                       "a line ending in a newline; the file ends mid-line (cut short while being written, or "
                       "copied in part), so its last value cannot be trusted");
      }
      pos_ += nl ? length + 1 : length;
      ++line_;
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      if (line_ == 1 && line.substr(0, 3) == "\xEF\xBB\xBF") line.remove_prefix(3);
      return true;
    }
    if (eof_) return false;
    scanned = length;
    if (!read_more() && end_ == pos_) return false;
  }
}

}  // namespace lockstep
