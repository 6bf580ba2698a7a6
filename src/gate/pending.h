// The pending-golden flow (as in snapshot tools such as insta, with numeric
// tolerances): a failing `check` leaves <out>/<smoke>/<platform>.golden.new;
// `review` compares each with the current golden, and `accept` promotes
// them with a reason, after the same validation as bless.
//
//   PendingSet s = load_pending("lockstep-out", "goldens", "");
//   for (const auto& r : review_pending(s)) ...;            // verdicts against current
//   for (auto& a : accept_pending(s, "approved upgrade"))   // throws on any refusal
//     write_golden(a.target, a.golden);
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "compare/verdict.h"
#include "record/golden.h"
#include "smoke/smoke_config.h"

namespace lockstep {

/// Pending goldens found in a folder, with the smoke configs to judge them by.
struct PendingSet {
  std::string dir;          ///< where the *.golden.new files are
  std::string goldens_dir;  ///< the goldens they would replace
  std::string smoke_dir;    ///< the smoke configs (default: smoke/ beside the goldens)
  std::vector<std::string> files;              ///< *.golden.new, sorted byte-wise
  std::map<std::string, SmokeConfig> smokes;   ///< by name
  /// Pending goldens of a smoke `smoke_dir` no longer has (deleted or
  /// renamed since the check), each with why it is left out: review and
  /// accept say so and go on with `files`.
  std::vector<std::string> orphans;
};

/// Finds the pending goldens under `dir`; those filed under a smoke the
/// smoke folder does not hold go to `orphans`. Throws exit-2 Error when
/// there are none (or only orphans), `smoke_dir` is no folder (a pending
/// golden is held to its smoke's config), or a smoke config in it is
/// malformed.
PendingSet load_pending(const std::string& dir, const std::string& goldens_dir, const std::string& smoke_dir);

/// One pending golden against the current one.
struct PendingReview {
  std::string path;          ///< the pending file
  std::string reason;        ///< why it is pending (its provenance reason)
  Provenance provenance;     ///< the pending golden's
  Provenance current_provenance;  ///< the current golden's (when !is_new)
  std::string current_hash;       ///< the current golden's content_hash (when !is_new)
  std::string current;       ///< goldens/<smoke>/<platform>[@<stack>].json
  bool is_new = false;       ///< no current golden: nothing it replaces
  /// When is_new: the golden `check` compares such a run with instead (a
  /// same-family or, under a stack label, the unlabeled golden,
  /// golden_store.h find_golden), and stand_in_note() of it; "" for none.
  std::string stand_in, stand_in_note;
  /// pending vs current (or vs the stand-in when is_new), with the smoke's
  /// tolerances; empty when there is neither.
  std::optional<Verdict> verdict;
  std::vector<std::string> dropped;  ///< dropped_checks(current, pending): accept needs allow_narrower
  RunRecord pending, golden;       ///< the two records (for the HTML report; golden: current or stand-in)
};

/// What a golden replacing `current` with `pending` would stop checking:
/// the series current holds and pending lacks ("series grad_norm", "the
/// series a, b and 3 more": six named at most), then "batch probes", "trained-batch probes", "module trace",
/// "per-op hashes (trace.ops)", "parameter hashes", "initialisation statistics" and "determinism
/// contract" when current has them and pending has none, and "3 of the 14
/// batch probes" (probes, trained-batch probes, module trace entries,
/// parameter hashes, initialisation statistics, per-op hashes) when pending keeps
/// fewer, and a multi-seed golden's mean and std when pending has none. Empty when
/// pending checks all that current does (an imported loss curve replacing
/// a lockstep run's golden drops most of them).
std::vector<std::string> dropped_checks(const RunRecord& current, const RunRecord& pending);

/// Reads and compares every pending golden. Throws exit-2 Error for a
/// malformed or hand-edited pending or current golden.
std::vector<PendingReview> review_pending(const PendingSet& set);

/// A pending golden ready to be written at `target`.
struct AcceptedGolden {
  std::string path;    ///< the pending file (to remove once written)
  std::string target;  ///< goldens/<smoke>/<platform>.json
  Golden golden;       ///< with a fresh provenance stamp carrying `reason`
  std::vector<std::string> dropped;  ///< what the golden it replaces checked and this one does not
  /// "" when its runs were made at this work tree's commit; else what to
  /// know: its inputs (data, code) are those of that commit, which accept
  /// cannot compare with these (the next check does).
  std::string other_commit;
};

/// Validates every pending golden before any is accepted: a clean work
/// tree, and runs made from a clean one (the record's git.dirty, less the
/// goldens and pending folders), unless `allow_dirty` (recorded); its
/// content hash, a smoke config
/// of its name whose config hash it was made from, validate_contract and
/// validate_golden_candidate (gate/bless.h), and unless `allow_narrower`,
/// nothing the current golden checks dropped (dropped_checks). Throws
/// exit-2 Error naming the file at the first refusal; nothing is accepted
/// then.
std::vector<AcceptedGolden> accept_pending(const PendingSet& set, const std::string& reason, bool allow_dirty = false,
                                           bool allow_narrower = false);

}  // namespace lockstep
