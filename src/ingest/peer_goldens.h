// Readers of the curves other tools keep as goldens, so a team moving to
// lockstep brings them along (`lockstep import megatron|torchtitan|
// hf-trainer`, docs/trainers.md, "Migrating from another tool"):
//
//   Megatron-LM   golden_values_<env>_<platform>.json (and its _2nd resume
//                 file): {"lm loss": {"start_step": 1, "end_step": 50,
//                 "step_interval": 1, "values": {"1": 10.96455, ...}}, ...};
//                 string step keys (or, in older files, a list from
//                 start_step by step_interval); values int, float or "nan";
//   torchtitan    a loss file of "<step> <float repr>" lines, no header;
//   Hugging Face  trainer_state.json's "log_history": a list of objects with
//                 "step" and the logged keys ("loss", "grad_norm",
//                 "learning_rate", "epoch"), eval entries mixed in.
//
// Every reader's series are checked for a source's rounding (read_metrics
// marks Series::rounded, the precision guard); a Megatron metric whose
// block says "value_precision": "full" never is.
//
// Each is as strict as the other readers (ingest/series_builder.h): exit 2
// naming the file and the line or JSON key for malformed input, a
// non-numeric value or step, and one step logged twice with different
// values.
//
//   MetricsSpec s;  s.format = MetricsFormat::kMegatron;  s.path = "golden_values_dev_dgx_h100.json";
//   s.series = {{"loss", "lm loss"}};
//   std::map<std::string, Series> curves = read_metrics(s);
#pragma once

#include <map>
#include <string>

#include "ingest/metrics.h"
#include "record/series.h"

namespace lockstep {

/// Megatron-LM golden values (the --series tags are its metric names).
std::map<std::string, Series> read_megatron_metrics(const MetricsSpec& spec);

/// A torchtitan loss file: one series (one --series NAME=TAG, TAG unused).
std::map<std::string, Series> read_torchtitan_metrics(const MetricsSpec& spec);

/// Hugging Face Trainer's trainer_state.json (the tags are log keys).
std::map<std::string, Series> read_hf_trainer_metrics(const MetricsSpec& spec);

}  // namespace lockstep
