// `lockstep bisect`: the commit that moved a curve. Between a good and a
// bad revision it walks the first-parent line, writes each tested commit's
// files into a temporary folder of its own (machine/git_commits.h: the
// user's work tree, index, HEAD and `git bisect` state are never touched),
// optionally builds there, runs the smokes through the Launcher seam, and
// compares each run with the good end's run record as check compares
// (compare/compare.h: lanes and the smoke's tolerances; never the goldens
// of a step, which may have been re-blessed inside the range).
//
//   BisectOptions o;  o.good = "v1.2";  o.bad = "HEAD";  o.smokes = {"smoke/digits-cnn.json"};
//   SmokeLauncher launcher;
//   BisectResult r = bisect(o, launcher);
//   r.found;  r.first_bad.describe();  r.divergence;   // exit 1 when found
//
// The ends first, `repeats` runs each held bit for bit: a good end whose
// runs differ, or a bad end whose runs differ, is flaky (exit 4, naming
// it); a bad end that passes against the good end's record has nothing to
// bisect (exit 2). Then each step, the commit nearest the middle of what is
// left: its runs agree and pass → good; fail → bad; differ → rerun up to
// `repeats` times, then skip; a smoke missing or refused at that commit, a
// failed build or run → skip with the reason (git bisect's skip).
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "compare/verdict.h"
#include "core/error.h"
#include "core/job_slots.h"
#include "launch/launcher.h"
#include "machine/git_commits.h"

namespace lockstep {

/// What bisect is asked.
struct BisectOptions {
  std::string good;              ///< a revision whose smokes pass
  std::string bad;               ///< a later revision, on good's first-parent line, whose smokes fail
  /// Smoke configs or folders, relative to the repository's root (as at
  /// each commit); default the smoke/ folder.
  std::vector<std::string> smokes = {"smoke"};
  std::string build;             ///< shell command run in a commit's folder before its runs ("": none)
  int64_t build_timeout_s = 3600;
  int repeats = 2;               ///< runs per commit, held bit for bit; reruns of a step whose runs differ
  std::string repo = ".";        ///< a folder of the repository
  std::string out_dir = "lockstep-out";  ///< records and build logs: <out_dir>/bisect/<commit>/
  JobSlots* slots = nullptr;     ///< a commit's runs at once while slots are free
  /// Called as each commit is judged (the command prints it): a bisect of
  /// an hour says where it is.
  std::function<void(const struct BisectStep&)> on_step;
};

/// What one tested commit was judged.
struct BisectStep {
  enum class Verdict { kGood, kBad, kSkip };
  CommitInfo commit;
  Verdict verdict = Verdict::kSkip;
  std::string why;       ///< bad: the first divergence; skip: the reason
  bool end = false;      ///< one of the two ends, checked first
  int runs = 0;
  double seconds = 0;    ///< the step's wall time
  double run_seconds = 0;  ///< of which its runs (the rest: export, build, comparison)
};

/// The outcome.
struct BisectResult {
  ExitCode code = ExitCode::kPass;  ///< 1 found, 2 nothing to bisect, 4 a flaky end
  bool found = false;
  CommitInfo first_bad;
  std::string divergence;  ///< the first bad commit's record against its parent's
  /// When skipped commits hide the boundary: the commits that may be the
  /// first bad one (the skipped ones and the first known bad), oldest first.
  std::vector<CommitInfo> candidates;
  std::string message;     ///< the conclusion in one line
  std::vector<BisectStep> steps;  ///< in the order tested (the ends first)
  int range = 0;           ///< commits after good, up to bad included
  int runs = 0;
};

/// Bisects as above. Throws Error: exit 2 for bad revisions or options,
/// exit 3 when the history or a commit's files cannot be read or written;
/// a flaky end or an empty range is a result, not an error.
BisectResult bisect(const BisectOptions& options, Launcher& launcher);

/// "good", "bad" or "skip".
const char* step_word(BisectStep::Verdict v);

}  // namespace lockstep
