// TFRecord framing, the container of TensorBoard event files: each record
// is a uint64 little-endian length, the masked CRC-32C of those 8 bytes,
// the data, and the masked CRC-32C of the data (crc32c.h).
//
//   TfRecordReader reader("run/events.out.tfevents.1700000000.host");
//   TfRecord r;
//   while (reader.next(r)) parse(r.data, r.size);   // exit 2 on a bad byte
//
//   std::string file;
//   append_tfrecord(file, event.SerializeAsString()); // writers: tests, bench
//
// The file is read in large chunks; memory stays bounded by the largest
// record, never by a length field the file claims.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace lockstep {

/// One record: its data (valid until the next call to next() or
/// next_batch(); its data CRC follows it) and the byte offset of its header
/// in the file.
struct TfRecord {
  uint64_t offset = 0;
  const char* data = nullptr;
  size_t size = 0;
};

/// Reads the records of one TFRecord file in order, checking both CRCs.
class TfRecordReader {
 public:
  /// Opens `path`; throws io_error (exit 2 or 3) when it cannot be read and
  /// exit-2 Error when it is empty.
  explicit TfRecordReader(std::string path);
  ~TfRecordReader();
  TfRecordReader(const TfRecordReader&) = delete;
  TfRecordReader& operator=(const TfRecordReader&) = delete;

  /// The next record, or false at the end of the file. Throws exit-2 Error
  /// naming the file and the record's byte offset for a length or data CRC
  /// that does not match, and for a record cut short by the end of the
  /// file (a header or data that does not fit in what is left).
  bool next(TfRecord& record);

  /// The next records, for parsing them in parallel: the record next() would
  /// return, then every further one (up to `max_records`) already in the
  /// buffer. Their length CRCs are checked, their data CRCs are not: call
  /// check_data_crc on each (from any thread). Valid until the next call;
  /// false at the end of the file. Throws as next() for the first record;
  /// a problem after it ends the batch, and the next call reports it.
  bool next_batch(std::vector<TfRecord>& records, size_t max_records);

  /// Throws exit-2 Error naming the file and the record's offset when the
  /// data CRC stored after `record` (one of this reader's) does not match.
  void check_data_crc(const TfRecord& record) const;

  const std::string& path() const { return path_; }
  /// The file's size when it was opened.
  uint64_t size() const { return size_; }

 private:
  /// Makes at least `n` bytes available from `pos_`; false when the file
  /// has fewer left.
  bool fill(size_t n);
  /// The next record with its length CRC checked (not its data CRC); false
  /// at a clean end.
  bool frame(TfRecord& record);

  std::string path_;
  int fd_ = -1;
  uint64_t size_ = 0;       // bytes in the file
  uint64_t read_ = 0;       // bytes read into the buffer so far
  std::vector<char> buf_;
  size_t pos_ = 0, end_ = 0;  // unread bytes: buf_[pos_, end_)
  uint64_t base_ = 0;         // file offset of buf_[0]
};

/// Largest record data the reader accepts (1 GiB): a longer length field
/// is refused as corrupt before anything is allocated.
constexpr uint64_t kMaxTfRecordBytes = uint64_t{1} << 30;

/// Appends `data` framed as one TFRecord (length, masked CRCs) to `out`.
void append_tfrecord(std::string& out, std::string_view data);

}  // namespace lockstep
