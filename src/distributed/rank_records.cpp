#include "distributed/rank_records.h"

#include <algorithm>
#include <cstring>

#include "core/error.h"

namespace lockstep {

namespace {

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

std::vector<BatchProbe> interleave(const std::vector<RunRecord>& ranks, std::vector<BatchProbe> RunRecord::*list,
                                   const char* name, const std::string& where) {
  std::vector<std::vector<BatchProbe>> per_rank;
  for (const auto& rec : ranks) per_rank.push_back(rec.*list);
  return interleave_rank_probes(per_rank, where + " (" + name + ")");
}

}  // namespace

RunRecord merge_rank_records(const std::vector<RunRecord>& ranks, const std::string& where) {
  if (ranks.empty()) throw EnvironmentError(where + ": no rank records to merge");
  const RunRecord& zero = ranks.front();
  for (size_t r = 1; r < ranks.size(); ++r) {
    const RunRecord& rec = ranks[r];
    auto differs = [&](const std::string& what) {
      return Error(ExitCode::kRegression, where + ": rank " + std::to_string(r) + "'s " + what +
                                              " differs from rank 0's (the ranks must agree on every global value)");
    };
    if (rec.series.size() != zero.series.size()) throw differs("set of series");
    for (const auto& [name, s] : zero.series) {
      auto it = rec.series.find(name);
      if (it == rec.series.end() || it->second.values.size() != s.values.size()) throw differs("series " + name);
      for (size_t i = 0; i < s.values.size(); ++i)
        if (!same_bits(it->second.values[i], s.values[i]))
          throw differs("series " + name + " at step " + std::to_string(i));
    }
    if (rec.hashes != zero.hashes) throw differs("final hashes");
    // After the gradient all-reduce and the update every rank holds the same bytes.
    for (size_t i = 0; i < zero.digests.params.size() && i < rec.digests.params.size(); ++i)
      if (rec.digests.grads[i] != zero.digests.grads[i] || rec.digests.params[i] != zero.digests.params[i])
        throw differs("parameter or gradient digest at step " + std::to_string(zero.digests.step_of(i)));
    for (const auto& [name, init] : zero.init) {
      auto it = rec.init.find(name);
      if (it == rec.init.end() || it->second.xxh3_128 != init.xxh3_128) throw differs("initial " + name);
    }
  }
  RunRecord out = zero;
  // Ranks on several machines may run on different stacks: a mixed run is
  // not the single-stack run a golden holds, so the difference joins the
  // fingerprint as a determinism-relevant field (a cross-stack verdict).
  std::string mixed;
  for (size_t r = 1; r < ranks.size(); ++r)
    for (const auto& [key, field] : ranks[r].fingerprint) {
      auto it = zero.fingerprint.find(key);
      if (!field.relevant || (it != zero.fingerprint.end() && it->second.value == field.value)) continue;
      if (mixed.size() < 1024)
        mixed += (mixed.empty() ? "" : "; ") + std::string("rank ") + std::to_string(r) + " " + key + " = " +
                 field.value + " (rank 0: " + (it == zero.fingerprint.end() ? "(missing)" : it->second.value) + ")";
    }
  if (!mixed.empty()) out.fingerprint["distributed.mixed_stack"] = {mixed, true, false};
  out.probes = interleave(ranks, &RunRecord::probes, "probed batches", where);
  out.train_probes = interleave(ranks, &RunRecord::train_probes, "trained batches", where);
  for (const auto& rec : ranks)
    out.resources.peak_rss_bytes = std::max(out.resources.peak_rss_bytes, rec.resources.peak_rss_bytes);
  return out;
}

}  // namespace lockstep
