// libFuzzer target for the JSONL metrics reader (ingest/jsonl.h) and the
// batch-probe JSONL reader (ingest/probes_jsonl.h): the input is the file.
//
//   ci/fuzz.sh            # clang -fsanitize=fuzzer,address,undefined
#include <cstddef>
#include <cstdint>

#include "ingest/probes_jsonl.h"
#include "ingest_fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string path = lockstep_fuzz::scratch_dir("jsonl-fuzz") + "/metrics.jsonl";
  lockstep_fuzz::write_file(path, reinterpret_cast<const char*>(data), size);
  lockstep::MetricsSpec spec;
  spec.format = lockstep::MetricsFormat::kJsonl;
  spec.path = path;
  spec.series = {{"loss", "loss"}, {"lr", "lr"}, {"again", "loss"}};
  lockstep_fuzz::read_checked(spec);
  try {
    std::vector<lockstep::BatchProbe> probes = lockstep::read_probes_jsonl(path);
    for (size_t i = 0; i < probes.size(); ++i)
      if (probes[i].batch != static_cast<int64_t>(i)) std::abort();
  } catch (const lockstep::Error& e) {
    if (e.code() != lockstep::ExitCode::kBadInput) std::abort();
  }
  return 0;
}
