// `lockstep check [SMOKE...]`: the CI stage. The verdict for each smoke is
// made in gate/check.h (check_smoke); this file prints it, writes the
// reports and pending goldens, and returns the most severe exit code over
// the suite (3 > 2 > 4 > 1 > 0).
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <thread>

#include <filesystem>
#include <iostream>
#include <map>

#include "cli/commands.h"
#include "compare/html_report.h"
#include "compare/junit_report.h"
#include "history/ledger.h"
#include "smoke/golden_store.h"
#include "compare/markdown_report.h"
#include "compare/text_report.h"
#include "core/atomic_file.h"
#include "core/directory_lock.h"
#include "core/error.h"
#include "core/job_slots.h"
#include "core/json_io.h"
#include "gate/check.h"
#include "gate/shard.h"
#include "cli/smoke_launcher.h"
#include "launch/launcher.h"
#include "smoke/smoke_config.h"

namespace lockstep {

namespace {

// A smoke's report on stdout and in its folder; `quiet`: a passing smoke's
// headline line alone (its reports are written in full all the same).
void print_and_write(const SmokeCheck& c, const std::string& out_dir, bool quiet) {
  const Verdict& v = c.verdict;
  if (c.compared) {
    std::string text = render_text(v, isatty(STDOUT_FILENO));
    if (quiet && v.passed()) text.resize(text.find('\n') + 1);
    std::cout << text;
    write_file_atomically(c.report_dir + "/report.json", pretty_dump(to_json(v)));
    write_file_atomically(c.report_dir + "/report.md", render_markdown(v));
    write_file_atomically(c.report_dir + "/report.html", render_html(v, c.run, c.golden));
  }
  if (c.pending) write_golden(c.pending_path, *c.pending);
  // The verdict first, then what can be done about it, then the notes.
  const bool verdict_line = !c.compared || v.exit_code() == ExitCode::kNondeterministic;
  if (verdict_line) {
    std::cout << "lockstep: " << c.smoke << ": " << exit_class_name(v.exit_code()) << " (exit "
              << to_int(v.exit_code()) << "): " << v.first_divergence << "\n";
    for (const auto& line : v.quote) std::cout << "  | " << printable_message(line, false) << "\n";
    if (!c.records.empty()) std::cout << "  " << c.records << "\n";
  }
  if (c.pending) {
    // review and accept look in ./goldens unless told: a smoke whose
    // goldens lie elsewhere (beside its own smoke folder) is named with them.
    std::error_code ec;
    const bool default_goldens =
        c.goldens_dir.empty() ||
        std::filesystem::weakly_canonical(std::filesystem::absolute(c.goldens_dir), ec) ==
            std::filesystem::weakly_canonical(std::filesystem::absolute("goldens"), ec);
    const std::string where = out_dir + (default_goldens ? "" : " --goldens " + c.goldens_dir);
    std::cout << "pending golden: " << c.pending_path << " (review with `lockstep review " << where
              << "`, promote with `lockstep accept " << where << " --reason ...`)\n";
  }
  if (verdict_line && !c.compared)
    for (const auto& n : v.notes) std::cout << "note: " << printable_message(n, false) << "\n";
  // A smoke that ended without a comparison still has its reports (what
  // stopped it, and a failed trainer's stderr), beside its records; when
  // even they cannot be written (the cause of the stop, often), its verdict
  // above stands and a note says so.
  if (!c.compared && !c.report_dir.empty()) {
    try {
      write_file_atomically(c.report_dir + "/report.json", pretty_dump(to_json(v)));
      write_file_atomically(c.report_dir + "/report.md", render_markdown(v));
      write_file_atomically(c.report_dir + "/report.html", render_html(v, RunRecord{}, RunRecord{}));
    } catch (const Error& e) {
      std::cout << "note: its reports were not written: " << e.what() << "\n";
    }
  }
}

// One line for a suite, after every smoke's own report: how many smokes
// ended in each exit class, the ones that did not pass, and the exit code.
// "check: 4 smokes: 3 PASS, 1 FAIL (wine-mlp); exit 1 (junit lockstep-out/junit.xml)"
void print_summary(const std::vector<Verdict>& verdicts, ExitCode worst, const std::string& junit) {
  std::map<int, std::vector<std::string>> by_code;
  for (const Verdict& v : verdicts) by_code[to_int(v.exit_code())].push_back(v.smoke);
  std::cout << "check: " << verdicts.size() << (verdicts.size() == 1 ? " smoke:" : " smokes:");
  const char* sep = " ";
  for (const auto& [code, smokes] : by_code) {
    std::cout << sep << smokes.size() << " " << exit_class_name(static_cast<ExitCode>(code));
    sep = ", ";
    if (code == 0) continue;
    std::cout << " (";
    for (size_t i = 0; i < smokes.size() && i < 10; ++i) std::cout << (i ? ", " : "") << smokes[i];
    if (smokes.size() > 10) std::cout << ", +" << smokes.size() - 10 << " more";
    std::cout << ")";
  }
  std::cout << "; exit " << to_int(worst) << " (junit " << junit << ")\n";
}

// The job slots a smoke's check holds while it runs: one of its runs'
// (gate/check.h's check_slots_per_run); a config that cannot be read takes
// one and fails in check_smoke.
int smoke_processes(const std::string& file, int world_size_override) {
  try {
    return check_slots_per_run(load_smoke_config(file), world_size_override);
  } catch (const Error&) {
    return 1;
  }
}

// --history DIR: the smoke's night in its ledger (history/ledger.h), the
// run and its verdict, or the verdict alone when no record was made.
void enter_history(const SmokeCheck& c, const std::string& dir) {
  CiFacts ci = ci_facts_from_environment();
  std::string now = utc_now();
  // This check's own run: another night may make the very same record.
  std::string instance = now + " pid " + std::to_string(::getpid()) + " job " + ci.job;
  LedgerEntry e = c.compared && !c.run.smoke.empty() && c.lane.empty()
                      ? ledger_entry(c.run, &c.verdict, c.golden_hash, ci, now, instance)
                      : stopped_entry(c.smoke, c.verdict, ci, now, instance);
  append_entry(dir, e, [&](int pid) {
    std::cout << "check: waiting for process " << pid << ", which writes to the history " << dir << "\n" << std::flush;
  });
}

// The files of shard `spec` ("I/N") of the suite, whose smokes are
// `names` (suite_smoke_names), said on a line.
std::vector<std::string> shard_files(const std::vector<std::string>& files, const std::vector<std::string>& names,
                                     const std::string& spec) {
  std::vector<std::string> mine;
  std::string listed;
  for (size_t i : shard_members(names, parse_shard(spec))) {
    mine.push_back(files[i]);
    listed += (listed.empty() ? "" : ", ") + names[i];
  }
  std::cout << "check: shard " << spec << ": " << mine.size() << " of " << files.size() << " smokes"
            << (listed.empty() ? "" : " (" + listed + ")") << "\n";
  return mine;
}

// A checked smoke printed, its reports and pending golden written, its
// night entered with --history; its verdict, or the write's failure as one.
Verdict report_smoke(SmokeCheck& c, const CheckOptions& o) {
  try {
    print_and_write(c, o.smoke.out_dir, o.quiet);
    if (!o.history_dir.empty()) enter_history(c, o.history_dir);
  } catch (const Error& e) {  // a report, pending golden or ledger entry that cannot be written
    std::cout << "lockstep: " << c.smoke << ": " << exit_class_name(e.code()) << " (exit " << to_int(e.code())
              << "): " << e.what() << "\n";
    c.verdict = stopped_verdict(c.smoke, e.code(), e.what());
  }
  std::cout << std::flush;
  return std::move(c.verdict);
}

// --history DIR: a folder beside the goldens, its ledgers read first, so a
// bad one is said before any run.
void require_history_folder(const CheckOptions& o, const std::vector<std::string>& files) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::exists(o.history_dir, ec) && !fs::is_directory(o.history_dir, ec))
    throw BadUsage("--history " + o.history_dir + ": a folder for the ledgers (<smoke>.jsonl), and this is a file");
  std::string here = fs::weakly_canonical(fs::absolute(o.history_dir), ec).string() + "/";
  for (const auto& file : files) {
    std::string goldens = fs::weakly_canonical(fs::absolute(goldens_root(file, o.smoke.goldens_dir)), ec).string() + "/";
    if (here.rfind(goldens, 0) == 0)
      throw BadUsage("--history " + o.history_dir + ": inside the goldens folder " + goldens +
                     " (goldens are written only by bless and accept); keep the ledgers beside it, e.g. "
                     "lockstep-history");
  }
  // The output folder is check's (it holds that folder's lock while the
  // ledger would take it again, and clears what it wrote before).
  std::string out = fs::weakly_canonical(fs::absolute(o.smoke.out_dir), ec).string() + "/";
  if (here.rfind(out, 0) == 0)
    throw BadUsage("--history " + o.history_dir + ": inside the output folder " + o.smoke.out_dir +
                   " (check's own, rewritten every run); keep the ledgers beside it, e.g. lockstep-history");
  for (const std::string& ledger : ledger_files(o.history_dir)) {
    // A night's entry replaces the ledger atomically: never through a link.
    if (fs::is_symlink(fs::symlink_status(ledger, ec)))
      throw BadInput(ledger, "", "a ledger file, not a symbolic link (each night replaces it atomically; link the "
                                 "history folder instead)");
    read_ledger_to_append(ledger, o.history_dir);
  }
}

// Checks `files` and reports each (report_smoke) in suite order. -j N: the
// smokes are checked by up to N threads, each holding a job slot per
// process it runs at once; this thread prints and writes each smoke's
// reports as soon as the smokes before it are done, so the output is the
// same for any N.
std::vector<Verdict> check_suite(const std::vector<std::string>& files, CheckSmokeOptions options,
                                 const CheckOptions& o, Launcher& launcher) {
  std::vector<Verdict> verdicts;
  const int jobs = o.jobs > 0 ? o.jobs : available_cpus();
  JobSlots slots(jobs);
  if (jobs > 1) options.slots = &slots;
  std::vector<std::optional<SmokeCheck>> done(files.size());
  std::mutex mu;
  std::condition_variable ready;
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t i; (i = next++) < files.size();) {
      SmokeCheck c = [&] {
        SlotHold hold(slots, smoke_processes(files[i], o.smoke.overrides.world_size));
        return check_smoke(files[i], options, launcher);
      }();
      std::lock_guard<std::mutex> lock(mu);
      done[i] = std::move(c);
      ready.notify_all();
    }
  };
  // -j 1 or one smoke: each smoke checked in this thread, then printed.
  const bool serial = jobs == 1 || files.size() <= 1;
  std::vector<std::thread> workers;
  if (!serial)
    for (int t = 0; t < std::min<int>(jobs, static_cast<int>(files.size())); ++t) workers.emplace_back(worker);
  for (size_t i = 0; i < files.size(); ++i) {
    SmokeCheck c;
    if (serial) {
      SlotHold hold(slots, smoke_processes(files[i], o.smoke.overrides.world_size));  // the rest is spare for its runs
      c = check_smoke(files[i], options, launcher);
    } else {
      std::unique_lock<std::mutex> lock(mu);
      ready.wait(lock, [&] { return done[i].has_value(); });
      c = std::move(*done[i]);
    }
    verdicts.push_back(report_smoke(c, o));
  }
  for (auto& w : workers) w.join();
  return verdicts;
}

}  // namespace

int check_command(const CheckOptions& o) {
  SmokeLauncher launcher;  // trainer smokes in this process, built-in ones in `lockstep run`
  return check_command(o, launcher);
}

int check_command(const CheckOptions& o, Launcher& launcher) {
  std::vector<std::string> files = expand_smoke_args(o.smokes);
  // Every usage error before the --out folder is made: a refused check
  // leaves no empty folder behind.
  if (!o.history_dir.empty()) require_history_folder(o, files);
  // Two configs of one name are refused before any run (one golden each).
  std::vector<std::string> names = suite_smoke_names(files);
  if (!o.kind.empty())
    if (std::string said = select_smoke_kind(o.kind, "check", files, names); !said.empty()) std::cout << said << "\n";
  if (o.shard_given && !files.empty()) files = shard_files(files, names, o.shard);
  if (!files.empty()) launcher.require_runnable(files, "check");
  // A wrong --out is one usage error, said once, not a failure per smoke;
  // two checks writing one --out would read each other's records.
  require_out_folder(o.smoke.out_dir, files, o.smoke.goldens_dir);
  DirectoryLock out_lock(o.smoke.out_dir, true, [&](int pid) {
    std::cout << "check: waiting for process " << pid << ", which writes to " << o.smoke.out_dir << "\n" << std::flush;
  });
  if (files.empty()) {  // --kind selected none
    write_file_atomically((std::filesystem::path(o.smoke.out_dir) / "junit.xml").string(), render_junit({}));
    return 0;
  }
  std::vector<Verdict> verdicts = check_suite(files, o.smoke, o, launcher);
  // GitLab: artifacts:reports:junit: lockstep-out/junit.xml
  std::string junit = (std::filesystem::path(o.smoke.out_dir) / "junit.xml").string();
  write_file_atomically(junit, render_junit(verdicts));
  ExitCode worst = most_severe(verdicts);
  if (verdicts.size() > 1) print_summary(verdicts, worst, junit);
  return to_int(worst);
}

}  // namespace lockstep
