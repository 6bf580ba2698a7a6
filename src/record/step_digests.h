// Per-step digests of a model's parameters and gradients: a change the loss
// and the norms hide shows at the step it happens (torchtitan's graph-trainer
// tests hash weights and gradients per step for this: the loss held, the
// hashes moved).
//
//   StepDigests d;                               // one entry per step 0..n-1
//   d.grads.push_back(manifest_hex);  d.params.push_back(manifest_hex);
//   nlohmann::json j = to_json(d);               // {"params": [...], "grads": [...]}
//   StepDigests back = step_digests_from_json(JsonView(j, "run.json", "digests"), 10);
//
// What a digest is (the built-in trainer and the Python helper alike,
// docs/record.md): the XXH3-128 of a manifest text holding, for each
// parameter in the module's named_parameters() order, one line
// "<name> <XXH3-128 of its bytes, 32 hex digits>\n" (the tensor contiguous,
// on the CPU, in its own dtype). `grads`: the parameters' .grad after
// backward (after a multi-rank run's all-reduce), before the optimiser
// step; a parameter without one has "<name> none\n". `params`: the
// parameters after the optimiser step. Nothing here depends on LibTorch.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace lockstep {

class JsonView;

/// The digests of a run, one per recorded step.
struct StepDigests {
  /// The step of each entry, increasing, when they were not taken at every
  /// step 0..n-1 (a trainer writing them at its logged steps); empty means
  /// entry i is step i.
  std::vector<int64_t> steps;
  std::vector<std::string> params;  ///< after the optimiser step, 32 hex digits each
  std::vector<std::string> grads;   ///< after backward, before the step, 32 hex digits each
  bool empty() const { return params.empty() && grads.empty(); }
  /// The step of entry `i`.
  int64_t step_of(size_t i) const { return steps.empty() ? static_cast<int64_t>(i) : steps[i]; }
};

/// The digest of one manifest: `lines` is {name, hex digest or "none"} in
/// parameter order. The one definition both trainers use.
std::string manifest_digest(const std::vector<std::pair<std::string, std::string>>& lines);

/// {"params": [...], "grads": [...]}, with "steps" when the entries are not
/// steps 0..n-1.
nlohmann::json to_json(const StepDigests& digests);

/// Parses a record's "digests". Throws exit-2 Error naming the JSON path:
/// not an object of those keys, a digest that is not 32 lowercase hex
/// digits, "params" and "grads" of different lengths, steps not increasing
/// or outside 0..record_steps-1, or, without "steps", a length other than
/// `record_steps`.
StepDigests step_digests_from_json(const JsonView& node, int64_t record_steps);

/// Drops `digests.steps` when they are exactly 0..record_steps-1 (the
/// usual form: entry i is step i). Throws nothing.
void compact_steps(StepDigests& digests, int64_t record_steps);

/// Where two runs' digests first differ, matched by step number.
struct DigestDivergence {
  int64_t grads_step = -1;   ///< first step whose gradient digests differ; -1 none
  int64_t params_step = -1;  ///< first step whose parameter digests differ; -1 none
  size_t common_steps = 0;   ///< steps both hold
};

/// Compares `run` with `reference` at the steps both hold. Throws nothing.
DigestDivergence first_digest_divergence(const StepDigests& run, const StepDigests& reference);

}  // namespace lockstep
