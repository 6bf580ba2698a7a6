// libFuzzer target for the record and golden parser: any input must either
// parse or throw lockstep::Error (exit 2); anything else — a crash, a
// sanitizer report, another exception type — is a bug.
//
//   ci/fuzz.sh            # builds with clang -fsanitize=fuzzer,address,undefined, runs 60 s
#include <cstddef>
#include <cstdint>
#include <string>

#include "compare/compare.h"
#include "core/error.h"
#include "record/golden.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  try {
    lockstep::Golden g = lockstep::golden_from_text(text, "fuzz.json", /*allow_plain_record=*/true);
    // A parsed record must also survive comparison against itself.
    lockstep::TolerancePolicy policy;
    policy.allow_nonfinite_golden = true;
    (void)lockstep::compare_records(g.record, g.record, policy);
  } catch (const lockstep::Error&) {
  }
  return 0;
}
