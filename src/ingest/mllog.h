// Metrics from an MLPerf log (mlperf-logging's MLLOG lines), e.g. an
// evaluation accuracy per epoch:
//
//   [0] :::MLLOG {"namespace": "", "time_ms": 1700000000000, "event_type": "POINT_IN_TIME",
//                 "key": "eval_accuracy", "value": 0.7512, "metadata": {"epoch_num": 3}}
//
//   MetricsSpec spec;
//   spec.format = MetricsFormat::kMllog;
//   spec.path = "logs/result_0.txt";
//   spec.series = {{"eval_accuracy", "eval_accuracy"}};
//   spec.mllog_step = "epoch_num";            // or "samples_count", "step"
//   auto series = read_mllog_metrics(spec);   // same as read_metrics(spec)
//
// Only lines holding the ":::MLLOG" marker are read (anything before it,
// such as a rank prefix, is ignored); the step is metadata[spec.mllog_step].
#pragma once

#include <map>
#include <string>

#include "ingest/metrics.h"

namespace lockstep {

/// read_metrics for MetricsFormat::kMllog.
std::map<std::string, Series> read_mllog_metrics(const MetricsSpec& spec);

}  // namespace lockstep
