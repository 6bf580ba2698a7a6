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
//   RunPlan plan = plan_run(cfg, request, /*train=*/true);   // plan/run_plan.h
//   TrainerRun r = run_trainer(plan, "lockstep-out/example.run.json.trainer");
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

#include "plan/run_plan.h"
#include "record/run_record.h"
#include "smoke/smoke_config.h"

namespace lockstep {

/// The outcome of run_trainer().
struct TrainerRun {
  RunRecord record;                     ///< complete unless stopped_at_checkpoint
  bool stopped_at_checkpoint = false;
  std::vector<std::string> notes;       ///< facts worth a line on the console
};

/// Runs the trainer of `plan.config` (overrides applied; has_trainer()
/// must hold) as `plan` asks: the request's seed (empty: the config's or
/// $LOCKSTEP_SEED), stop_after with checkpoint (train that many steps,
/// checkpoint, no record), resume, data_pass (false: no data-only pass,
/// the record's probes left empty for a run that made them), and
/// plan.train (false: the data-only pass alone, `lockstep probe`). Each
/// pass gets a fresh folder under `work_dir` (data/, train/; the producer
/// gives <record>.trainer), one LOCKSTEP_OUT each. Throws Error with the
/// exit classes above.
TrainerRun run_trainer(const RunPlan& plan, const std::string& work_dir);

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
/// USE_LIBUV=0 unless set (the classic c10d TCPStore, in every torch
/// build), PYTHONHASHSEED=0, TZ=UTC, LC_ALL=C.UTF-8; and the helper's folder first
/// on PYTHONPATH. Throws exit 3 when the helper cannot be found.
std::map<std::string, std::string> trainer_base_environment(const std::map<std::string, std::string>& extra,
                                                            const std::string& mode, int intra_op_threads);

/// The folder holding the Python helper package `lockstep`:
/// $LOCKSTEP_PYTHONPATH, else <exe>/../share/lockstep/python when installed,
/// else the source tree's python/ (core/install_paths.h). Throws exit 3
/// when there is none (a broken install).
std::string helper_python_dir();

}  // namespace lockstep
