// The environment fingerprint stored in every run record: what stack
// produced the numbers (LibTorch, CPU capability, threads, flags, ...).
//
// Each field is in one of three classes:
//   - determinism-relevant: part of the stack, a difference can change the
//     bits (LibTorch version, ATen CPU capability, BLAS, thread counts,
//     numerics env vars); it chooses the lane: two records whose relevant
//     fields are all equal come from the same stack and are held to bit
//     equality, otherwise the smoke's tolerances apply;
//   - input: what the smoke was given (the data file or image manifest, the
//     TorchScript model's code and parameters, the smoke config's
//     value-determining fields). An input never chooses the lane: a changed
//     input is a change under test and always fails (docs/comparison.md);
//   - informational: facts that do not change bits (git commit, kernel).
#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace lockstep {

class JsonView;

/// One fingerprint entry.
struct FingerprintField {
  std::string value;      ///< "(absent: <why>)" when it could not be read
  bool relevant = false;  ///< determinism-relevant (part of the stack)
  bool input = false;     ///< an input of the smoke (never relevant at the same time)
};

/// Field name ("torch.version", "cpu.capability", ...) to value.
using Fingerprint = std::map<std::string, FingerprintField>;

/// The most fields a fingerprint read from a file may hold (a record's, a
/// golden's, a trainer's report): the machine's ~200, a trainer's Python
/// packages and up to 10,000 trainer.inputs files fit; more is exit 2.
inline constexpr size_t kMaxFingerprintFields = 20000;

/// A field that differs between two fingerprints.
struct FieldDiff {
  std::string name;
  std::string golden;  ///< "(missing)" when absent from the golden
  std::string run;     ///< "(missing)" when absent from the run
  bool relevant = false;
  bool input = false;
};

/// Differences in diff_rank's order, each group by name: inputs; versions
/// (framework, CUDA, cuDNN, driver); the contract (determinism.*); imported
/// Python packages; other relevant fields; informational ones; last,
/// packages not imported. An input when either side tags it so (never also
/// relevant); relevant as the run tags it, as the golden does only for a
/// field the run lacks: a golden edited to call git.commit relevant cannot
/// move a run to the looser lane. A field absent on one side and "(absent:
/// <why>)" on the other is no difference: neither holds a value (a CUDA
/// field a CPU machine could not read, recorded by a newer lockstep than
/// the golden's); so is one absent on one side and "(unset)" on the other
/// (an environment variable a newer lockstep records, not set).
std::vector<FieldDiff> diff_fingerprints(const Fingerprint& golden, const Fingerprint& run);

/// The group of a difference in that order, 0 (input) to 6 (a package
/// not imported): what a stack upgrade changed comes before what follows.
int diff_rank(const FieldDiff& d);

/// {"name": {"value": "...", "relevant": true}, ...}; an input field also
/// has "input": true (absent means false).
nlohmann::json to_json(const Fingerprint& fp);

/// Parses a fingerprint; throws exit-2 Error naming the JSON path.
Fingerprint fingerprint_from_json(const JsonView& node);

}  // namespace lockstep
