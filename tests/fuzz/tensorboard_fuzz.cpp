// libFuzzer target for the TensorBoard event-file reader
// (ingest/tensorboard.h). Random bytes rarely pass a CRC, so the input is
// mostly records the harness frames itself:
//
//   byte 0   flags: bit 0 raw (the rest is the file as is); bit 1 split the
//            records over two files (a restart); bit 2 cut the last file
//            short by byte 1 % 32 bytes; bit 3 flip bit (byte 1 / 32) of
//            the last file's byte at offset byte 1 * 7
//   byte 1   the cut / flip parameter
//   rest     records, each a 1-byte length then that many bytes of Event
//            protobuf (framed with correct CRCs)
//
//   ci/fuzz.sh            # clang -fsanitize=fuzzer,address,undefined
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>

#include "ingest/tfrecord.h"
#include "ingest_fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const std::string& dir = lockstep_fuzz::scratch_dir("tensorboard-fuzz");
  std::string first = dir + "/events.out.tfevents.1", second = dir + "/events.out.tfevents.2";
  std::filesystem::remove(second);
  uint8_t flags = data[0], param = data[1];
  const char* p = reinterpret_cast<const char*>(data) + 2;
  size_t left = size - 2;
  std::string files[2];
  if (flags & 1) {
    files[0].assign(p, left);
  } else {
    size_t records = 0;
    while (left > 0) {
      size_t n = static_cast<unsigned char>(*p++);
      --left;
      if (n > left) n = left;
      std::string& out = files[(flags & 2) && records % 3 == 2 ? 1 : 0];
      lockstep::append_tfrecord(out, std::string_view(p, n));
      p += n;
      left -= n;
      ++records;
    }
  }
  std::string& last = files[1].empty() ? files[0] : files[1];
  if ((flags & 4) && !last.empty()) last.resize(last.size() - std::min<size_t>(last.size(), param % 32));
  if ((flags & 8) && !last.empty()) last[(param * 7u) % last.size()] ^= static_cast<char>(1u << (param / 32));
  lockstep_fuzz::write_file(first, files[0].data(), files[0].size());
  if (!files[1].empty()) lockstep_fuzz::write_file(second, files[1].data(), files[1].size());

  lockstep::MetricsSpec spec;
  spec.format = lockstep::MetricsFormat::kTensorBoard;
  spec.path = dir;
  spec.series = {{"loss", "a"}, {"lr", "b"}, {"same", "a"}};
  lockstep_fuzz::read_checked(spec);
  return 0;
}
