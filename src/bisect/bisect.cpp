#include "bisect/bisect.h"

#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <set>

#include "compare/compare.h"
#include "core/process.h"
#include "core/temp_folder.h"
#include "smoke/smoke_config.h"

extern char** environ;

namespace lockstep {

namespace fs = std::filesystem;

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// What one attempt at a commit found.
struct Judged {
  BisectStep::Verdict verdict = BisectStep::Verdict::kGood;
  std::string why;
  bool nondeterministic = false;  ///< a smoke's runs differed: rerun, or (at an end) flaky
  std::map<std::string, RunRecord> records;  ///< by smoke name, run 1 of each
  int runs = 0;
  double run_seconds = 0;
};

class Bisector {
 public:
  Bisector(const BisectOptions& o, Launcher& launcher, const GitHistory& git, const std::string& tmp)
      : o_(o), launcher_(launcher), git_(git), tmp_(tmp) {}

  // One commit: its files, its build, its runs (rerun while they differ,
  // up to `repeats` attempts unless `end`), judged against `reference`
  // (null: the good end, which is its own reference).
  BisectStep test(const CommitInfo& c, const std::map<std::string, RunRecord>* reference, bool end, Judged& judged) {
    auto t0 = Clock::now();
    BisectStep step;
    step.commit = c;
    step.end = end;
    std::string tree = tmp_ + "/" + c.hash.substr(0, 12);
    std::string dir = o_.out_dir + "/bisect/" + c.hash.substr(0, 12);
    git_.export_tree(c.hash, tree);
    struct RemoveTree {
      std::string p;
      ~RemoveTree() {
        std::error_code ec;
        fs::remove_all(p, ec);
      }
    } remove{tree};
    std::string built = build(tree, dir);
    if (!built.empty()) {
      judged.verdict = BisectStep::Verdict::kSkip;
      judged.why = built;
    } else {
      int attempts = end ? 1 : std::max(1, o_.repeats);
      for (int a = 0; a < attempts; ++a) {
        judged = judge(c, tree, dir + (a ? "/rerun-" + std::to_string(a) : ""), reference);
        step.runs += judged.runs;
        step.run_seconds += judged.run_seconds;
        if (!judged.nondeterministic || StopSignals::received()) break;
      }
      if (judged.nondeterministic && !end) {
        judged.verdict = BisectStep::Verdict::kSkip;
        judged.why = "nondeterministic in " + std::to_string(attempts) + " attempt(s): " + judged.why;
      }
    }
    step.verdict = judged.verdict;
    step.why = judged.why;
    step.seconds = since(t0);
    return step;
  }

 private:
  // `--build` in the commit's folder; "" when it passed (or there is none).
  std::string build(const std::string& tree, const std::string& dir) {
    if (o_.build.empty()) return "";
    fs::create_directories(dir);
    ProcessSpec p;
    p.what = "--build";
    p.argv = {"/bin/sh", "-c", o_.build};
    for (char** e = environ; *e; ++e) p.env.emplace_back(*e);
    p.cwd = tree;
    p.stdout_path = dir + "/build.log";
    p.stderr_path = dir + "/build.log";
    p.timeout_s = o_.build_timeout_s;
    ProcessOutcome out = run_process(p);
    if (out.ok()) return "";
    return "the build " + out.describe(o_.build_timeout_s) + " (log " + p.stderr_path + ")";
  }

  // The smokes at this commit: the configs under each SMOKE path of its tree.
  std::vector<std::string> smokes_at(const std::string& tree, std::string& missing) {
    std::vector<std::string> files;
    for (const auto& s : o_.smokes) {
      std::string path = (fs::path(tree) / s).string();
      std::error_code ec;
      if (!fs::exists(path, ec)) {
        missing += (missing.empty() ? "" : ", ") + s;
        continue;
      }
      std::vector<std::string> expanded;
      try {
        expanded = expand_smoke_args({path});
      } catch (const Error&) {
        missing += (missing.empty() ? "" : ", ") + s + " (no smoke config in it)";
      }
      for (auto& f : expanded) {
        f = fs::path(f).lexically_normal().string();
        if (std::find(files.begin(), files.end(), f) != files.end())
          throw BadUsage("bisect SMOKE " + s + ": " + fs::relative(f, tree).string() +
                         " is named twice (a folder and a config in it?): name each smoke once");
        files.push_back(f);
      }
    }
    return files;
  }

  Judged judge(const CommitInfo& c, const std::string& tree, const std::string& dir,
               const std::map<std::string, RunRecord>* reference) {
    Judged j;
    std::string missing;
    std::vector<std::string> files = smokes_at(tree, missing);
    if (!missing.empty()) {
      j.verdict = BisectStep::Verdict::kSkip;
      j.why = missing + " does not exist at " + c.hash.substr(0, 7);
      if (files.empty()) return j;
    }
    bool compared = false;
    for (const auto& file : files) {
      std::string rel = fs::relative(file, tree).string();
      SmokeConfig cfg;
      std::vector<RunRecord> runs;
      auto t0 = Clock::now();
      try {
        cfg = load_smoke_config(file);
        ChildRun base;
        base.smoke = file;
        base.share_data_pass = shares_data_pass(cfg);
        runs = run_children(launcher_, base, dir, cfg.name, o_.repeats, o_.slots, processes_per_run(cfg));
      } catch (const Error& e) {
        j.run_seconds += since(t0);
        if (j.verdict != BisectStep::Verdict::kBad) {
          j.verdict = BisectStep::Verdict::kSkip;
          j.why = rel + ": exit " + std::to_string(to_int(e.code())) + ": " + e.what();
        }
        continue;
      }
      j.run_seconds += since(t0);
      j.runs += static_cast<int>(runs.size());
      if (auto [i, diff] = first_repeat_difference(runs); !diff.empty()) {
        j.nondeterministic = true;
        j.why = rel + ": run " + std::to_string(i + 1) + " differs from run 1 at " + c.hash.substr(0, 7) + ": " + diff;
        return j;
      }
      j.records[cfg.name] = runs.front();
      if (!reference) continue;
      auto ref = reference->find(cfg.name);
      if (ref == reference->end()) continue;  // a smoke added inside the range: nothing to hold it to
      try {
        Verdict v = compare_records(runs.front(), ref->second, cfg.tolerance,
                                    {dir + "/" + cfg.name + "-1.json", "the good end's record", "good end", "run"});
        compared = true;
        if (!v.passed() && j.verdict != BisectStep::Verdict::kBad) {
          j.verdict = BisectStep::Verdict::kBad;
          j.why = cfg.name + ": " + v.first_divergence;
        }
      } catch (const Error& e) {
        if (j.verdict == BisectStep::Verdict::kGood) {
          j.verdict = BisectStep::Verdict::kSkip;
          j.why = rel + ": not comparable with the good end: " + e.what();
        }
      }
    }
    if (reference && !compared && j.verdict == BisectStep::Verdict::kGood) {
      j.verdict = BisectStep::Verdict::kSkip;
      j.why = "no smoke of the good end runs at " + c.hash.substr(0, 7);
    }
    return j;
  }

  const BisectOptions& o_;
  Launcher& launcher_;
  const GitHistory& git_;
  std::string tmp_;
};

// The commit nearest the middle of (lo, hi) not skipped yet; -1 when none.
int next_commit(int lo, int hi, const std::set<int>& skipped) {
  int best = -1;
  double mid = (lo + hi) / 2.0, dist = 1e300;
  for (int i = lo + 1; i < hi; ++i)
    if (!skipped.count(i) && std::fabs(i - mid) < dist) dist = std::fabs(i - mid), best = i;
  return best;
}

// The first divergence of `bad`'s records against `parent`'s.
std::string divergence(const std::map<std::string, RunRecord>& bad, const std::map<std::string, RunRecord>& parent,
                       const std::string& parent_name) {
  for (const auto& [name, rec] : bad) {
    auto p = parent.find(name);
    if (p == parent.end()) continue;
    try {
      Verdict v = compare_records(rec, p->second, TolerancePolicy{}, {"the first bad commit", parent_name, "parent", "run"});
      if (!v.passed()) return name + ": " + v.first_divergence;
    } catch (const Error& e) {
      return name + ": " + e.what();
    }
  }
  return "";
}

}  // namespace

const char* step_word(BisectStep::Verdict v) {
  switch (v) {
    case BisectStep::Verdict::kGood:
      return "good";
    case BisectStep::Verdict::kBad:
      return "bad";
    case BisectStep::Verdict::kSkip:
      return "skip";
  }
  return "?";
}

namespace {

// The options, refused before the history is read.
void check_options(const BisectOptions& o) {
  if (o.repeats < 1 || o.repeats > 20) throw BadUsage("--repeat: a run count in [1, 20]");
  if (o.smokes.empty()) throw BadUsage("bisect: no SMOKE to run");
  std::set<std::string> given;
  for (const auto& smoke : o.smokes) {
    fs::path p(smoke);
    if (smoke.empty()) throw BadUsage("bisect SMOKE '': a smoke config or folder, got an empty path");
    if (p.is_absolute())
      throw BadUsage("bisect SMOKE '" + smoke + "': a path relative to the repository's root, as each commit has it "
                     "(an absolute path would read the work tree, not the commit)");
    for (const auto& part : p)
      if (part == "..") throw BadUsage("bisect SMOKE '" + smoke + "': a path inside the repository (no '..')");
    std::string normal = p.lexically_normal().string();
    while (normal.size() > 1 && normal.back() == '/') normal.pop_back();
    if (!given.insert(normal).second)
      throw BadUsage("bisect SMOKE '" + smoke + "' is given twice: name each smoke once");
  }
}

// Why the bisect cannot go on after an end was judged ("" when it can),
// its exit class in `code`: a flaky end, an end that cannot be judged, a
// bad end that passes.
std::string end_problem(const Judged& j, bool good_end, const CommitInfo& c, ExitCode& code) {
  std::string which = (good_end ? "the good end " : "the bad end ") + c.describe();
  if (j.nondeterministic) {
    code = ExitCode::kNondeterministic;
    return which + " is flaky: " + j.why;
  }
  std::string why;
  if (good_end ? j.verdict != BisectStep::Verdict::kGood : j.verdict == BisectStep::Verdict::kSkip)
    why = which + " cannot be judged: " + j.why;
  else if (!good_end && j.verdict == BisectStep::Verdict::kGood)
    why = "nothing to bisect: " + which + " passes against the good end's records";
  if (!why.empty()) code = ExitCode::kBadInput;
  return why;
}

// The conclusion once (lo, hi) holds no commit left to test: the first bad
// commit and its divergence from its parent, or the candidates skips hid.
void conclude(const std::vector<CommitInfo>& line, int lo, int hi,
              std::map<int, std::map<std::string, RunRecord>>& records, BisectResult& r) {
  r.code = ExitCode::kRegression;
  if (hi - lo == 1) {
    r.found = true;
    r.first_bad = line[static_cast<size_t>(hi)];
    r.divergence = divergence(records[hi], records[lo], lo < 0 ? "the good end" : "its parent");
    r.message = "first bad commit: " + r.first_bad.describe();
    return;
  }
  for (int i = lo + 1; i <= hi; ++i) r.candidates.push_back(line[static_cast<size_t>(i)]);
  r.message = "the first bad commit is one of " + std::to_string(r.candidates.size()) +
              " (skipped commits hide the boundary): " + r.candidates.front().hash.substr(0, 7) + " .. " +
              r.candidates.back().hash.substr(0, 7);
}

}  // namespace

BisectResult bisect(const BisectOptions& o, Launcher& launcher) {
  check_options(o);
  GitHistory git(o.repo);
  CommitInfo good = git.resolve(o.good), bad = git.resolve(o.bad);
  std::vector<CommitInfo> line = git.first_parent_range(good.hash, bad.hash);
  BisectResult r;
  r.range = static_cast<int>(line.size());
  std::error_code ec;
  fs::remove_all(o.out_dir + "/bisect", ec);  // an earlier bisect's records
  TempFolder tmp("lockstep-bisect");
  StopSignals stop;
  Bisector b(o, launcher, git, tmp.path());
  // A step an interrupt cut short is not a result: it is not recorded.
  auto interrupted = [&] {
    if (!StopSignals::received()) return false;
    r.code = ExitCode::kEnvironment;
    r.message = "interrupted by signal " + std::to_string(StopSignals::received()) +
                "; the running smokes were stopped and the temporary folders removed";
    return true;
  };
  auto record = [&](const BisectStep& s) {
    if (interrupted()) return;
    r.steps.push_back(s);
    r.runs += s.runs;
    if (o.on_step) o.on_step(s);
  };

  // The ends: the good one is the reference, the bad one must fail against it.
  Judged g, x;
  record(b.test(good, nullptr, true, g));
  if (interrupted()) return r;
  if (r.message = end_problem(g, true, good, r.code); !r.message.empty()) return r;
  const std::map<std::string, RunRecord> reference = g.records;
  record(b.test(bad, &reference, true, x));
  if (interrupted()) return r;
  if (r.message = end_problem(x, false, bad, r.code); !r.message.empty()) return r;

  // The search: lo is known good (-1: the good end), hi known bad.
  std::map<int, std::map<std::string, RunRecord>> records = {{-1, reference}, {r.range - 1, x.records}};
  int lo = -1, hi = r.range - 1;
  std::set<int> skipped;
  for (int i; (i = next_commit(lo, hi, skipped)) >= 0;) {
    Judged j;
    record(b.test(line[static_cast<size_t>(i)], &reference, false, j));
    if (interrupted()) return r;
    if (j.verdict == BisectStep::Verdict::kSkip) {
      skipped.insert(i);
      continue;
    }
    records[i] = j.records;
    (j.verdict == BisectStep::Verdict::kGood ? lo : hi) = i;
  }
  conclude(line, lo, hi, records, r);
  return r;
}

}  // namespace lockstep
