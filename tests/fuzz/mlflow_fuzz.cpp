// libFuzzer target for MLflow's stores (ingest/mlflow.h): the first byte
// picks the store, the rest is the file: an SQLite tracking database (the
// seeds use 512-byte pages, so a whole one fits the fuzzer's inputs), or a
// file store's metrics/<key> file in a run folder.
//
//   ci/fuzz.sh            # clang -fsanitize=fuzzer,address,undefined
#include <cstddef>
#include <cstdint>
#include <filesystem>

#include "ingest_fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string& dir = lockstep_fuzz::scratch_dir("mlflow-fuzz");
  lockstep::MetricsSpec spec;
  spec.format = lockstep::MetricsFormat::kMlflow;
  spec.series = {{"loss", "train/loss"}, {"lr", "lr"}};
  if (data[0] % 2 == 0) {
    spec.path = dir + "/mlflow.db";
    lockstep_fuzz::write_file(spec.path, reinterpret_cast<const char*>(data + 1), size - 1);
  } else {
    spec.path = dir + "/run";
    std::filesystem::create_directories(spec.path + "/metrics/train");
    lockstep_fuzz::write_file(spec.path + "/metrics/train/loss", reinterpret_cast<const char*>(data + 1), size - 1);
    lockstep_fuzz::write_file(spec.path + "/metrics/lr", "1000 0.1 0\n", 11);
  }
  lockstep_fuzz::read_checked(spec);
  return 0;
}
