// libFuzzer target for the MLPerf MLLOG reader (ingest/mllog.h): the input
// is the log.
//
//   ci/fuzz.sh            # clang -fsanitize=fuzzer,address,undefined
#include <cstddef>
#include <cstdint>

#include "ingest_fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string path = lockstep_fuzz::scratch_dir("mllog-fuzz") + "/result_0.txt";
  lockstep_fuzz::write_file(path, reinterpret_cast<const char*>(data), size);
  lockstep::MetricsSpec spec;
  spec.format = lockstep::MetricsFormat::kMllog;
  spec.path = path;
  spec.series = {{"acc", "eval_accuracy"}, {"loss", "train_loss"}};
  spec.mllog_step = "epoch_num";
  lockstep_fuzz::read_checked(spec);
  return 0;
}
