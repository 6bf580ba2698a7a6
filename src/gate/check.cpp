#include "gate/check.h"

#include <algorithm>
#include <iterator>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <map>
#include <optional>
#include <random>
#include <thread>

#include "compare/compare.h"
#include "core/error.h"
#include "core/float_bits.h"
#include "core/hash.h"
#include "core/process.h"
#include "gate/provenance.h"
#include "gate/smoke_outputs.h"
#include "record/platform_key.h"
#include "smoke/golden_store.h"

namespace lockstep {
namespace fs = std::filesystem;

std::pair<ExitCode, std::string> data_pass_mismatch(const SmokeConfig& cfg, const RunRecord& r, int repeat,
                                                    const std::string& records) {
  size_t i = 0;
  while (i < r.train_probes.size() && i < r.probes.size() && same_batch(r.train_probes[i], r.probes[i])) ++i;
  if (i >= r.train_probes.size() || i >= r.probes.size()) return {ExitCode::kPass, ""};
  const BatchProbe &t = r.train_probes[i], &p = r.probes[i];
  auto short_hash = [](const std::string& h) { return h.substr(0, 12) + "…"; };
  std::string what = t.sample_index_hash != p.sample_index_hash
                         ? "other samples (sample indices " + p.sample_index_hash + " in the data-only pass, " +
                               t.sample_index_hash + " in training): the sampler's order moved"
                         : t.inputs.xxh3_128 != p.inputs.xxh3_128
                               ? "the same samples with other inputs (xxh3 " + short_hash(p.inputs.xxh3_128) + " → " +
                                     short_hash(t.inputs.xxh3_128) + "): augmentation or noise drew other values"
                               : "the same samples with other labels (xxh3 " + short_hash(p.labels.xxh3_128) + " → " +
                                     short_hash(t.labels.xxh3_128) + ")";
  std::string head = "the training pass consumed other batches than the data-only pass, first at batch " +
                     std::to_string(i) + ": " + what;
  if (!cfg.has_trainer())
    return {ExitCode::kNondeterministic, head + " (records: " + records + ")"};
  std::string cause =
      "; the usual cause: the DataLoader's sampler or augmentation draws from a generator the model draws from "
      "too (torch's global generator, which dropout uses), so training's draws move the data stream. Give the "
      "data its own generator: DataLoader(..., generator=ctx.generator) from lockstep.apply_contract(), or "
      "torch.Generator().manual_seed(seed) (docs/trainers.md, \"A trainer that seeds itself\"). Records: " +
      records;
  if (repeat >= 2)
    return {ExitCode::kBadInput, head + ", though the " + std::to_string(repeat) +
                                     " runs repeated bit for bit: deterministic, but this smoke's data-only pass "
                                     "does not replay the training pass" + cause};
  return {ExitCode::kNondeterministic, head + " (one run: whether it repeats was not checked)" + cause};
}

Verdict stopped_verdict(const std::string& smoke, ExitCode code, const std::string& message) {
  Verdict v;
  v.smoke = smoke;
  v.code = code;
  v.lane = Lane::kNone;  // no golden was read
  // "  | " lines after the first are a quote (a failed trainer's stderr).
  std::string head = message;
  for (size_t nl = message.find("\n  | "); nl != std::string::npos && head.size() == message.size();) {
    head = message.substr(0, nl);
    size_t pos = nl + 1;
    while (pos < message.size()) {
      size_t end = message.find('\n', pos);
      std::string line = message.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
      v.quote.push_back(line.rfind("  | ", 0) == 0 ? line.substr(4) : line);
      if (end == std::string::npos) break;
      pos = end + 1;
    }
  }
  v.findings.push_back({Section::kStructure, "run", -1, "exit " + std::to_string(to_int(code)) + ": " + head});
  v.first_divergence = head;
  return v;
}

namespace {

// The run as a pending golden, <out>/<smoke>/<platform>.golden.new.
void add_pending(SmokeCheck& c, const RunRecord& run, const std::string& file, const CheckSmokeOptions& o,
                 int repeat, const std::string& why) {
  Golden g;
  g.record = run;
  g.provenance =
      stamp_provenance("check", "(pending review: " + why + ")", fs::absolute(file).parent_path().string(), repeat);
  c.pending = std::move(g);
  c.pending_path = pending_path(o.out_dir, run.smoke, golden_key(run.platform, run.stack));
}

// The resume check's two fresh runs: `resume_at` steps and a checkpoint,
// then a run that continues from it. They need nothing from the straight
// runs, so with spare job slots (check -j) they run beside them, the
// second as soon as the first has left its checkpoint; otherwise, or when
// their result is needed before a slot came free, finish() runs them in
// this thread, as a serial check would. A check that ends without them (a
// failed comparison) starts no further run: the destructor waits only for
// the one under way.
class ResumeRuns {
 public:
  ResumeRuns(Launcher& launcher, const ChildRun& base, int64_t resume_at, const std::string& dir)
      : launcher_(launcher), stop_(base), resume_(base) {
    stop_.out = dir + "/resume-part.json";
    stop_.stop_after = resume_at;
    stop_.checkpoint = dir + "/resume-at-" + std::to_string(resume_at) + ".ckpt";
    resume_.out = dir + "/resumed.json";
    resume_.resume = stop_.checkpoint;
    if (base.share_data_pass) resume_.data_pass = false;  // the first run's stands for it (take_data_pass)
  }
  ~ResumeRuns() {
    abandoned_ = true;
    int expected = 0;
    owner_.compare_exchange_strong(expected, 1);  // never started: nobody will
    if (slots_) slots_->notify();
    if (thread_.joinable()) thread_.join();
  }
  /// Lets the two runs start in a thread of their own as soon as `slots`
  /// has `n` free slots, unless finish() is reached first (it then runs
  /// them here).
  void start_early(JobSlots* slots, int n) {
    if (!slots || n > slots->capacity()) return;
    slots_ = slots;
    thread_ = std::thread([this, slots, n] {
      if (!slots->acquire_unless(n, [this] { return owner_ != 0; })) return;
      int expected = 0;
      if (owner_.compare_exchange_strong(expected, 2)) {
        try {
          run_both();
        } catch (...) {
          error_ = std::current_exception();
        }
      }
      slots->release(n);
    });
  }
  /// Runs both runs in this thread now, unless start_early's thread has
  /// them; a run's error is kept for finish(). Never throws.
  void run_now() noexcept {
    int expected = 0;
    if (!owner_.compare_exchange_strong(expected, 2)) return;
    try {
      run_both();
    } catch (...) {
      error_ = std::current_exception();
    }
  }
  /// The resumed run's record, once both runs have ended; throws what a
  /// run threw. `held`: the slots the calling thread holds, lent while it
  /// waits for the runs' thread.
  const RunRecord& finish(int held) {
    int expected = 0;
    bool here = owner_.compare_exchange_strong(expected, 1);
    if (slots_) slots_->notify();  // a waiting thread gives up
    if (thread_.joinable()) {
      SlotLoan idle(here ? nullptr : slots_, held);
      thread_.join();
    }
    if (here) run_both();
    if (error_) std::rethrow_exception(error_);
    return resumed_;
  }

 private:
  void run_both() {
    launcher_.run_to_checkpoint(stop_);
    if (!abandoned_) resumed_ = launcher_.run(resume_);
  }

  Launcher& launcher_;
  ChildRun stop_, resume_;
  JobSlots* slots_ = nullptr;
  std::atomic<int> owner_{0};  ///< 0: not started; 1: finish() runs them; 2: the thread does
  std::atomic<bool> abandoned_{false};
  std::thread thread_;
  std::exception_ptr error_;
  RunRecord resumed_;
};

// Step 1's failure: run `i` differs from run 1 in the same job (exit 4),
// with the same reports as a regression, comparing run N with run 1.
// With three runs or more, how many distinct results they gave
// ("2 distinct results in 5 runs") and a note per result: its runs, and
// where it first differs from run 1.
std::string count_distinct(const std::vector<RunRecord>& runs, std::vector<std::string>& notes) {
  if (runs.size() < 3) return "";
  const DistinctResults d = distinct_results(runs);
  for (size_t g = 0; g < d.groups.size(); ++g) {
    std::string members;
    for (size_t k : d.groups[g]) members += (members.empty() ? "" : ", ") + std::to_string(k + 1);
    notes.push_back("result " + std::to_string(g + 1) + " of " + std::to_string(d.groups.size()) + ": run" +
                    (d.groups[g].size() > 1 ? "s " : " ") + members +
                    (g == 0 ? "" : "; first difference from run 1: " + d.first_difference[g]));
  }
  return " (" + std::to_string(d.groups.size()) + " distinct results in " + std::to_string(runs.size()) + " runs)";
}

// How nondeterministic: when a check's repeats differ, more runs
// (run-N.json on from the next number) until --distinct-runs in all, each
// given run 1's data-only pass where the runs share one.
void add_distinct_runs(Launcher& launcher, const ChildRun& base, const CheckSmokeOptions& o, int per_run,
                       const std::string& dir, std::vector<RunRecord>& runs) {
  const int more = o.distinct_runs - static_cast<int>(runs.size());
  if (more <= 0) return;
  const int next = static_cast<int>(runs.size()) + 1;
  std::vector<RunRecord> extra = run_children(launcher, base, dir, "run", more, o.slots, per_run, per_run, {}, next);
  for (size_t k = 0; base.share_data_pass && k < extra.size(); ++k)
    take_data_pass(extra[k], runs.front(), dir + "/run-" + std::to_string(next + static_cast<int>(k)) + ".json");
  runs.insert(runs.end(), std::make_move_iterator(extra.begin()), std::make_move_iterator(extra.end()));
}

// Perturbed repeats: what run 2's variation says about a difference
// between the repeats (`runs`: run 1, the varied run 2, and the plain runs
// after it). When run 2 alone differs and at least one plain run after it
// agrees with run 1, the difference shows only under the variation: each
// kind is then tried alone (vary-<kind>.json, one run each) and the kinds
// that move the values alone are named.
struct VariedRepeat {
  bool only_varied = false;   ///< run 2 alone differs, the plain runs agree
  std::string headline;       ///< the first divergence's opening, when only_varied
  std::vector<std::string> notes;
};

VariedRepeat judge_varied_repeat(Launcher& launcher, const ChildRun& base, const ChildRun& repeats,
                                 const std::vector<RunRecord>& runs, const CheckSmokeOptions& o, int per_run,
                                 const std::string& smoke_file, const std::string& dir) {
  VariedRepeat out;
  const RunVariation& v = repeats.variation;
  if (repeats.varied_run != 2 || v.empty() || runs.size() < 2) return out;
  const std::string what = describe_variation(v);
  if (first_bit_difference(runs[1], runs[0]).empty()) {
    out.notes.push_back("run 2 varied what must not matter (" + what + ") and matched run 1 bit for bit");
    return out;
  }
  bool plain_agree = true;
  for (size_t k = 2; k < runs.size() && plain_agree; ++k) plain_agree = first_bit_difference(runs[k], runs[0]).empty();
  if (runs.size() < 3) {
    out.notes.push_back("run 2 varied what must not matter (" + what + "); no plain run after it says whether the "
                        "variation alone moves the values (check --distinct-runs 3 or more)");
    return out;
  }
  if (!plain_agree) {
    out.notes.push_back("run 2 varied what must not matter (" + what + "); plain runs differ as well, so the "
                        "variation is not the only cause");
    return out;
  }
  // Each kind alone, to name the one(s) that move the values.
  const std::vector<std::string> kinds = varied_kinds(v);
  std::vector<RunRecord> alone(kinds.size());
  std::vector<std::function<void()>> tasks;
  for (size_t k = 0; k < kinds.size(); ++k)
    tasks.push_back([&, k] {
      ChildRun r = base;
      r.overrides.vary = only_kind(v, kinds[k]);
      r.out = dir + "/vary-" + kinds[k] + ".json";
      if (base.share_data_pass) r.data_pass = false;
      alone[k] = launcher.run(r);
      take_data_pass(alone[k], runs[0], r.out);
    });
  run_tasks(tasks, o.slots, per_run, per_run);
  std::string files;
  std::vector<std::string> moving;  // the kinds that move the values alone
  for (size_t k = 0; k < kinds.size(); ++k) {
    if (first_bit_difference(alone[k], runs[0]).empty()) continue;
    moving.push_back(kinds[k]);
    files += (files.empty() ? "" : ", ") + dir + "/vary-" + kinds[k] + ".json";
  }
  const std::string movers = describe_variation(with_kinds(v, moving));
  const RunVariation minimal = moving.empty() ? v : with_kinds(v, moving);
  std::string plain = "1";
  for (size_t k = 2; k < runs.size(); ++k) plain += (k + 1 == runs.size() ? " and " : ", ") + std::to_string(k + 1);
  out.only_varied = true;
  out.headline = "run 2 differs from run 1 only when it varies what must not matter (" + what + "): the plain runs " +
                 plain + " agree bit for bit; " +
                 (movers.empty() ? std::string("no kind alone moves the values, their combination does")
                                 : "alone, " + movers + " moves the values (" + files + ")");
  out.notes.push_back("to see it again: lockstep run " + smoke_file + " --record plain.json; lockstep run " +
                      smoke_file + " --vary " + variation_spec(minimal) +
                      " --record varied.json; lockstep compare varied.json plain.json (exit 1 names the first "
                      "difference; docs/equivalence.md, \"Perturbed repeats\")");
  return out;
}

SmokeCheck nondeterministic_check(const std::string& smoke, const std::vector<RunRecord>& runs, size_t i,
                                  const std::string& diff, const std::string& dir, const VariedRepeat& varied) {
  SmokeCheck c;
  c.smoke = smoke;
  c.report_dir = dir;
  c.ran = true;
  std::string n = std::to_string(i + 1);
  c.verdict = compare_runs(runs[i], runs.front(), {dir + "/run-" + n + ".json", dir + "/run-1.json", "run 1", "run " + n});
  c.verdict.smoke = smoke;
  c.verdict.code = ExitCode::kNondeterministic;
  std::vector<std::string> results;
  const std::string count = count_distinct(runs, results);
  c.verdict.notes.insert(c.verdict.notes.begin(), results.begin(), results.end());
  c.verdict.notes.insert(c.verdict.notes.begin() + static_cast<std::ptrdiff_t>(results.size()), varied.notes.begin(),
                         varied.notes.end());
  c.verdict.first_divergence = varied.only_varied
                                   ? varied.headline + "; first difference: " + diff
                                   : "run " + n + " differs from run 1 in the same job" + count + "; first difference: " + diff;
  c.verdict.lane_reason = "run " + n + " against run 1 of this job on one machine, bit for bit";
  c.compared = true;
  c.run = runs[i];
  c.golden = runs.front();
  c.records = "records: " + dir + "/run-1.json, " + dir + "/run-" + n + ".json";
  return c;
}

// When the golden's data-only probes stood for today's pass
// (golden_data_pass_stands), the comparison held them against themselves:
// those rows say nothing, and are left out of the verdict and its count
// of values compared (the data note says what stood in).
void drop_self_compared_probes(Verdict& v) {
  auto self = [](const SeriesResult& r) { return r.section == Section::kData && r.name.rfind("probes.", 0) == 0; };
  for (const auto& r : v.results)
    if (self(r)) v.values_checked -= r.checked;
  v.results.erase(std::remove_if(v.results.begin(), v.results.end(), self), v.results.end());
}

// Step 3: the run against its golden (found exactly, or one of the
// platform's family, said in a note), trainer.packages applied as the
// config says now on both sides (no re-bless needed).
Verdict compare_with_golden(const SmokeConfig& cfg, const RunRecord& run, Golden& golden, const GoldenLookup& found,
                            const std::string& dir) {
  RunRecord judged = run;
  apply_package_relevance(cfg.trainer, judged.fingerprint);
  apply_package_relevance(cfg.trainer, golden.record.fingerprint);
  Verdict v = compare_records(judged, golden.record, cfg.tolerance, {dir + "/run-1.json", found.path});
  if (std::string note = stand_in_note(found, run.platform, run.stack); !note.empty())
    v.notes.insert(v.notes.begin(), note);
  return v;
}

// Step 3's failure, held up by `rerun_failing` fresh reruns on this
// runner: one that is not bit-identical to the failing run makes the
// verdict exit 4 (the runner, not the change, moved the values), else the
// failure stands, reproduced. Returns true when the verdict became exit 4.
bool rerun_failure(Launcher& launcher, const ChildRun& base, const std::string& dir, const RunRecord& run,
                   int reruns, JobSlots* slots, int per_run, Verdict& v) {
  std::vector<RunRecord> again = run_children(launcher, base, dir, "rerun", reruns, slots, per_run, per_run);
  auto it = run.fingerprint.find("runner");
  std::string runner = it == run.fingerprint.end() ? "this runner" : it->second.value;
  std::string k = std::to_string(reruns);
  // A changed input, or another contract, fails whatever the values do:
  // reruns that differ say this runner is nondeterministic too, but the
  // failure stands.
  bool definite = v.lane == Lane::kContractMismatch ||
                  std::any_of(v.findings.begin(), v.findings.end(), [](const Finding& f) { return f.section == Section::kInput; });
  for (size_t i = 0; i < again.size(); ++i) {
    take_data_pass(again[i], run, dir + "/rerun-" + std::to_string(i + 1) + ".json");  // a trainer smoke's make none
    std::string diff = first_bit_difference(again[i], run);
    if (diff.empty()) continue;
    if (definite) {
      v.notes.push_back("rerun " + std::to_string(i + 1) + " of " + k + " on " + runner +
                        " differs from the failing run bit for bit (" + diff +
                        "): this runner is nondeterministic for the smoke too; the failure stands (" +
                        (v.lane == Lane::kContractMismatch ? "another determinism contract" : "a changed input") +
                        " fails whatever the values do)");
      return false;
    }
    v.code = ExitCode::kNondeterministic;
    v.first_divergence = "nondeterministic on " + runner + ": rerun " + std::to_string(i + 1) + " of " + k + " (" +
                         dir + "/rerun-" + std::to_string(i + 1) + ".json) differs from the failing run " +
                         "bit for bit (" + diff + "), so the failure against the golden is not evidence of a "
                         "regression; it said: " + v.first_divergence;
    return true;
  }
  v.first_divergence += " (reproduced " + k + " of " + k + ")";
  v.notes.push_back(k + " fresh rerun(s) on " + runner + " reproduced the failing run bit for bit");
  return false;
}

// Step 4's failure: the resumed run differs from the uninterrupted one
// (exit 1), in the lane the golden comparison chose (`lane`, or none).
SmokeCheck resume_failure(const SmokeConfig& cfg, const std::string& diff, Lane lane, const std::string& dir) {
  SmokeCheck c;
  c.ran = true;
  c.smoke = cfg.name;
  c.report_dir = dir;
  c.verdict = stopped_verdict(cfg.name, ExitCode::kRegression,
                              "the run resumed from a checkpoint at step " + std::to_string(cfg.resume_at) +
                                  " differs from the uninterrupted run; first difference: " + diff);
  c.verdict.lane = lane;
  c.records = "records: " + dir + "/run-1.json, " + dir + "/resumed.json";
  return c;
}


// The note of a resume check that held.
std::string resumed_note(const SmokeConfig& cfg) {
  return "resumed at step " + std::to_string(cfg.resume_at) + " from a checkpoint in " +
         (cfg.distributed.configured ? std::to_string(cfg.distributed.world_size) + " fresh rank processes"
                                     : std::string("a fresh process")) +
         ": bit-identical to the uninterrupted run";
}

// Whether the golden's data-only pass stands for today's: its data-only
// probes cover every batch trained on today, bit for bit, and were made
// with today's data-only arguments (config trainer.data_only*, recorded in
// both). Then a pass now would show those same batches.
bool golden_data_pass_stands(const RunRecord& golden, const RunRecord& run) {
  if (golden.config.empty() || run.train_probes.empty() || golden.probes.size() < run.train_probes.size()) return false;
  for (size_t i = 0; i < run.train_probes.size(); ++i)
    if (!same_batch(golden.probes[i], run.train_probes[i])) return false;
  auto data_only = [](const std::map<std::string, std::string>& config) {
    std::map<std::string, std::string> out;
    for (auto it = config.lower_bound("trainer.data_only"); it != config.end() && it->first.rfind("trainer.data_only", 0) == 0; ++it)
      out.insert(*it);
    return out;
  };
  return data_only(golden.config) == data_only(run.config);
}

// Step 2 for a trainer smoke whose runs made no data-only pass (a Python
// process of its own, as costly as a training run; only a smoke with one
// DataLoader worker count: several run it beside run 1, as bless does,
// and get that note; a built-in smoke's runs made theirs: no note).
// Where the golden's pass stands for today's (golden_data_pass_stands),
// the runs take its probes. Otherwise (no golden, other batches, other
// data-only arguments) the pass runs now, once (<dir>/data-only.json), and
// its probes are the runs'. Every run's record (<dir>/run-N.json) is
// written again with them: the records judged. Returns the verdict's note.
std::string settle_data_pass(Launcher& launcher, const ChildRun& base, const SmokeConfig& cfg,
                             const std::string& dir, const RunRecord* golden, std::vector<RunRecord>& runs) {
  if (base.share_data_pass && cfg.trainer.workers.size() > 1) {  // it ran beside run 1 (run_children)
    std::string counts;
    for (int w : cfg.trainer.workers) counts += (counts.empty() ? "" : ", ") + std::to_string(w);
    return "the data-only pass ran beside run 1 with " + counts + " DataLoader workers: the same batches bit for bit";
  }
  if (base.data_pass) return "";  // a built-in smoke's runs make their own
  RunRecord& run = runs.front();
  std::string note;
  if (golden && golden_data_pass_stands(*golden, run)) {
    run.probes = golden->probes;
    note = "no data-only pass ran: the " + std::to_string(run.train_probes.size()) +
           " batches trained on are the golden's data-only batches bit for bit, with the same trainer.data_only";
  } else {
    ChildRun pass = base;
    pass.train = false;
    pass.data_pass = true;
    pass.out = dir + "/data-only.json";
    run.probes = launcher.run(pass).probes;
    note = std::string("the data-only pass ran once, after the runs (") +
           (golden ? "the golden's data-only batches are not the ones trained on, or trainer.data_only changed"
                   : "no golden yet") + ")";
  }
  write_run_record(dir + "/run-1.json", run);
  for (size_t i = 1; i < runs.size(); ++i) take_data_pass(runs[i], run, dir + "/run-" + std::to_string(i + 1) + ".json");
  return note;
}

// The smoke's `repeat` fresh runs of `base` (<dir>/run-N.json), with the
// resume check's two runs and the equivalence lanes' (`lanes`, when
// given) set going. With room for two runs at once (check -j), those go
// first in this thread: the resume chain is the smoke's longest (the
// second run needs the first's checkpoint), the lanes need nothing from
// the runs, and the repeats take slots as they come free; a last smoke
// otherwise ends on them with a core idle. With one slot the resume runs
// follow the comparison (finish()), and `lanes` is not called: a serial
// check runs the lanes only once the golden passed. This thread holds
// `per_run` slots (the caller's), lent while it waits.
std::vector<RunRecord> fresh_runs(Launcher& launcher, const ChildRun& base, const SmokeConfig& cfg,
                                  const CheckSmokeOptions& o, int repeat, int per_run, ResumeRuns& resume_runs,
                                  const std::string& dir, const std::function<void()>& lanes) {
  std::function<void()> chain;
  // The base runs' error comes first, as at -j 1: a broken config fails
  // every run, and is the base run's to report, not a lane's.
  std::exception_ptr chain_error;
  const bool room = o.slots && o.slots->capacity() >= 2 * per_run;
  if (room && (cfg.resume_at > 0 || lanes))
    chain = [&] {
      try {
        if (cfg.resume_at > 0) resume_runs.run_now();
        if (lanes) lanes();
      } catch (...) {
        chain_error = std::current_exception();
      }
    };
  else if (cfg.resume_at > 0) resume_runs.start_early(o.slots, per_run);
  std::vector<RunRecord> runs = run_children(launcher, base, dir, "run", repeat, o.slots, per_run, per_run, chain);
  if (chain_error) std::rethrow_exception(chain_error);
  return runs;
}

// Exit 2 for a smoke with no golden for `run`'s platform and stack label
// (nor its family).
Verdict no_golden_verdict(const std::string& smoke, const std::string& file, const std::string& root,
                          const RunRecord& run) {
  std::string label = run.stack.empty() ? "" : std::string(kStackVariable) + "=" + run.stack + " ";
  return stopped_verdict(smoke, ExitCode::kBadInput,
                         golden_path(root, smoke, golden_key(run.platform, run.stack)) + ": no golden for smoke '" +
                             smoke + "' on platform " + run.platform +
                             (run.stack.empty() ? "" : " under stack label " + run.stack + " nor unlabeled") +
                             " (nor any of its family); create one with `" + label + "lockstep bless " + file +
                             " --reason \"...\"`");
}

// Step 1's child run. A trainer smoke's runs leave its data-only pass (a
// Python process of its own) to step 2 (settle_data_pass); with several
// worker counts the first run makes it and the others take it.
// `check --world-size N` over a suite sizes the multi-rank smokes; a
// single-process smoke runs as it is.
ChildRun check_run(const SmokeConfig& cfg, const std::string& file, const CheckSmokeOptions& o) {
  ChildRun base;
  base.smoke = file;
  base.overrides = o.overrides;
  const bool several_counts = cfg.trainer.workers.size() > 1;
  base.data_pass = !shares_data_pass(cfg) || several_counts;
  base.share_data_pass = shares_data_pass(cfg) && several_counts;
  if (!cfg.distributed.configured) base.overrides.world_size = 0;
  return base;
}

// How far lane verdict `v` (passed) was from the base run, for its note:
// "bit for bit", or the series and step of the largest relative difference.
std::string lane_distance(const Verdict& v) {
  const SeriesResult* worst = nullptr;
  for (const auto& r : v.results)
    if (r.max_abs > 0 && (!worst || r.max_rel > worst->max_rel || std::isnan(worst->max_rel))) worst = &r;
  if (!worst) return "bit for bit";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3g", std::isnan(worst->max_rel) ? worst->max_abs : worst->max_rel);
  return std::string("largest difference ") + (std::isnan(worst->max_rel) ? "|Δ| " : "rel ") + buf + " in " +
         worst->name + " at step " + std::to_string(worst->max_rel_at >= 0 ? worst->max_rel_at : worst->max_abs_at);
}

// Equivalence lane `lane`'s child run into `out`: `base` with the lane's
// name; check's own overrides stand for the base run, except for the
// fields the lane sets.
ChildRun lane_child(const ChildRun& base, const EquivalenceVariant& lane, const std::string& out) {
  ChildRun r = base;
  r.variant = lane.name;
  if (lane.sets("determinism", "intra_op_threads")) r.overrides.intra_op_threads = 0;
  if (lane.sets("data", "workers")) r.overrides.workers = -1;
  if (lane.sets("distributed", "world_size")) r.overrides.world_size = 0;
  r.out = out;
  if (base.share_data_pass || !base.data_pass) r.data_pass = r.share_data_pass = false;  // run 1's stands
  return r;
}

// One fresh run of equivalence lane `lane` into `out`. Its failure is its
// own error, naming the lane.
RunRecord run_lane(Launcher& launcher, const ChildRun& base, const EquivalenceVariant& lane, const std::string& out) {
  try {
    return launcher.run(lane_child(base, lane, out));
  } catch (const Error& e) {
    throw Error(e.code(), "equivalence lane " + lane.name + " (" + lane.describe() + "): " + e.what());
  }
}

// Whether lane `lane` of `cfg` may run in a process after another lane
// (Launcher::run_together): a built-in smoke in one process whose config,
// as the lane loads it, keeps the base run's process-wide settings
// (determinism mode, inter-op threads) and stays a built-in smoke in one
// process. Judged on the loaded config, not on the keys the lane sets (a
// lane may remove a section); the child refuses the same
// (plan_then_variant), so what passes here runs there.
bool shares_lane_process(const SmokeConfig& cfg, const EquivalenceVariant& lane) {
  if (cfg.has_trainer() || cfg.distributed.configured) return false;
  const SmokeConfig own = load_smoke_config(cfg.file, lane.name);
  return !own.has_trainer() && !own.distributed.configured && own.mode == cfg.mode &&
         own.inter_op_threads == cfg.inter_op_threads;
}

// Which of `cfg`'s lanes run in which process (indices into
// cfg.equivalence, in name order): the lanes that may share one
// (shares_lane_process) and whose child runs differ in name and record
// only (check's --intra-op-threads / --workers stand for every lane but
// the ones that set them) spread over up to `beside` processes; every
// other lane alone.
std::vector<std::vector<size_t>> lane_processes(const ChildRun& base, const SmokeConfig& cfg, int beside) {
  std::vector<std::vector<size_t>> groups;
  std::map<std::vector<std::string>, std::vector<size_t>> shared;  // by the overrides' flags
  for (size_t i = 0; i < cfg.equivalence.size(); ++i) {
    if (shares_lane_process(cfg, cfg.equivalence[i]))
      shared[override_args(lane_child(base, cfg.equivalence[i], "").overrides)].push_back(i);
    else
      groups.push_back({i});
  }
  for (const auto& [flags, lanes] : shared) {
    const size_t k = std::min(lanes.size(), static_cast<size_t>(std::max(beside, 1)));
    for (size_t g = 0; g < k; ++g) {
      groups.emplace_back();
      for (size_t j = g; j < lanes.size(); j += k) groups.back().push_back(lanes[j]);
    }
  }
  std::sort(groups.begin(), groups.end());
  return groups;
}

// Step 5's runs: a fresh run of each equivalence lane
// (<dir>/variant-<name>.json), side by side while `slots` allow (this
// thread holds `per_run`). A built-in smoke's lanes that may share a
// process run in as few processes as there are slots beside the base
// run's (one at -j 1 and -j 2): a lane then costs its training, not
// another LibTorch start-up (docs/decisions.md, decision 36). A failed
// run is its own error, naming its lanes.
std::vector<RunRecord> run_lanes(Launcher& launcher, const ChildRun& base, const SmokeConfig& cfg,
                                 const std::string& dir, JobSlots* slots, int per_run) {
  std::vector<RunRecord> records(cfg.equivalence.size());
  const int beside = slots ? slots->capacity() / std::max(per_run, 1) - 1 : 1;
  const std::vector<std::vector<size_t>> groups = lane_processes(base, cfg, beside);
  std::vector<std::function<void()>> tasks;
  for (const auto& group : groups)
    tasks.push_back([&, group] {
      std::vector<ChildRun> children;
      std::string lanes;  // "a (set ...), b (set ...)"
      for (size_t i : group) {
        const EquivalenceVariant& lane = cfg.equivalence[i];
        children.push_back(lane_child(base, lane, dir + "/variant-" + lane.name + ".json"));
        lanes += (lanes.empty() ? "" : ", ") + lane.name + " (" + lane.describe() + ")";
      }
      try {
        std::vector<RunRecord> got = launcher.run_together(children);
        for (size_t j = 0; j < group.size(); ++j) records[group[j]] = std::move(got[j]);
      } catch (const Error& e) {  // several: the message names the lane first ("lane NAME: ...")
        throw Error(e.code(), (group.size() > 1 ? "equivalence lanes " + lanes + " in one process: "
                                                : "equivalence lane " + lanes + ": ") + e.what());
      }
    });
  run_tasks(tasks, slots, per_run, slots ? per_run : 0);
  return records;
}

// When `lane` splits the batch (micro-batches, ranks, another batch size)
// and the model couples a batch's samples, why no rule makes them agree:
// BatchNorm normalises over each piece's samples, dropout draws its masks
// per forward. "" when the lane splits nothing. A trainer's or a
// TorchScript model is not known here: the note names both as the usual
// causes.
std::string batch_coupling(const SmokeConfig& cfg, const EquivalenceVariant& lane) {
  bool splits = lane.sets("optimizer", "micro_batches") || lane.sets("distributed", "world_size") ||
                lane.sets("data", "batch_size");
  for (const auto& a : lane.args) splits = splits || a.find("accum") != std::string::npos;
  if (!splits) return "";
  // The global batch (batch_size x world_size) must be the base run's, or
  // the lane is another training: a config mistake, not a rule's. What
  // the lane sets is read from its config as its run loads it (the merge
  // patch applied); the rest is the base run's (check's overrides kept).
  if (!cfg.has_trainer()) {
    const SmokeConfig own = load_smoke_config(cfg.file, lane.name);
    auto world_of = [](const SmokeConfig& c) -> int64_t { return c.distributed.configured ? c.distributed.world_size : 1; };
    const int64_t base_global = cfg.data.loader.batch_size * world_of(cfg);
    const int64_t batch = lane.sets("data", "batch_size") ? own.data.loader.batch_size : cfg.data.loader.batch_size;
    const int64_t world = lane.sets("distributed", "world_size") ? world_of(own) : world_of(cfg);
    if (batch * world != base_global)
      return "this lane trains on a global batch of " + std::to_string(batch * world) + " (data.batch_size " +
             std::to_string(batch) + " x " + std::to_string(world) + (world == 1 ? " rank" : " ranks") +
             ") where the base run trains on " + std::to_string(base_global) +
             ": another training, not an equivalent one; set data.batch_size so that the two agree";
  }
  const std::string head = "this lane splits the batch (" + lane.describe() + "), and ";
  const std::string tail = ": one batch and its pieces are then other trainings, whatever the rule "
                           "(docs/equivalence.md); hold such a lane on a model without them";
  if (cfg.has_trainer() || cfg.model.name == "torchscript")
    return head + "a model with BatchNorm (it normalises over each piece's samples) or dropout (it draws its "
                  "masks per forward) differs by design" + tail;
  if (cfg.model.name == "cnn")
    return head + "the model's BatchNorm normalises over each piece's samples, not the whole batch's" + tail;
  if (cfg.model.dropout > 0)
    return head + "the model's dropout (p = " + format_double(cfg.model.dropout) +
           ") draws its masks per forward, so the pieces draw other masks than one batch" + tail;
  return "";
}

// Step 5: each lane's run held to the base run (run 1) under the lane's
// rule, every lane reported in `notes`. The first lane that fails (in
// name order) becomes the verdict (exit 1, comparing the lane's run with
// run 1, so the reports locate it) and is returned, with the golden's
// outcome (`golden_note`) and how to see it again. `outcomes` gets every
// lane's, for the reports (Verdict::lanes).
std::optional<SmokeCheck> judge_lanes(const std::vector<RunRecord>& records, const SmokeConfig& cfg,
                                      const std::string& dir, const RunRecord& run, const std::string& golden_note,
                                      std::vector<std::string>& notes, std::vector<LaneOutcome>& outcomes) {
  std::optional<SmokeCheck> failed;
  for (size_t i = 0; i < cfg.equivalence.size(); ++i) {
    const EquivalenceVariant& lane = cfg.equivalence[i];
    const std::string path = dir + "/variant-" + lane.name + ".json";
    Verdict v = compare_variant(records[i], run, lane.rule, lane.same_batches,
                                {path, dir + "/run-1.json", "base run", "lane " + lane.name});
    const std::string rule = lane.rule.rule == Tolerance::Rule::kExact ? "bit for bit" : "within " + lane.rule.describe();
    const std::string head = "equivalence lane " + lane.name + " (" + lane.describe() + ")";
    outcomes.push_back({lane.name, lane.describe(), rule, true, v.passed(),
                        v.passed() ? lane_distance(v) : v.first_divergence, v.values_checked});
    if (v.passed()) {
      std::string distance = lane_distance(v);
      const bool ranks_left_out = std::any_of(v.notes.begin(), v.notes.end(), [](const std::string& n) {
        return n.rfind("per-rank series not compared", 0) == 0;
      });
      notes.push_back(head + ": the same as the base run " + rule + " (" +
                      (distance == "bit for bit" && rule != distance ? "bit for bit, " :
                       distance == "bit for bit" ? "" : distance + "; ") +
                      std::to_string(v.values_checked) + " values compared" +
                      (ranks_left_out ? "; its per-rank series left out: another world size" : "") + ")");
      continue;
    }
    const std::string why = "differs from the base run, held " + rule + "; first difference: " + v.first_divergence;
    if (failed) {
      notes.push_back(head + " also " + why);
      continue;
    }
    SmokeCheck c;
    c.smoke = cfg.name;
    c.ran = true;
    c.report_dir = dir;
    c.verdict = std::move(v);
    c.verdict.smoke = cfg.name;
    c.verdict.first_divergence = head + " " + why;
    c.verdict.notes.push_back(golden_note);
    const std::string coupling = batch_coupling(cfg, lane);
    c.verdict.notes.push_back("to see it again: lockstep run " + cfg.file + " --variant " + lane.name + "; " +
                              (coupling.empty() ? "a lane that may differ this much takes a wider equivalence." +
                                                      lane.name + ".rule, one that trains on other batches "
                                                      "\"same_batches\": false (docs/equivalence.md)"
                                                : coupling));
    c.compared = true;
    c.run = records[i];
    c.golden = run;
    c.lane = lane.name;
    c.verdict.equivalence_lane = lane.name;
    c.records = "records: " + dir + "/run-1.json, " + path;
    failed = std::move(c);
  }
  if (failed) {
    for (auto& n : notes) failed->verdict.notes.push_back(std::move(n));
    failed->verdict.lanes = outcomes;
  }
  return failed;
}

// Step 5 when the golden comparison failed first: every lane not judged
// (or, serially, not run), one outcome each and one note.
void lanes_left_unjudged(const SmokeConfig& cfg, bool ran, std::vector<std::string>& notes,
                         std::vector<LaneOutcome>& outcomes) {
  const std::string why = std::string(ran ? "not judged" : "not run") + ": the golden comparison failed first";
  std::string names;
  for (const auto& lane : cfg.equivalence) {
    names += (names.empty() ? "" : ", ") + lane.name;
    outcomes.push_back({lane.name, lane.describe(), "", false, false, why, 0});
  }
  notes.push_back("equivalence lanes " + std::string(ran ? "not judged" : "not run") + " (" + names +
                  "): the golden comparison failed first");
}

// The equivalence lanes' runs of one check: `start` runs them (beside
// the smoke's runs when two fit, else at step 5); `ran` says it did.
struct LaneRuns {
  std::function<void()> start;
  std::vector<RunRecord> records;
  bool ran = false;
};

// A failing lane's second run (<dir>/variant-<name>.rerun.json): one that
// differs from the first bit for bit makes the verdict exit 4 (the lane is
// nondeterministic itself, so its difference from the base run is no
// evidence); else a note says it reproduced. Its failed run is an error.
void recheck_failed_lane(Launcher& launcher, const ChildRun& base, const SmokeConfig& cfg, const std::string& dir,
                         SmokeCheck& c) {
  const EquivalenceVariant* lane = nullptr;
  for (const auto& l : cfg.equivalence)
    if (l.name == c.lane) lane = &l;
  if (!lane) return;
  const std::string path = dir + "/variant-" + lane->name + ".rerun.json";
  RunRecord again = run_lane(launcher, base, *lane, path);
  std::string diff = first_bit_difference(again, c.run);
  if (diff.empty()) {
    c.verdict.notes.push_back("a second run of lane " + lane->name + " reproduced it bit for bit");
    return;
  }
  c.verdict.code = ExitCode::kNondeterministic;
  c.verdict.first_divergence = "equivalence lane " + lane->name + " is nondeterministic itself: a second run of it (" +
                               path + ") differs from the first bit for bit (" + diff +
                               "), so its difference from the base run is no evidence; it said: " +
                               c.verdict.first_divergence;
}

// Step 5: the lanes judged against run 1 when the golden comparison
// (`golden`, against `found`; null: no golden yet) passed, their runs made
// now if they have not run yet; else left unjudged. Returns the failing
// lane's check (exit 1, or 4 when its second run differs); fills `notes`
// and `outcomes` for the verdict otherwise.
std::optional<SmokeCheck> settle_lanes(Launcher& launcher, const ChildRun& base, const SmokeConfig& cfg,
                                       const std::string& dir, const RunRecord& run, const GoldenLookup* found,
                                       const Verdict& golden, LaneRuns& lanes, std::vector<std::string>& notes,
                                       std::vector<LaneOutcome>& outcomes) {
  if (cfg.equivalence.empty()) return std::nullopt;
  if (found && !golden.passed()) {
    lanes_left_unjudged(cfg, lanes.ran, notes, outcomes);
    return std::nullopt;
  }
  std::string golden_note = found ? "the base run passed its golden (" + found->path + "; " + golden.lane_reason + ")"
                                  : "the base run has no golden yet";
  if (!lanes.ran) lanes.start();
  auto failed = judge_lanes(lanes.records, cfg, dir, run, golden_note, notes, outcomes);
  if (failed) recheck_failed_lane(launcher, base, cfg, dir, *failed);
  return failed;
}

// Step 6: no golden for the run's platform: exit 2 with a pending golden,
// what run 2 varied (`varied`, varied_description), the steps' `notes`
// (empty ones left out) and the lanes' outcomes.
SmokeCheck without_golden(SmokeCheck c, const RunRecord& run, const std::string& file, const std::string& root,
                          const CheckSmokeOptions& o, int repeat, const std::string& varied,
                          const std::vector<std::string>& notes, std::vector<LaneOutcome> outcomes) {
  add_pending(c, run, file, o, repeat, "no golden existed for platform " + golden_key(run.platform, run.stack));
  c.verdict = no_golden_verdict(c.smoke, file, root, run);
  if (!varied.empty())
    c.verdict.notes.push_back("run 2 varied what must not matter (" + varied + ") and matched run 1 bit for bit");
  for (const auto& n : notes)
    if (!n.empty()) c.verdict.notes.push_back(n);
  c.verdict.lanes = std::move(outcomes);
  return c;
}

// A check that failed at step 4 or 5 with no golden yet: says that one is
// still missing, as step 6's pending golden would have.
SmokeCheck noting_no_golden(SmokeCheck failed, const RunRecord& run, const std::string& file) {
  failed.verdict.notes.push_back("no golden for platform " + golden_key(run.platform, run.stack) +
                                 " yet: once the smoke passes, check writes a pending one (or `lockstep bless " + file +
                                 " --reason \"...\"`)");
  return failed;
}

// Steps 4 and 5's notes on a verdict against a golden, and its pending
// golden where one is due (a failure, or a stack label's first runs).
void finish_verdict(SmokeCheck& c, const RunRecord& run, const GoldenLookup& found, const std::string& file,
                    const CheckSmokeOptions& o, int repeat, const std::string& varied,
                    const std::vector<std::string>& notes) {
  if (repeat > 1)
    c.verdict.notes.push_back(std::to_string(repeat) + " runs in this job were bit-identical" +
                              (varied.empty() ? "" : ", run 2 varying what must not matter (" + varied + ")"));
  else c.verdict.notes.push_back("one run only (repeat 1): run-to-run determinism was not checked in this job");
  for (const auto& n : notes)
    if (!n.empty()) c.verdict.notes.push_back(n);
  if (!c.verdict.passed()) add_pending(c, run, file, o, repeat, "check failed: " + c.verdict.first_divergence);
  // A stack label's first runs, compared with the unlabeled golden: the
  // pending golden is the one to accept for the label (review shows both).
  else if (!found.exact_stack)
    add_pending(c, run, file, o, repeat, "no golden for stack " + run.stack + " yet; passed against " + found.path);
}

// The golden at `path`, read as filed for the smoke (read_filed_golden) and
// held to the config (foreign_series); exit 2 naming it otherwise.
Golden read_smoke_golden(const std::string& path, const SmokeConfig& cfg) {
  Golden golden = read_filed_golden(GoldenLookup{path, true, true}, cfg.name);
  if (std::string why = foreign_series(golden.record, cfg); !why.empty())
    throw BadUsage(path + ": " + why + " (a golden made from another config, or edited by hand; or the "
                   "config renamed a series since it was blessed: re-bless it if the change is meant)");
  return golden;
}

// Every golden filed for the smoke, by normalised path, read before any
// run: a damaged or foreign golden is exit 2 at once, naming it, not after
// minutes of runs, whichever platform it is filed for.
std::map<std::string, Golden> read_smoke_goldens(const std::string& root, const SmokeConfig& cfg) {
  std::map<std::string, Golden> out;
  for (const std::string& path : filed_goldens(root, cfg.name))
    out.emplace(fs::path(path).lexically_normal().string(), read_smoke_golden(path, cfg));
  return out;
}

// The golden the run is compared with (find_golden: its platform, else its
// family; its stack label, else unlabeled), moved out of `goldens` (read up
// front) into `golden`; nullopt when the smoke has none usable.
std::optional<GoldenLookup> pick_golden(const std::string& root, const SmokeConfig& cfg, const RunRecord& run,
                                        std::map<std::string, Golden>& goldens, Golden& golden) {
  auto found = find_golden(root, cfg.name, run.platform, run.stack);
  if (!found) return found;
  auto read = goldens.find(fs::path(found->path).lexically_normal().string());
  // Filed while the runs ran (not read up front): read now, by the same rules.
  golden = read != goldens.end() ? std::move(read->second) : read_smoke_golden(found->path, cfg);
  return found;
}

// Step 1's runs: `base` with its run 2 varying what must not matter
// (repeat_varies), drawn from the smoke so every check's verdict repeats.
ChildRun varied_repeats(const ChildRun& base, const SmokeConfig& cfg, int repeat) {
  ChildRun repeats = base;
  if (repeat < 2) return repeats;
  repeats.variation = repeat_variation(cfg);
  repeats.varied_run = repeats.variation.empty() ? 0 : 2;
  return repeats;
}

// What run 2 varied, for the notes ("" when nothing); says when affinity
// was asked for and could not be varied.
std::string varied_description(const SmokeConfig& cfg, const ChildRun& repeats) {
  if (repeats.varied_run == 0) return "";
  std::string varied = describe_variation(repeats.variation);
  if (repeats.variation.affinity.none() &&
      std::find(cfg.repeat_varies.begin(), cfg.repeat_varies.end(), "affinity") != cfg.repeat_varies.end())
    varied += "; not its CPUs: this process may run on one CPU only";
  return varied;
}

// Step 4: a fresh process continued from the stopped run's checkpoint, bit
// for bit against the uninterrupted run `run`. Returns the failure (exit
// 1, in `lane`), else sets `note`.
std::optional<SmokeCheck> check_resume(const SmokeConfig& cfg, const RunRecord& run, ResumeRuns& resume_runs,
                                       int per_run, Lane lane, const std::string& dir, std::string& note) {
  RunRecord resumed = resume_runs.finish(per_run);
  take_data_pass(resumed, run, dir + "/resumed.json");
  if (std::string diff = first_bit_difference(resumed, run); !diff.empty()) return resume_failure(cfg, diff, lane, dir);
  note = resumed_note(cfg);
  return std::nullopt;
}

SmokeCheck check_loaded(const SmokeConfig& cfg, const std::string& file, const CheckSmokeOptions& o,
                        Launcher& launcher) {
  SmokeCheck c;
  c.smoke = cfg.name;
  int repeat = o.repeat > 0 ? o.repeat : cfg.repeat;
  c.report_dir = (fs::path(o.out_dir) / cfg.name).string();
  const std::string dir = c.report_dir;
  const std::string root = goldens_root(file, o.goldens_dir);
  c.goldens_dir = root;
  std::map<std::string, Golden> goldens = read_smoke_goldens(root, cfg);
  clear_smoke_outputs(dir);  // an earlier check's pending golden must not outlive this one

  // 1. Fresh runs, bit for bit; the second varies what must not matter.
  const ChildRun base = check_run(cfg, file, o);
  const ChildRun repeats = varied_repeats(base, cfg, repeat);
  ResumeRuns resume_runs(launcher, base, cfg.resume_at, dir);
  const int per_run = check_slots_per_run(cfg, base.overrides.world_size);
  LaneRuns lanes;
  if (!cfg.equivalence.empty())
    lanes.start = [&] {
      lanes.records = run_lanes(launcher, base, cfg, dir, o.slots, per_run);
      lanes.ran = true;
    };
  std::vector<RunRecord> runs = fresh_runs(launcher, repeats, cfg, o, repeat, per_run, resume_runs, dir, lanes.start);
  c.ran = true;
  RunRecord& run = runs.front();
  if (auto [i, diff] = first_repeat_difference(runs); !diff.empty()) {
    add_distinct_runs(launcher, base, o, per_run, dir, runs);
    VariedRepeat varied = judge_varied_repeat(launcher, base, repeats, runs, o, per_run, file, dir);
    return nondeterministic_check(cfg.name, runs, i, diff, dir, varied);
  }
  const std::string varied = varied_description(cfg, repeats);
  // 2. The trainer's batches are the data-only pass's.
  Golden golden;
  const auto found = pick_golden(root, cfg, run, goldens, golden);
  const std::string data_note = settle_data_pass(launcher, base, cfg, dir, found ? &golden.record : nullptr, runs);
  if (auto [code, why] = data_pass_mismatch(cfg, run, repeat, dir); !why.empty()) {
    c.verdict = stopped_verdict(cfg.name, code, why);
    return c;
  }
  // 3. The golden, compared before the resume check: a regression against
  //    it is the finding to report (data batch 0 rather than a resumed run
  //    that also differs), and it costs no further runs.
  if (found) {
    c.golden_hash = golden.content_hash;
    c.verdict = compare_with_golden(cfg, run, golden, *found, dir);
    if (data_note.rfind("no data-only pass ran", 0) == 0) drop_self_compared_probes(c.verdict);
    c.compared = true;
    if (o.rerun_failing > 0 && c.verdict.code == ExitCode::kRegression &&
        rerun_failure(launcher, base, dir, run, o.rerun_failing, o.slots, per_run, c.verdict)) {
      c.run = run;
      c.golden = std::move(golden.record);
      return c;
    }
  }
  // 4. The resume check, when the comparison passed (or there is no golden yet).
  std::string resume_note;
  if (cfg.resume_at > 0 && (!found || c.verdict.passed()))
    if (auto failed = check_resume(cfg, run, resume_runs, per_run, found ? c.verdict.lane : Lane::kNone, dir,
                                   resume_note))
      return found ? std::move(*failed) : noting_no_golden(std::move(*failed), run, file);
  // 5. The equivalence lanes, each against run 1 (no golden needed).
  std::vector<std::string> lane_notes;
  std::vector<LaneOutcome> lane_outcomes;
  if (auto failed = settle_lanes(launcher, base, cfg, dir, run, found ? &*found : nullptr, c.verdict, lanes,
                                 lane_notes, lane_outcomes))
    return found ? std::move(*failed) : noting_no_golden(std::move(*failed), run, file);
  // 6. No golden: exit 2 with a pending one.
  lane_notes.insert(lane_notes.begin(), data_note);
  if (!found) return without_golden(std::move(c), run, file, root, o, repeat, varied, lane_notes, std::move(lane_outcomes));
  lane_notes.insert(lane_notes.begin(), resume_note);
  finish_verdict(c, run, *found, file, o, repeat, varied, lane_notes);
  c.verdict.lanes = lane_outcomes;
  c.run = run;
  c.golden = std::move(golden.record);
  return c;
}

}  // namespace

int check_slots_per_run(const SmokeConfig& cfg, int world_size) {
  SmokeConfig sized = cfg;
  if (cfg.distributed.configured && world_size > 0) sized.distributed.world_size = world_size;
  // The data-only pass runs beside a run only with several worker counts (check_run).
  return processes_per_run(sized, /*with_data_pass=*/cfg.trainer.workers.size() > 1);
}

SmokeCheck check_smoke(const std::string& file, const CheckSmokeOptions& o, Launcher& launcher) {
  std::string name = fs::path(file).stem().string();
  std::string report_dir;  // only once the config named the smoke
  try {
    SmokeConfig cfg = load_smoke_config(file);
    name = cfg.name;
    report_dir = (fs::path(o.out_dir) / cfg.name).string();
    SmokeCheck c = check_loaded(cfg, file, o, launcher);
    // Said in every verdict and report: a gate without it checks no batch.
    if (std::string note = missing_data_pass_note(cfg); !note.empty()) c.verdict.notes.push_back(note);
    return c;
  } catch (const Error& e) {
    SmokeCheck c;
    c.smoke = name;
    c.report_dir = report_dir;
    c.verdict = stopped_verdict(name, e.code(), e.what());
    return c;
  }
}

}  // namespace lockstep
