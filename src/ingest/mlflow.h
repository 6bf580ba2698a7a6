// MLflow's metric history read into lockstep series (`lockstep import
// mlflow`, docs/trainers.md "Migrating from another tool"), from either of
// MLflow's stores:
//
//   the tracking database   an SQLite file (mlflow.db, "sqlite:///mlflow.db"):
//                           table metrics(key, value, timestamp, run_uuid,
//                           step, is_nan), read with libsqlite3, read-only;
//   the file store          a run's folder (mlruns/<experiment>/<run>/) whose
//                           metrics/<key> files hold "<timestamp> <value>
//                           <step>" lines (a key with '/' is a subfolder);
//                           or the mlruns folder itself with a run named.
//
//   MetricsSpec s;  s.format = MetricsFormat::kMlflow;  s.path = "mlflow.db";
//   s.run = "6f1c...";                                   // uuid or run name
//   s.series = {{"loss", "train/loss"}};
//   std::map<std::string, Series> curves = read_metrics(s);
//
// A metric's points are ordered by step, then timestamp (as MLflow shows
// its history); a step logged twice with other values is exit 2 naming
// both rows (lines). MLflow stores NaN as is_nan = 1 and +-infinity as
// +-1.7976931348623157e308 (float64's largest): both read back as NaN and
// +-inf. Torch-free.
#pragma once

#include <map>
#include <string>

#include "ingest/metrics.h"
#include "record/series.h"

namespace lockstep {

/// Reads the requested metrics (the --series tags are MLflow metric keys)
/// of run `spec.run` (its run_uuid, or its name when no uuid matches; may
/// be empty when the store holds one run). Throws exit-2 Error naming the
/// file and the row (line), or what was expected, for: a file that is
/// neither an SQLite database nor a run folder, a database without
/// MLflow's metrics table, no such run or several to choose from, a
/// missing key, a non-numeric value or step, and a conflicting re-log.
std::map<std::string, Series> read_mlflow_metrics(const MetricsSpec& spec);

}  // namespace lockstep
