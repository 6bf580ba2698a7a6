// What a team's trainer wrote, read back for its record
// (external/trainer_run.h): the helper's report in every process (its
// contract must be the config's), the data-only passes' batch probes (the
// same at every worker count), rank 0's metrics covering the steps trained
// (every other rank that logs them agreeing bit for bit), the probes of
// the batches trained on and the module trace. Malformed or missing output
// is exit 2 naming the config's field or the file; batches that depend on
// the worker count or on nothing the seed fixes are exit 4.
//
//   TrainedOutputs out;
//   read_metrics_of_ranks(layout, passes, 0, config.steps, out, notes);
//   read_trained_batches_and_trace(layout, passes, 0, config.steps, out, notes);
//
// Internal to src/external/.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "external/trainer_passes.h"
#include "external/trainer_report.h"
#include "record/batch_probe.h"
#include "record/module_trace.h"
#include "record/series.h"

namespace lockstep {

/// A file the config says the trainer writes (`field`, at `path` inside its
/// output folder `out`): exit 2 naming the config's field when the trainer
/// exited 0 without writing it, with what the folder holds (a misspelt
/// name shows there).
void require_written(const SmokeConfig& c, const std::string& field, const std::string& path, const std::string& out);

/// Each series must stay within [first, end) and reach the end of what was
/// trained (its last step within one logging interval of end - 1): a
/// trainer that stopped early without failing would otherwise pass on
/// fewer steps.
void check_coverage(std::map<std::string, Series>& series, int64_t first, int64_t end, const std::string& file);

/// Empty steps when they are exactly 0..n-1 (the record's dense form).
void compact_steps(Series& s);

/// A worker-count difference (`deferred`) is only the cause when the
/// batches repeat at one worker count: the training pass ran the first
/// data-only pass's count, so batches it trained on that differ from that
/// pass's are not fixed by the seed at all (a sampler or generator seeded
/// from the clock or os.urandom), which is said instead. Throws exit 4.
[[noreturn]] void throw_data_pass_difference(const std::string& deferred, const std::vector<BatchProbe>& data,
                                             const std::vector<BatchProbe>* trained, int workers,
                                             const std::string& data_path, const std::string& trained_what);

/// What the trainer says about itself, in every process: its contract must
/// be the config's (exit 3). Returns the report the record keeps (the
/// training pass's, or the data-only pass's for `lockstep probe`) and its path.
std::pair<TrainerReport, std::string> check_reports(const TrainerLayout& l, const PassPlan& p, bool train);

/// The data-only passes' probes: one list (every rank's, interleaved), the
/// same at every worker count bit for bit. The first difference goes to
/// `difference` (with the first pass's path in `first_path`), to be judged
/// against the training pass's batches (throw_data_pass_difference).
std::vector<BatchProbe> read_data_probes(const TrainerLayout& l, const PassPlan& p, std::string& difference,
                                         std::string& first_path);

/// What the training pass wrote, for steps [first, end).
struct TrainedOutputs {
  std::map<std::string, Series> series;  ///< rank 0's metrics, every other rank's agreeing
  std::string metrics_path;              ///< rank 0's
  std::vector<BatchProbe> train_probes;  ///< one per rank and step trained
  ModuleTrace trace;                     ///< rank 0's, when written
  StepDigests digests;                   ///< rank 0's lockstep-digests.jsonl, when written (steps explicit)
};

/// Rank 0's metrics, covering [first, end); every other rank that logs them
/// must log the same global series (many trainers log on rank 0 only: a
/// rank without the file is not read, and a note says so).
void read_metrics_of_ranks(const TrainerLayout& l, const PassPlan& p, int64_t first, int64_t end, TrainedOutputs& out,
                           std::vector<std::string>& notes);

/// The probes of the batches trained on, one per rank and step (a trainer
/// that probes some batches only would leave the others unchecked), the
/// module trace of the helper's ModuleTracer and the per-step digests of
/// its DigestWriter (ingest/digests_jsonl.h; rank 0's), when written.
void read_trained_batches_and_trace(const TrainerLayout& l, const PassPlan& p, int64_t first, int64_t end,
                                    TrainedOutputs& out, std::vector<std::string>& notes);

}  // namespace lockstep
