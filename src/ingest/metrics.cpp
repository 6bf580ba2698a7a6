#include "ingest/metrics.h"

#include "core/error.h"
#include "ingest/jsonl.h"
#include "ingest/metrics_csv.h"
#include "ingest/mllog.h"
#include "ingest/mlflow.h"
#include "ingest/peer_goldens.h"
#include "ingest/tensorboard.h"

namespace lockstep {

const char* metrics_format_name(MetricsFormat format) {
  switch (format) {
    case MetricsFormat::kTensorBoard: return "tensorboard";
    case MetricsFormat::kJsonl: return "jsonl";
    case MetricsFormat::kMllog: return "mllog";
    case MetricsFormat::kCsv: return "csv";
    case MetricsFormat::kMegatron: return "megatron";
    case MetricsFormat::kTorchtitan: return "torchtitan";
    case MetricsFormat::kHfTrainer: return "hf-trainer";
    case MetricsFormat::kMlflow: return "mlflow";
  }
  return "unknown";
}

MetricsFormat parse_metrics_format(const std::string& name) {
  for (MetricsFormat f : {MetricsFormat::kTensorBoard, MetricsFormat::kJsonl, MetricsFormat::kMllog, MetricsFormat::kCsv,
                          MetricsFormat::kMegatron, MetricsFormat::kTorchtitan, MetricsFormat::kHfTrainer, MetricsFormat::kMlflow})
    if (name == metrics_format_name(f)) return f;
  throw BadUsage("unknown metrics format \"" + name + "\": expected one of \"tensorboard\", \"jsonl\", \"mllog\", \"csv\", "
                 "\"megatron\", \"torchtitan\", \"hf-trainer\", \"mlflow\"");
}

std::map<std::string, Series> read_metrics(const MetricsSpec& spec) {
  if (spec.path.empty()) throw BadUsage("metrics: no path given to read " + std::string(metrics_format_name(spec.format)) + " metrics from");
  if (spec.series.empty()) throw BadInput(spec.path, "", "at least one series to read (none requested)");
  for (const auto& [name, key] : spec.series)
    if (name.empty() || key.empty())
      throw BadInput(spec.path, "", "a non-empty series name and tag/key/column for every series requested");
  // A tag is a short name; a long one would only make the did-you-mean search slow.
  for (const auto& [name, key] : spec.series)
    if (name.size() > 1024 || key.size() > 1024)
      throw BadUsage("series " + name.substr(0, 64) + (name.size() > 64 ? "..." : "") +
                     ": a series name and tag of at most 1024 characters");
  if (spec.series.size() > 10000) throw BadUsage("at most 10000 series per read");
  std::map<std::string, Series> out;
  switch (spec.format) {
    case MetricsFormat::kTensorBoard: out = read_tensorboard_metrics(spec); break;
    case MetricsFormat::kJsonl: out = read_jsonl_metrics(spec); break;
    case MetricsFormat::kMllog: out = read_mllog_metrics(spec); break;
    case MetricsFormat::kCsv: out = read_csv_metrics(spec); break;
    case MetricsFormat::kMegatron: return read_megatron_metrics(spec);  // marks by its value_precision
    case MetricsFormat::kTorchtitan: out = read_torchtitan_metrics(spec); break;
    case MetricsFormat::kHfTrainer: out = read_hf_trainer_metrics(spec); break;
    case MetricsFormat::kMlflow: out = read_mlflow_metrics(spec); break;
  }
  // The precision guard: values a source rounded are marked so.
  for (auto& [name, s] : out) s.rounded = decimal_grid(s.values, s.dtype == Series::Dtype::kFloat32);
  return out;
}

}  // namespace lockstep
