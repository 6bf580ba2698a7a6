// libFuzzer target for the readers of other tools' goldens
// (ingest/peer_goldens.h): the first byte picks the reader (Megatron-LM
// golden values, a torchtitan loss file, Hugging Face trainer_state.json),
// the rest is the file.
//
//   ci/fuzz.sh            # clang -fsanitize=fuzzer,address,undefined
#include <cstddef>
#include <cstdint>

#include "ingest_fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string path = lockstep_fuzz::scratch_dir("peer-goldens-fuzz") + "/golden";
  lockstep_fuzz::write_file(path, reinterpret_cast<const char*>(data + 1), size - 1);
  lockstep::MetricsSpec spec;
  spec.path = path;
  switch (data[0] % 3) {
    case 0:
      spec.format = lockstep::MetricsFormat::kMegatron;
      spec.series = {{"loss", "lm loss"}, {"zeros", "num-zeros"}};
      break;
    case 1:
      spec.format = lockstep::MetricsFormat::kTorchtitan;
      spec.series = {{"loss", "loss"}};
      break;
    default:
      spec.format = lockstep::MetricsFormat::kHfTrainer;
      spec.series = {{"loss", "loss"}, {"grad_norm", "grad_norm"}};
      break;
  }
  lockstep_fuzz::read_checked(spec);
  return 0;
}
