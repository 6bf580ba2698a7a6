// The nightly history read back (`lockstep history DIR`, docs/history.md):
// per smoke and metric, night by night, the share of its tolerance the
// metric used against the golden; the nights its values changed at all and
// what else changed that night, and the first night they changed on a stack
// seen before (a change the stack does not explain: where a drift began);
// and each metric classified as the peers' regression reports do.
//
//   std::vector<SmokeHistory> h = load_history("history", "", /*skip_bad=*/false);
//   std::cout << render_history_text(h);
//   write_file_atomically("history.html", render_history_html(h));
//
// Classification, per metric over the nights it was compared (PyTorch's
// daily reports call two or more consecutive violations a regression and
// any other a suspicious one):
//   regression         the last kRegressionNights nights failed (use > 1);
//   suspicious         a night failed, not as the end of a run of failures;
//   drifting           no failure, and the use rose night after night over
//                      the last kDriftNights nights (at least 3);
//   steady             none of these;
//   insufficient data  fewer than 3 compared nights.
// Torch-free.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "history/ledger.h"

namespace lockstep {

inline constexpr size_t kRegressionNights = 2;
inline constexpr size_t kDriftNights = 5;

enum class Trend { kRegression, kSuspicious, kDrifting, kSteady, kInsufficientData };

/// "regression", "suspicious", "drifting", "steady", "insufficient data".
const char* trend_name(Trend trend);

/// What changed between one night and the night before it.
struct NightChange {
  size_t night = 0;                       ///< index into SmokeHistory::entries (> 0)
  std::vector<std::string> metrics;       ///< whose values changed (content hash) from the night before, by name
  /// Of those, the ones whose values also differ from the last night on
  /// this night's stack (none when the stack was not seen before): the
  /// changes the stack does not explain.
  std::vector<std::string> unexplained;
  std::vector<std::string> fingerprint;   ///< "field: before → after", determinism-relevant (the stack)
  /// The inputs that changed: "config optimizer.lr: 0.05 → 0.06" (each
  /// config value field, when both nights kept them), "data.file_xxh3:
  /// ab12 → cd34", "config.values_xxh3: ..." (lines that kept no config).
  std::vector<std::string> inputs;
  std::string commits;                    ///< "abc1234..def5678" when the commit moved, else ""
  bool golden_changed = false;            ///< compared with another golden (re-blessed)
  std::string runner;                     ///< "before → after" when the CI runner changed, else ""
  bool platform_changed = false;
  std::string platform;                   ///< "before → after" when the platform changed
  std::vector<std::string> rules;         ///< "metric: rule before → rule after", a tolerance edited
};

/// One metric of one smoke, night by night.
struct MetricHistory {
  std::string name;
  std::vector<double> use;   ///< per night: share of the tolerance used; NaN not compared / absent
  Trend trend = Trend::kInsufficientData;
  std::string trend_reason;  ///< e.g. "used 0.12, 0.20, 0.35, 0.51, 0.83 of its tolerance over the last 5 nights"
  /// The first night its values differ from the last night before it on
  /// the same stack (platform, relevant fingerprint and inputs): a
  /// change the stack does not explain, where a drift began; -1 never.
  long first_change = -1;
};

/// One smoke's ledger, analysed.
struct SmokeHistory {
  std::string smoke;
  /// The stack label of its nights (LOCKSTEP_STACK; "" none): a ledger
  /// holding two stacks' nights (a migration's two CI jobs) is analysed as
  /// two histories, never as one stack changing every night.
  std::string stack;
  std::string file;                    ///< its ledger
  std::vector<LedgerEntry> entries;    ///< the nights, in ledger (append) order
  std::vector<MetricHistory> metrics;  ///< by name
  /// The smoke's own verdicts classified as a metric's uses are (a night
  /// that did not pass counts as a failure, whatever failed).
  Trend verdicts = Trend::kInsufficientData;
  std::string verdicts_reason;
  std::vector<NightChange> changes;    ///< every night whose values or stack changed, in order
  std::vector<std::string> skipped;    ///< lines left out (--skip-bad)
};

/// Analyses one smoke's entries, in the order given: the ledger's (the
/// order of appending, which its chain holds; merges of two clones order
/// by time), never re-sorted by their clocks.
SmokeHistory analyse_history(std::string smoke, std::string file, std::vector<LedgerEntry> entries);

/// "digits-cnn", or "digits-cnn (stack torch2)" under a stack label.
std::string history_title(const SmokeHistory& h);

/// Reads every ledger in `dir` (<smoke>.jsonl), or only `smoke`'s, and
/// analyses each, one SmokeHistory per stack label its nights carry (the
/// unlabeled first). Throws exit-2 Error when `dir` is not a folder or holds
/// no ledger (of `smoke`), and whatever read_ledger throws.
std::vector<SmokeHistory> load_history(const std::string& dir, const std::string& smoke, bool skip_bad);

/// The text report: per smoke, each metric's class and last use, its
/// first change and what else changed that night, then the change points.
std::string render_history_text(const std::vector<SmokeHistory>& history);

/// The same as JSON ("lockstep_report": "history").
std::string render_history_json(const std::vector<SmokeHistory>& history);

/// A self-contained HTML page (no script, no network): one SVG trend plot
/// per metric (use per night, the tolerance line at 1, markers where the
/// stack or the golden changed, each night's commit and verdict as hover
/// text), the change-point table, and links to the nights' reports.
std::string render_history_html(const std::vector<SmokeHistory>& history);

}  // namespace lockstep
