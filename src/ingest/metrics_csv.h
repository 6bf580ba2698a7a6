// Metrics from a CSV file with a header row: a step column and one column
// per metric, as pandas' to_csv and pytest-regressions' dataframe_regression
// write them (a leading unnamed index column is ignored).
//
//   ,step,loss,lr
//   0,0,2.302585,0.1
//   1,1,nan,                                 <- empty cell: not logged at step 1
//
//   MetricsSpec spec;
//   spec.format = MetricsFormat::kCsv;
//   spec.path = "tests/data/metrics.csv";
//   spec.series = {{"loss", "loss"}, {"learning_rate", "lr"}};
//   auto series = read_csv_metrics(spec);    // same as read_metrics(spec)
//
// Cells are comma-separated, optionally in double quotes (RFC 4180, ""
// for a quote; a quoted cell spanning lines is refused). Numbers are
// float64; nan, NaN, inf, -inf, Infinity, -Infinity are accepted.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "ingest/metrics.h"

namespace lockstep {

/// read_metrics for MetricsFormat::kCsv.
std::map<std::string, Series> read_csv_metrics(const MetricsSpec& spec);

/// Splits one CSV line into `cells` (unquoted cells trimmed of spaces and
/// tabs; quoted ones unescaped). Returns "" or what is wrong: a quoted
/// cell left open at the end of the line, text after a closing quote.
std::string split_csv_line(std::string_view line, std::vector<std::string>& cells);

/// A CSV cell as a float64: a decimal number (optional sign, fraction,
/// exponent), or nan / inf / infinity in any case with an optional sign.
/// False for anything else, and for a number beyond float64's range.
bool parse_csv_number(std::string_view text, double& out);

/// A step cell: a non-negative integer ("12", "+12" as a value may be
/// signed, also "12.0" as pandas writes an integral float column). False
/// for anything else.
bool parse_csv_step(std::string_view text, int64_t& out);

}  // namespace lockstep
