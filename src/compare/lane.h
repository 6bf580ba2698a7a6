// Which lane a comparison runs in, and the inputs that fail it whatever the
// values say: the fingerprints diffed, a changed input (data file, config
// values, TorchScript model, trainer.inputs) a finding named by field or
// file, and the lane chosen from the rest: the same stack (bit-exact or the
// smoke's same_stack rule), another stack (the smoke's tolerances), or
// another determinism contract (fails; compared exactly to say where).
//
//   Verdict v;
//   choose_lane(run, golden, v);   // v.env_diffs, v.lane, v.lane_reason, input findings
//   bool exact = v.lane == Lane::kSameStack;
#pragma once

#include <map>
#include <set>
#include <string>

#include "compare/verdict.h"
#include "record/run_record.h"

namespace lockstep {

/// The keys of either map, sorted: what two records are compared over.
template <typename Map>
std::set<std::string> key_union(const Map& a, const Map& b) {
  std::set<std::string> out;
  for (const auto& [k, _] : a) out.insert(k);
  for (const auto& [k, _] : b) out.insert(k);
  return out;
}

/// The version of lockstep that made both records, when their fingerprints'
/// "lockstep.version" agree; "" otherwise. A golden made by the run's own
/// lockstep version cannot predate a field that version records: one it
/// lacks was taken out by hand.
std::string shared_tool_version(const RunRecord& run, const RunRecord& golden);

/// The inputs among v.env_diffs that differ: a finding each ("input
/// changed: ...", Section::kInput, the changed config fields named), or a
/// note when the golden predates the field or only an input's location
/// moved (is_location_field); true when that move is all that changed.
/// choose_lane calls it; so does compare's imported-golden path for the
/// config values a pending import was filed under. Throws nothing.
bool judge_inputs(const RunRecord& run, const RunRecord& golden, Verdict& v);

/// Sets v.env_diffs (diff_fingerprints of golden and run), v.lane and
/// v.lane_reason, and appends a finding per changed input ("input changed:
/// ...", Section::kInput) and per contract setting that differs
/// (Section::kContract); notes for what only moved (an input's location)
/// or predates a field. Throws nothing.
void choose_lane(const RunRecord& run, const RunRecord& golden, Verdict& v);

}  // namespace lockstep
