// Batch probes written by a trainer of its own (python/lockstep), one per
// line in the run record's format (record/batch_probe.h):
//
//   {"batch": 0, "sample_index_hash": "...", "inputs": {...}, "labels": {...}}
//   {"batch": 1, ...}
//
//   std::vector<BatchProbe> probes = read_probes_jsonl("out/probes.jsonl");
//
// Batches must be numbered 0, 1, 2, ... in order (or from a given first
// batch, for a resumed run). Errors name the file and
// the line ("out/probes.jsonl: line 3: inputs.std: expected ..."), exit 2.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "record/batch_probe.h"

namespace lockstep {

/// Reads every probe of `path`; blank lines are skipped. Throws exit-2
/// Error naming the file and the line for malformed JSON, a probe that
/// batch_probe_from_json refuses, a batch out of sequence, an empty file
/// or one without probes.
/// Batches are numbered from `first_batch` (a run resumed at step K
/// numbers its batches from K).
std::vector<BatchProbe> read_probes_jsonl(const std::string& path, int64_t first_batch = 0);

}  // namespace lockstep
