// The environment fingerprint stored in every run record: what stack
// produced the numbers (LibTorch, CPU capability, threads, flags, ...).
//
// Each field is tagged determinism-relevant (a difference can change the
// bits: LibTorch version, ATen CPU capability, BLAS, thread counts, numerics
// env vars) or informational (hostname-like facts: git commit, kernel).
// Two records whose relevant fields are all equal come from the same stack
// and are held to bit equality (docs/comparison.md).
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
  bool relevant = false;  ///< determinism-relevant
};

/// Field name ("torch.version", "cpu.capability", ...) to value.
using Fingerprint = std::map<std::string, FingerprintField>;

/// A field that differs between two fingerprints.
struct FieldDiff {
  std::string name;
  std::string golden;  ///< "(missing)" when absent from the golden
  std::string run;     ///< "(missing)" when absent from the run
  bool relevant = false;
};

/// Differences, determinism-relevant fields first, then by name. A field is
/// relevant when either side tags it relevant.
std::vector<FieldDiff> diff_fingerprints(const Fingerprint& golden, const Fingerprint& run);

/// {"name": {"value": "...", "relevant": true}, ...}
nlohmann::json to_json(const Fingerprint& fp);

/// Parses a fingerprint; throws exit-2 Error naming the JSON path.
Fingerprint fingerprint_from_json(const JsonView& node);

}  // namespace lockstep
