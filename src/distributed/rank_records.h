// One run record from the records of a multi-rank run's ranks, so compare,
// check, bless and the reports treat a multi-rank smoke like any other.
//
//   std::vector<RunRecord> ranks = {read_run_record(".../rank-0.json"), read_run_record(".../rank-1.json")};
//   RunRecord run = merge_rank_records(ranks, "lockstep-out/x.run.json.ranks");
//
// The merged record is rank 0's (stack, contract, fingerprint, global
// series, hashes, init), with:
//   - probes and train_probes of every rank, interleaved: batch 0 of rank 0,
//     batch 0 of rank 1, ..., then batch 1 of each: entry i is batch i / W of
//     rank i % W (it carries its rank; `batch` is i, as in any record);
//   - peak RSS the largest of any rank; step times rank 0's;
//   - when a rank's determinism-relevant fingerprint differs from rank 0's
//     (ranks on several machines), a relevant field
//     "distributed.mixed_stack" naming each difference, so the run compares
//     as another stack than a single-stack golden.
// The ranks must agree on everything global (the trainer checks the
// parameters every step; this is the last line): every series, hash and
// init entry bit for bit, and the same number of batches.
#pragma once

#include <string>
#include <vector>

#include "record/run_record.h"

namespace lockstep {

/// Merges `ranks` (rank order, at least one). Throws exit-1 Error naming
/// the rank and the field when a rank's global values differ from rank 0's.
RunRecord merge_rank_records(const std::vector<RunRecord>& ranks, const std::string& where);

}  // namespace lockstep
