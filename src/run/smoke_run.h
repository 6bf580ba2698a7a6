// One smoke run in this process: a validated smoke config in, a run record
// out. The LibTorch side of `lockstep run` and `lockstep probe`; it prints
// nothing and writes nothing but a checkpoint it is asked for, so cli/ only
// parses arguments, calls it, prints and writes the record.
//
//   SmokeConfig cfg = with_overrides(load_smoke_config("smoke/digits-cnn.json"), overrides);
//   SmokeRun run = run_smoke(cfg, {});          // data-only pass + training
//   write_run_record("out/run.json", run.record);
//
// Order (each step can end the run with an Error):
//   1. base seed: the config's, or LOCKSTEP_SEED (exit 2 if not a uint64);
//   2. preflight: min_driver and CUDA usability for device "cuda" (exit 3);
//   3. the determinism contract (determinism/contract.h; exit 3 if refused);
//   4. the data: CSV, image folder or synthetic table (exit 2 naming the field);
//   5. the data-only pass: one BatchProbe per batch over data.probe_epochs;
//   6. training (unless options.train is false), optionally stopping at a
//      checkpoint or resuming from one (train/trainer.h);
//   7. the record: contract, fingerprint (env/fingerprint_capture.h) with
//      the data and model hashes, platform key.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "data/csv_source.h"
#include "record/run_record.h"
#include "smoke/smoke_config.h"
#include "train/trainer.h"

namespace lockstep {

/// What one run does besides the data-only pass.
struct SmokeRunOptions {
  bool train = true;  ///< false: the data-only pass alone (`lockstep probe`)
  ResumeSpec resume;  ///< stop at / continue from a checkpoint (train only)
  /// Called after each probed batch with (batches done, batches in the
  /// pass); the command line draws a progress bar with it.
  std::function<void(int64_t done, int64_t total)> on_probe;
  /// Set in a rank process of a multi-rank smoke (distributed/rank_launch.h
  /// starts them): the run joins the c10d group in rank.rendezvous, probes
  /// and trains on this rank's share, and its record is one rank's.
  RankIdentity rank;
};

/// The outcome of run_smoke().
struct SmokeRun {
  RunRecord record;         ///< complete unless stopped_at_checkpoint
  bool stopped_at_checkpoint = false;  ///< resume.stop_after > 0: the checkpoint is written, no record
  int64_t steps_done = 0;   ///< optimiser steps taken in this process
  /// Facts worth a line on the console, e.g. the files an image folder
  /// holds that are not images and were skipped (also in the record).
  std::vector<std::string> notes;
  /// Rank 0 of a run on several machines (rank.nnodes > 1): the other
  /// nodes' ranks' records as JSON, by rank, gathered through the store;
  /// empty otherwise. The rank writes them beside its own.
  std::map<int, std::string> rank_records;
};

/// Runs `config` (overrides already applied, see with_overrides()) in this
/// process. Throws Error: exit 2 for bad input (LOCKSTEP_SEED, data file,
/// data/model mismatch, checkpoint), exit 3 when the environment cannot
/// run it (CUDA, driver, a refused determinism knob, a failed rendezvous),
/// exit 1 from a rank's cross-rank checks (train/trainer.h).
SmokeRun run_smoke(const SmokeConfig& config, const SmokeRunOptions& options);

/// The steps of run_smoke() before its data-only pass, for a probe that
/// needs the smoke's data and model but no run (run/batch_sweep.h): the
/// preflight (a cuda smoke's driver and CUDA: exit 3), the determinism
/// contract (returned as read back), and the data table (exit 2 naming the
/// field). `table` receives the table the loader reads.
std::map<std::string, std::string> prepare_smoke(const SmokeConfig& config, uint64_t seed,
                                                 std::shared_ptr<const CsvTable>& table);


}  // namespace lockstep
