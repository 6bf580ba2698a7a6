// Readers that turn a trainer's own metric logs into lockstep series:
// TensorBoard event files, JSONL, MLPerf MLLOG and CSV (docs/trainers.md),
// and other tools' goldens and histories (ingest/peer_goldens.h, ingest/mlflow.h).
//
//   MetricsSpec spec;
//   spec.format = MetricsFormat::kTensorBoard;
//   spec.path = "out/tb";                          // a folder of events.out.tfevents.*, or one file
//   spec.series = {{"loss", "train/loss"}, {"grad_norm", "train/grad_norm"}};
//   std::map<std::string, Series> s = read_metrics(spec);   // exit 2 on any bad byte
//
// Steps are matched by number, never by position: a metric logged every k
// steps keeps its step numbers (Series::steps). Torch-free.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "record/series.h"

namespace lockstep {

/// The log formats a trainer's metrics can be read from, and the goldens
/// of other tools (ingest/peer_goldens.h).
enum class MetricsFormat { kTensorBoard, kJsonl, kMllog, kCsv, kMegatron, kTorchtitan, kHfTrainer, kMlflow };

/// "tensorboard", "jsonl", "mllog", "csv", "megatron", "torchtitan", "hf-trainer", "mlflow".
const char* metrics_format_name(MetricsFormat format);

/// Parses a format name; throws exit-2 BadUsage listing the names.
MetricsFormat parse_metrics_format(const std::string& name);

/// What to read and how to name it.
struct MetricsSpec {
  MetricsFormat format = MetricsFormat::kJsonl;
  /// A file, or for TensorBoard a folder whose events.out.tfevents.* files
  /// are all read (sorted by name).
  std::string path;
  /// lockstep series name -> the tag (TensorBoard), key (JSONL, MLLOG) or
  /// column (CSV) it is read from.
  std::map<std::string, std::string> series;
  /// JSONL key / CSV column holding the step number.
  std::string step_key = "step";
  /// MLLOG: the metadata field giving the step ("epoch_num", "samples_count"
  /// or "step").
  std::string mllog_step = "step";
  /// MLflow: the run's run_uuid or name; "" when the store holds one run
  /// (ingest/mlflow.h).
  std::string run;
};

/// Reads every requested series, each marked Series::rounded when its
/// values sit on a decimal grid (decimal_grid: a source rounded them; the
/// comparison then refuses an exact rule on it). Throws exit-2 Error naming the file, the
/// line or byte offset, and the tag, for: a missing file or folder, a bad
/// CRC or truncated record, malformed JSON/CSV/protobuf, a requested tag
/// absent, a non-numeric step, steps out of order or missing in the middle,
/// and one step logged twice with different values (TensorBoard: both files
/// named; identical values are accepted as a restart's re-log).
std::map<std::string, Series> read_metrics(const MetricsSpec& spec);

}  // namespace lockstep
