// libFuzzer target for the series sidecar reader (record/series_file.h).
// The input is split into references and sidecar bytes: the first byte
// chooses how many references (0-7), each taking 6 bytes (offset and count as
// signed 24-bit numbers, so misaligned, negative, overlapping and
// past-the-end ranges all occur); the next byte chooses whether the
// descriptor's size and hash are the true ones or are perturbed; the rest is
// the sidecar. Any input must either parse or throw lockstep::Error (exit
// 2); a crash, a sanitizer report or another exception type is a bug.
//
//   ci/fuzz.sh            # builds with clang -fsanitize=fuzzer,address,undefined
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>

#include "compare/compare.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "core/hash.h"
#include "core/json_io.h"
#include "record/golden.h"

namespace {

int32_t take24(const uint8_t*& p) {
  int32_t v = p[0] | (p[1] << 8) | (p[2] << 16);
  p += 3;
  return v >= (1 << 23) ? v - (1 << 24) : v;  // sign-extend
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const uint8_t* p = data;
  const uint8_t* end = data + size;
  size_t refs = *p++ % 8;
  if (static_cast<size_t>(end - p) < refs * 6 + 1) return 0;
  nlohmann::json series = nlohmann::json::object();
  int64_t steps = -1;
  for (size_t i = 0; i < refs; ++i) {
    int32_t offset = take24(p), count = take24(p);
    if (steps < 0) steps = count;  // the first reference sets the record's length
    series["m" + std::to_string(i)] = {{"dtype", i % 2 ? "float32" : "float64"},
                                       {"values", {{"offset", offset}, {"count", count}}}};
  }
  uint8_t perturb = *p++;
  std::string bytes(reinterpret_cast<const char*>(p), static_cast<size_t>(end - p));

  static const std::string dir = [] {
    auto d = std::filesystem::temp_directory_path() / ("lockstep-sidecar-fuzz-" + std::to_string(::getpid()));
    std::filesystem::create_directories(d);
    return d.string();
  }();
  std::string hash = lockstep::xxh3_128_hex(bytes.data(), bytes.size());
  int64_t stated = static_cast<int64_t>(bytes.size());
  if (perturb % 4 == 1) hash[0] = hash[0] == '0' ? '1' : '0';
  if (perturb % 4 == 2) stated += 8;
  nlohmann::json record = {
      {"schema", "lockstep.run/1"}, {"smoke", "fuzz"}, {"config_hash", std::string(16, '0')},
      {"seed", {{"base", 1}, {"overridden", false}}}, {"device", "cpu"}, {"platform", "cpu-x86_64-avx2"},
      {"steps", steps < 0 ? 0 : steps}, {"contract", nlohmann::json::object()},
      {"fingerprint", {{"torch.version", {{"value", "1.13.0"}, {"relevant", true}}}}}, {"series", series}, {"hashes", {{"params", std::string(32, 'a')}}},
      {"probes", nlohmann::json::array()}, {"train_probes", nlohmann::json::array()},
      {"series_data", {{"file", "fuzz.series"}, {"bytes", stated}, {"xxh3_128", hash}}}};
  try {
    lockstep::write_file_atomically(dir + "/fuzz.series", bytes);
    lockstep::write_file_atomically(dir + "/fuzz.json", record.dump());
    lockstep::Golden g = lockstep::read_golden_or_record(dir + "/fuzz.json");
    lockstep::TolerancePolicy policy;
    policy.allow_nonfinite_golden = true;
    (void)lockstep::compare_records(g.record, g.record, policy);
  } catch (const lockstep::Error&) {
  }
  return 0;
}
