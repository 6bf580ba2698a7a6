// One run of a team's own trainer, gated like a built-in smoke: the
// command from the smoke config's "trainer" section in fresh processes
// (a data-only pass, then the training pass), the determinism contract
// handed over through the environment, and what the trainer wrote — its
// metrics (TensorBoard, JSONL, MLLOG or CSV), its batch probes and the
// helper's report — assembled into a RunRecord. Torch-free: the trainer
// brings its own PyTorch. `lockstep run` calls this for a trainer config,
// so check, bless, run --repeat and the hook work unchanged
// (docs/trainers.md).
//
//   SmokeConfig cfg = load_smoke_config("examples/pytorch-trainer/smoke.json");
//   TrainerRun r = run_trainer(cfg, {"lockstep-out/example.run.json.trainer"});
//   write_run_record("lockstep-out/example.run.json", r.record);
//
// Exit classes (thrown as Error): the command not found or not executable,
// or its metrics, probes or report missing or malformed: 2 (naming the
// file, line or byte offset, and tag); the trainer exits non-zero, is
// killed by a signal or times out: 1, the message quoting the last 40
// lines of its stderr; the trainer reports a determinism contract other
// than the config's: 3.
//
// The environment each trainer process gets (recorded in the fingerprint):
// LOCKSTEP_SEED, LOCKSTEP_OUT (its own empty folder), LOCKSTEP_DETERMINISM,
// LOCKSTEP_INTRA_OP_THREADS, LOCKSTEP_INTER_OP_THREADS, LOCKSTEP_DEVICE,
// LOCKSTEP_STEPS, LOCKSTEP_PASS ("data" or "train"), CUBLAS_WORKSPACE_CONFIG
// (:4096:8 in strict mode), OMP_NUM_THREADS and MKL_NUM_THREADS (the
// intra-op threads), PYTHONHASHSEED=0, TZ=UTC, LC_ALL=C.UTF-8, the helper's
// folder first on PYTHONPATH, and the config's trainer.env.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "record/run_record.h"
#include "smoke/smoke_config.h"

namespace lockstep {

/// What one trainer run does.
struct TrainerRunOptions {
  /// Folder of this run's processes (<record>.trainer): data/ and train/
  /// are created fresh in it, one LOCKSTEP_OUT each.
  std::string work_dir;
  bool train = true;        ///< false: the data-only pass alone (`lockstep probe`)
  /// Non-empty: the base seed, as $LOCKSTEP_SEED would give it (exit 2 if
  /// not a decimal uint64); empty: base_seed() (the config's or $LOCKSTEP_SEED).
  std::string seed;
  int64_t stop_after = 0;   ///< > 0: train this many steps, checkpoint at `checkpoint`, no record
  std::string checkpoint;   ///< with stop_after
  std::string resume;       ///< continue from this checkpoint (written by a stop_after run)
  /// false: no data-only pass (`run --no-data-pass`); the record's probes
  /// stay empty, for a run that made them to fill (launch/launcher.h).
  bool data_pass = true;
};

/// The outcome of run_trainer().
struct TrainerRun {
  RunRecord record;                     ///< complete unless stopped_at_checkpoint
  bool stopped_at_checkpoint = false;
  std::vector<std::string> notes;       ///< facts worth a line on the console
};

/// Runs the trainer of `config` (has_trainer() must hold). Throws Error
/// with the exit classes above.
TrainerRun run_trainer(const SmokeConfig& config, const TrainerRunOptions& options);

/// `text` with {steps}, {seed}, {out}, {data}, {config_dir}, {resume_at}
/// and {checkpoint} replaced from `values` (placeholder name -> value).
std::string expand_placeholders(const std::string& text, const std::map<std::string, std::string>& values);

/// The environment lockstep hands every trainer process, but for its
/// LOCKSTEP_* protocol variables: this process's environment without
/// LOCKSTEP_* (LOCKSTEP_DATA_DIR kept) and without torchrun's RANK,
/// WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR and MASTER_PORT
/// (a torchrun job around lockstep must not make its trainer a rank of
/// it); then `extra` (the config's trainer.env); then the contract:
/// CUBLAS_WORKSPACE_CONFIG=:4096:8 in strict `mode` (a valid :16:8 kept),
/// OMP_NUM_THREADS and MKL_NUM_THREADS = `intra_op_threads`,
/// PYTHONHASHSEED=0, TZ=UTC, LC_ALL=C.UTF-8; and the helper's folder first
/// on PYTHONPATH. Throws exit 3 when the helper cannot be found.
std::map<std::string, std::string> trainer_base_environment(const std::map<std::string, std::string>& extra,
                                                            const std::string& mode, int intra_op_threads);

/// The folder holding the Python helper package `lockstep`:
/// $LOCKSTEP_PYTHONPATH, else <exe>/../share/lockstep/python when installed,
/// else the source tree's python/ (core/install_paths.h). Throws exit 3
/// when there is none (a broken install).
std::string helper_python_dir();

}  // namespace lockstep
