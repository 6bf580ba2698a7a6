// `lockstep check [SMOKE...]`: the CI stage. For each smoke:
//   1. `repeat` fresh `lockstep run` processes, held to bit equality
//      (a difference is exit 4: the stack is nondeterministic);
//   2. the batches the trainer consumed must equal the data-only pass
//      (a difference is exit 4 too);
//   3. the first run is compared against the golden (exit 1 on regression).
// Exit code over several smokes: the most severe, 3 > 2 > 4 > 1 > 0.
#include <unistd.h>

#include <filesystem>
#include <iostream>
#include <map>

#include "cli/child_runs.h"
#include "cli/commands.h"
#include "cli/golden_store.h"
#include "cli/smoke_config.h"
#include "compare/compare.h"
#include "compare/html_report.h"
#include "compare/junit_report.h"
#include "compare/markdown_report.h"
#include "compare/text_report.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "core/json_io.h"
#include "env/git_state.h"
#include "record/golden.h"

namespace lockstep {

namespace {

int severity(ExitCode c) {
  switch (c) {
    case ExitCode::kPass: return 0;
    case ExitCode::kRegression: return 1;
    case ExitCode::kNondeterministic: return 2;
    case ExitCode::kBadInput: return 3;
    case ExitCode::kEnvironment: return 4;
  }
  return 4;
}

ExitCode worse(ExitCode a, ExitCode b) { return severity(a) >= severity(b) ? a : b; }

// The first batch where the trainer's input differs from the data-only
// pass, or "" when they agree.
std::string train_vs_probe_difference(const RunRecord& r) {
  for (size_t i = 0; i < r.train_probes.size(); ++i) {
    if (i >= r.probes.size()) return "";  // training ran past the probed epochs
    const BatchProbe& t = r.train_probes[i];
    const BatchProbe& p = r.probes[i];
    if (t.sample_index_hash != p.sample_index_hash || t.inputs.xxh3_128 != p.inputs.xxh3_128 ||
        t.labels.xxh3_128 != p.labels.xxh3_128)
      return "batch " + std::to_string(i);
  }
  return "";
}

// The resume check: run `resume_at` steps and checkpoint, continue in a
// fresh process, and compare with the uninterrupted run bit for bit.
// Returns "" when they agree, else the first divergence.
std::string resume_difference(const std::string& file, int64_t resume_at, const std::string& dir,
                              std::vector<std::string> args, const RunRecord& straight) {
  std::string checkpoint = dir + "/resume-at-" + std::to_string(resume_at) + ".ckpt";
  std::vector<std::string> first = args;
  first.insert(first.end(), {"--stop-after", std::to_string(resume_at), "--checkpoint", checkpoint});
  spawn_child({file, dir + "/resume-part.json", first, ""});
  args.insert(args.end(), {"--resume", checkpoint});
  RunRecord resumed = run_child({file, dir + "/resumed.json", args, ""});
  return first_bit_difference(resumed, straight);
}

// A verdict standing for a smoke that ended before a comparison (exit 2,
// 3 or 4), so the JUnit report still shows it failing.
Verdict failed_verdict(const std::string& smoke, ExitCode code, const std::string& message) {
  Verdict v;
  v.smoke = smoke;
  v.stopped = code == ExitCode::kNondeterministic ? "nondeterministic"
              : code == ExitCode::kEnvironment    ? "environment"
              : code == ExitCode::kBadInput       ? "bad-input"
                                                  : "";
  v.findings.push_back({Section::kStructure, "run", -1, "exit " + std::to_string(to_int(code)) + ": " + message});
  v.first_divergence = message;
  return v;
}

// The run as a pending golden, <out>/<smoke>/<platform>.golden.new, for a
// person to `lockstep review` and `lockstep accept`. check never writes
// into goldens/ (in CI or not): only bless and accept do.
std::string write_pending(const RunRecord& run, const std::string& file, const std::string& out_dir, int repeat,
                          const std::string& why) {
  Golden g;
  g.record = run;
  GitState git = read_git_state(std::filesystem::absolute(file).parent_path().string());
  g.provenance.reason = "(pending review: " + why + ")";
  g.provenance.created_utc = utc_now();
  g.provenance.git_commit = git.in_repo ? git.commit : "(absent: " + git.error + ")";
  g.provenance.git_author = git.in_repo ? git.author : "(absent: " + git.error + ")";
  g.provenance.tool_version = LOCKSTEP_VERSION;
  g.provenance.runs = repeat;
  std::string path = pending_path(out_dir, run.smoke, run.platform);
  write_golden(path, g);
  std::cout << "pending golden: " << path << " (review with `lockstep review " << out_dir
            << "`, promote with `lockstep accept " << out_dir << " --reason ...`)\n";
  return path;
}

ExitCode check_one(const std::string& file, const CheckOptions& o, std::vector<Verdict>& verdicts) {
  SmokeConfig cfg = load_smoke_config(file);
  int repeat = o.repeat > 0 ? o.repeat : cfg.repeat;
  std::string dir = (std::filesystem::path(o.out_dir) / cfg.name).string();

  std::vector<std::string> args = override_args(o.overrides);
  std::vector<RunRecord> runs = run_children(file, dir, "run", repeat, args);
  const RunRecord& run = runs.front();

  if (auto [i, diff] = first_repeat_difference(runs); !diff.empty()) {
    std::string msg = "run " + std::to_string(i + 1) + " differs from run 1 in the same job; first difference: " + diff;
    std::cout << "lockstep: " << cfg.name << ": NONDETERMINISTIC (exit 4): " << msg << "\n  records: " << dir
              << "/run-1.json, " << dir << "/run-" << i + 1 << ".json\n";
    verdicts.push_back(failed_verdict(cfg.name, ExitCode::kNondeterministic, msg));
    return ExitCode::kNondeterministic;
  }
  if (std::string d = train_vs_probe_difference(run); !d.empty()) {
    std::string msg = "the trainer consumed other data than the data-only pass, first at " + d;
    std::cout << "lockstep: " << cfg.name << ": NONDETERMINISTIC (exit 4): " << msg << "\n";
    verdicts.push_back(failed_verdict(cfg.name, ExitCode::kNondeterministic, msg));
    return ExitCode::kNondeterministic;
  }

  std::string resume_note;
  if (cfg.resume_at > 0) {
    std::string diff = resume_difference(file, cfg.resume_at, dir, args, run);
    if (!diff.empty()) {
      std::string msg = "the run resumed from a checkpoint at step " + std::to_string(cfg.resume_at) +
                        " differs from the uninterrupted run; first difference: " + diff;
      std::cout << "lockstep: " << cfg.name << ": REGRESSION (exit 1): " << msg << "\n  records: " << dir
                << "/run-1.json, " << dir << "/resumed.json\n";
      verdicts.push_back(failed_verdict(cfg.name, ExitCode::kRegression, msg));
      return ExitCode::kRegression;
    }
    resume_note = "resumed at step " + std::to_string(cfg.resume_at) +
                  " from a checkpoint in a fresh process: bit-identical to the uninterrupted run";
  }

  std::string root = goldens_root(file, o.goldens_dir);
  auto found = find_golden(root, cfg.name, run.platform);
  if (!found) {
    write_pending(run, file, o.out_dir, repeat, "no golden existed for platform " + run.platform);
    throw BadUsage(golden_path(root, cfg.name, run.platform) + ": no golden for smoke '" + cfg.name +
                   "' on platform " + run.platform + " (nor any of its family); create one with "
                   "`lockstep bless " + file + " --reason \"...\"`");
  }
  Golden golden = read_golden(found->path);
  if (golden.record.smoke != cfg.name)
    throw BadInput(found->path, "smoke", "\"" + cfg.name + "\" (the smoke this golden is filed under), got \"" +
                                             golden.record.smoke + "\"");
  std::string filed_as = std::filesystem::path(found->path).stem().string();
  if (golden.record.platform != filed_as)
    throw BadInput(found->path, "platform", "\"" + filed_as + "\" (the platform it is filed under), got \"" +
                                                golden.record.platform + "\"");
  Verdict v = compare_records(run, golden.record, cfg.tolerance, {dir + "/run-1.json", found->path});
  if (!found->exact_platform)
    v.notes.insert(v.notes.begin(), "no golden for platform " + run.platform + "; compared against " +
                                        found->path + " of the same family");
  if (repeat > 1) v.notes.push_back(std::to_string(repeat) + " runs in this job were bit-identical");
  if (!resume_note.empty()) v.notes.push_back(resume_note);
  std::cout << render_text(v, isatty(STDOUT_FILENO));
  write_file_atomically(dir + "/report.json", pretty_dump(to_json(v)));
  write_file_atomically(dir + "/report.md", render_markdown(v));
  write_file_atomically(dir + "/report.html", render_html(v, run, golden.record));
  if (!v.passed()) write_pending(run, file, o.out_dir, repeat, "check failed: " + v.first_divergence);
  verdicts.push_back(v);
  return v.exit_code();
}

}  // namespace

int check_command(const CheckOptions& o) {
  ExitCode result = ExitCode::kPass;
  std::vector<Verdict> verdicts;
  std::vector<std::string> files = expand_smoke_args(o.smokes);
  // Two configs with one name would share goldens and output folders.
  std::map<std::string, std::string> seen;
  for (const auto& file : files) {
    std::string name;
    try {
      name = load_smoke_config(file).name;
    } catch (const Error&) {
      continue;  // reported when the smoke is checked below
    }
    auto [it, fresh] = seen.emplace(name, file);
    if (!fresh)
      throw BadInput(file, "name", "a smoke name unique in the suite; \"" + name + "\" is also the name in " + it->second);
  }
  for (const auto& file : files) {
    try {
      result = worse(result, check_one(file, o, verdicts));
    } catch (const Error& e) {
      std::string smoke = std::filesystem::path(file).stem().string();
      const char* what = e.code() == ExitCode::kEnvironment ? "ENVIRONMENT"
                         : e.code() == ExitCode::kBadInput  ? "BAD INPUT"
                                                            : "ERROR";
      std::cout << "lockstep: " << smoke << ": " << what << " (exit " << to_int(e.code()) << "): " << e.what() << "\n";
      result = worse(result, e.code());
      verdicts.push_back(failed_verdict(smoke, e.code(), e.what()));
    }
  }
  // GitLab: artifacts:reports:junit: lockstep-out/junit.xml
  write_file_atomically((std::filesystem::path(o.out_dir) / "junit.xml").string(), render_junit(verdicts));
  return to_int(result);
}

}  // namespace lockstep
