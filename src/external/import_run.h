// `lockstep import` as a library step: a trainer's metric log (or another
// tool's goldens) read into a run record, stamped as every other record is.
// The command line binds straight into ImportRequest; cli/ only checks
// where files go, writes and prints.
//
//   ImportRequest req;  req.format = "jsonl";  req.path = "metrics.jsonl";  req.series = {"loss"};
//   RunRecord rec = import_record(req);                     // exit 2 on a bad log
//   SmokeConfig cfg = load_smoke_config("smoke/trainer.json");
//   RunRecord golden = import_golden_record(req, cfg);      // on the smoke's steps, stamped by finish_record
//
// An imported record keeps "import.source" in its fingerprint: compare
// then uses the tolerance lane on the series and steps it holds
// (compare/compare.h), since no lockstep contract made its curves.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ingest/metrics.h"
#include "record/run_record.h"
#include "smoke/smoke_config.h"

namespace lockstep {

/// Everything `lockstep import` is asked: the log, the series, and where
/// the record is filed. One declaration: the CLI binds its flags here.
struct ImportRequest {
  std::string format;                ///< a metrics_format_name(): tensorboard, jsonl, ..., mlflow
  std::string path;                  ///< file, or a folder of event files (an MLflow run folder)
  std::vector<std::string> series;   ///< NAME=TAG (or NAME alone: the tag is the name)
  std::string record;  ///< --record FILE: the record path (without `golden`)
  /// --out DIR, with `golden`: the folder the pending golden goes to
  /// (<out>/<smoke>/<platform>.golden.new; default lockstep-import).
  std::string out;
  /// --golden SMOKE: a smoke config; the import becomes a pending golden
  /// of that smoke (its name, config hash and value fields, seed), for
  /// `review` and `accept --reason`, its provenance naming the source file.
  std::string golden;
  /// With `golden`: the platform key it is filed under; "" = the smoke's
  /// one declared platform, else this machine's.
  std::string platform;
  /// With `golden`: added to every step (-1 for a log counting from 1).
  int64_t step_offset = 0;
  std::string run;                   ///< mlflow: run_uuid or run name
  bool run_given = false;            ///< --run given (refused but for mlflow)
  bool seed_given = false;           ///< --seed given (with --golden: instead of the smoke's)
  std::string name = "imported";     ///< the record's smoke name (without `golden`)
  std::string step_key = "step";     ///< jsonl / csv step field
  std::string mllog_step = "step";   ///< mllog metadata step field
  bool step_key_given = false;       ///< --step-key given (refused for tensorboard, mllog)
  bool mllog_step_given = false;     ///< --mllog-step given (refused but for mllog)
  std::string probes;                ///< optional probes JSONL (the batches trained on)
  /// Optional lockstep-trainer.json the Python helper wrote: the trainer's
  /// stack facts and contract join the record, so two imports of one stack
  /// share a lane and other stacks are compared with tolerances.
  std::string trainer_report;
  std::string device = "cpu";        ///< the device the trainer ran on (platform key)
  uint64_t seed = 0;                 ///< the seed the trainer ran with (recorded)
};

/// The reader's MetricsSpec for `request`. An option the format does not
/// read is refused (BadUsage, exit 2), not ignored: --step-key on a
/// TensorBoard import, --mllog-step but for mllog, --run but for mlflow; a
/// --series that is not NAME=TAG or names a series twice.
MetricsSpec import_metrics_spec(const ImportRequest& request);

/// The log read into a record: every requested series (steps as logged),
/// the probes and trainer report when given, this machine's fingerprint
/// with "import.source" ("<format> <path>"), contract mode "(not applied:
/// imported)", smoke = request.name, config_hash = kNoConfigHash, steps =
/// one past the last step logged. Throws exit-2 Error for a malformed log
/// (naming file and field) or a step number of 2^53 or more.
RunRecord import_record(const ImportRequest& request);

/// The log read as a golden of `smoke`: the series on the smoke's steps
/// 0..steps-1 shifted by request.step_offset, stamped by finish_record
/// (smoke name, config hash and value fields, seed: request.seed when
/// given, else the smoke's; device; steps), filed under request.platform,
/// else the smoke's one declared platform, else this machine's key. Its
/// fingerprint keeps only "import.source", "config.values_xxh3" and the
/// trainer report's trainer.* facts (the curves' own stack is not known:
/// this machine's would be a false claim); no contract. Throws BadUsage
/// (exit 2) for a series the trainer smoke does not record, a log running
/// past the smoke's steps or stopping early (naming --step-offset -1 for
/// a log counting from 1), or a platform key of another device.
RunRecord import_golden_record(const ImportRequest& request, const SmokeConfig& smoke);

}  // namespace lockstep
