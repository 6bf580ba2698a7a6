// Metrics from a JSONL log: one JSON object per line, as a trainer writes
// with json.dumps(...) per step.
//
//   {"step": 0, "loss": 2.302, "lr": 0.1}
//   {"step": 1, "loss": NaN}                   <- Python's bare NaN/Infinity accepted
//
//   MetricsSpec spec;
//   spec.format = MetricsFormat::kJsonl;
//   spec.path = "out/metrics.jsonl";
//   spec.series = {{"loss", "loss"}, {"learning_rate", "lr"}};
//   auto series = read_jsonl_metrics(spec);      // same as read_metrics(spec)
//
// The step is spec.step_key. A line without a requested key is fine (not
// logged at that step); values are float64 numbers, NaN / Infinity /
// -Infinity tokens, or the strings "nan", "inf", "-inf". Blank lines are
// skipped.
#pragma once

#include <map>
#include <string>

#include "ingest/metrics.h"

namespace lockstep {

/// read_metrics for MetricsFormat::kJsonl.
std::map<std::string, Series> read_jsonl_metrics(const MetricsSpec& spec);

}  // namespace lockstep
