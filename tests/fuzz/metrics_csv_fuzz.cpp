// libFuzzer target for the CSV metrics reader (ingest/metrics_csv.h): the
// input is the file.
//
//   ci/fuzz.sh            # clang -fsanitize=fuzzer,address,undefined
#include <cstddef>
#include <cstdint>

#include "ingest_fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string path = lockstep_fuzz::scratch_dir("csv-fuzz") + "/metrics.csv";
  lockstep_fuzz::write_file(path, reinterpret_cast<const char*>(data), size);
  lockstep::MetricsSpec spec;
  spec.format = lockstep::MetricsFormat::kCsv;
  spec.path = path;
  spec.series = {{"loss", "loss"}, {"lr", "lr"}};
  lockstep_fuzz::read_checked(spec);
  return 0;
}
