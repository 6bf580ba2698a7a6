#include "ingest/tfrecord.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "core/error.h"
#include "ingest/crc32c.h"

namespace lockstep {

namespace {

constexpr size_t kChunk = size_t{4} << 20;  // 4 MiB reads

uint64_t load_u64(const char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}

uint32_t load_u32(const char* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}

void store_u32(char* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<char>((v >> (8 * i)) & 0xff);
}

std::string hex32(uint32_t v) {
  static const char* digits = "0123456789abcdef";
  std::string s = "0x";
  for (int i = 7; i >= 0; --i) s += digits[(v >> (4 * i)) & 15];
  return s;
}

std::string at_byte(uint64_t offset) { return "byte " + std::to_string(offset); }

}  // namespace

TfRecordReader::TfRecordReader(std::string path) : path_(std::move(path)) {
  // O_NONBLOCK: a FIFO without a writer must not hang the open (it is refused below).
  fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd_ < 0) throw io_error(path_, "open the event file", errno);
  struct stat st {};
  if (::fstat(fd_, &st) != 0) {
    int e = errno;
    ::close(fd_);
    throw io_error(path_, "read the event file", e);
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd_);
    throw BadInput(path_, "", "a regular file (a TensorBoard event file)");
  }
  size_ = static_cast<uint64_t>(st.st_size);
  if (size_ == 0) {
    ::close(fd_);
    throw BadInput(path_, "", "a TensorBoard event file with at least one record (the file is empty)");
  }
  buf_.resize(static_cast<size_t>(std::min<uint64_t>(size_, kChunk)));
}

TfRecordReader::~TfRecordReader() {
  if (fd_ >= 0) ::close(fd_);
}

bool TfRecordReader::fill(size_t n) {
  if (end_ - pos_ >= n) return true;
  if (static_cast<uint64_t>(end_ - pos_) + (size_ - read_) < n) return false;
  // Move the unread tail to the front, grow for a record larger than the
  // buffer (n never exceeds what is left of the file), then read.
  std::memmove(buf_.data(), buf_.data() + pos_, end_ - pos_);
  base_ += pos_;
  end_ -= pos_;
  pos_ = 0;
  if (buf_.size() < n) buf_.resize(n);
  while (end_ < n) {  // one read usually fills the buffer
    size_t want = static_cast<size_t>(std::min<uint64_t>(buf_.size() - end_, size_ - read_));
    ssize_t got = want == 0 ? 0 : ::read(fd_, buf_.data() + end_, want);
    if (got < 0) {
      if (errno == EINTR) continue;
      throw io_error(path_, "read the event file", errno);
    }
    if (got == 0) {  // shrank since it was opened: what is left is all there is
      size_ = read_;
      break;
    }
    end_ += static_cast<size_t>(got);
    read_ += static_cast<uint64_t>(got);
  }
  return end_ - pos_ >= n;
}

bool TfRecordReader::frame(TfRecord& record) {
  if (!fill(1)) return false;  // a clean end: no byte after the last record
  uint64_t offset = base_ + pos_;
  if (!fill(12))
    throw BadInput(path_, at_byte(offset),
                   "a complete record header (12 bytes); the file ends after " + std::to_string(size_ - offset) +
                       " bytes (truncated: a writer stopped mid-record)");
  const char* h = buf_.data() + pos_;
  uint32_t stored = load_u32(h + 8), computed = masked_crc32c(h, 8);
  if (stored != computed)
    throw BadInput(path_, at_byte(offset),
                   "a record whose length CRC matches (stored " + hex32(stored) + ", computed " + hex32(computed) +
                       "); the file is corrupt or not a TFRecord file");
  uint64_t length = load_u64(h);
  uint64_t left = size_ - offset - 12;  // after the header
  if (length > left || left - length < 4)
    throw BadInput(path_, at_byte(offset),
                   "a complete record of " + std::to_string(length) + " data bytes and its CRC; the file ends " +
                       std::to_string(left) + " bytes after the header (truncated: a writer stopped mid-record)");
  if (length > kMaxTfRecordBytes)
    throw BadInput(path_, at_byte(offset),
                   "a record of at most " + std::to_string(kMaxTfRecordBytes) + " bytes; its length says " +
                       std::to_string(length));
  size_t total = 12 + static_cast<size_t>(length) + 4;
  if (!fill(total))  // the file shrank while it was read
    throw BadInput(path_, at_byte(offset), "a complete record; the file ends inside it (truncated)");
  record.offset = offset;
  record.data = buf_.data() + pos_ + 12;
  record.size = static_cast<size_t>(length);
  pos_ += total;
  return true;
}

bool TfRecordReader::next(TfRecord& record) {
  if (!frame(record)) return false;
  check_data_crc(record);
  return true;
}

bool TfRecordReader::next_batch(std::vector<TfRecord>& records, size_t max_records) {
  records.clear();
  TfRecord record;
  if (!frame(record)) return false;  // reads more when needed; throws at the first bad byte
  records.push_back(record);
  // Then every record that lies whole in the buffer, without reading: the
  // records must stay where they are until the next call. A record that
  // is incomplete or wrong here is framed (and reported) by the next call.
  while (records.size() < max_records && end_ - pos_ >= 12) {
    const char* h = buf_.data() + pos_;
    if (load_u32(h + 8) != masked_crc32c(h, 8)) break;
    uint64_t length = load_u64(h);
    if (length > kMaxTfRecordBytes || length + 16 > end_ - pos_) break;
    records.push_back({base_ + pos_, h + 12, static_cast<size_t>(length)});
    pos_ += 16 + static_cast<size_t>(length);
  }
  return true;
}

void TfRecordReader::check_data_crc(const TfRecord& record) const {
  uint32_t stored = load_u32(record.data + record.size);
  uint32_t computed = masked_crc32c(record.data, record.size);
  if (stored != computed)
    throw BadInput(path_, at_byte(record.offset),
                   "a record whose data CRC matches (stored " + hex32(stored) + ", computed " + hex32(computed) +
                       ", " + std::to_string(record.size) + " data bytes); the file is corrupt");
}

void append_tfrecord(std::string& out, std::string_view data) {
  char header[12];
  uint64_t n = data.size();
  for (int i = 0; i < 8; ++i) header[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  store_u32(header + 8, masked_crc32c(header, 8));
  char footer[4];
  store_u32(footer, masked_crc32c(data.data(), data.size()));
  out.append(header, 12);
  out.append(data.data(), data.size());
  out.append(footer, 4);
}

}  // namespace lockstep
