#include "external/trainer_run.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "core/atomic_file.h"
#include "core/error.h"
#include "core/file_hash_cache.h"
#include "core/float_bits.h"
#include "core/install_paths.h"
#include "machine/machine_facts.h"
#include "external/trainer_inputs.h"
#include "external/trainer_outputs.h"
#include "external/trainer_passes.h"
#include "external/trainer_report.h"
#include "external/trainer_resume.h"
#include "smoke/finish_record.h"

extern char** environ;

namespace lockstep {
namespace fs = std::filesystem;

std::string expand_placeholders(const std::string& text, const std::map<std::string, std::string>& values) {
  std::string out;
  for (size_t i = 0; i < text.size();) {
    if (text[i] == '{') {
      size_t close = text.find('}', i);
      if (close != std::string::npos) {
        auto it = values.find(text.substr(i + 1, close - i - 1));
        if (it != values.end()) {
          out += it->second;
          i = close + 1;
          continue;
        }
      }
    }
    out += text[i++];
  }
  return out;
}

std::string helper_python_dir() {
  if (const char* p = std::getenv("LOCKSTEP_PYTHONPATH"); p && *p) return p;
  std::string dir = shipped_path("python", "python");
  if (dir.empty() || !fs::exists(fs::path(dir) / "lockstep" / "__init__.py"))
    throw EnvironmentError("the Python helper (lockstep/__init__.py) is neither in share/lockstep/python beside "
                           "this lockstep nor in its source tree; set LOCKSTEP_PYTHONPATH to its folder");
  return dir;
}

std::map<std::string, std::string> trainer_base_environment(const std::map<std::string, std::string>& extra,
                                                            const std::string& mode, int intra_op_threads) {
  std::map<std::string, std::string> env;
  for (char** e = environ; *e; ++e) {
    std::string entry = *e;
    size_t eq = entry.find('=');
    if (eq == std::string::npos) continue;
    std::string name = entry.substr(0, eq);
    if (name.rfind("LOCKSTEP_", 0) == 0 && name != "LOCKSTEP_DATA_DIR") continue;
    if (name == "RANK" || name == "WORLD_SIZE" || name == "LOCAL_RANK" || name == "LOCAL_WORLD_SIZE" ||
        name == "MASTER_ADDR" || name == "MASTER_PORT")
      continue;
    env[name] = entry.substr(eq + 1);
  }
  for (const auto& [k, v] : extra) env[k] = v;
  if (mode == "strict") {
    auto ws = env.find("CUBLAS_WORKSPACE_CONFIG");
    if (ws == env.end() || (ws->second != ":4096:8" && ws->second != ":16:8")) env["CUBLAS_WORKSPACE_CONFIG"] = ":4096:8";
  }
  env["OMP_NUM_THREADS"] = std::to_string(intra_op_threads);
  env["MKL_NUM_THREADS"] = std::to_string(intra_op_threads);
  // torch >= 2.4's env:// store is libuv's unless USE_LIBUV=0, and a torch
  // built without libuv (Debian 13's 2.6) then fails every rendezvous ("use_libuv
  // was requested but PyTorch was build without libuv support"), a single
  // process's group included. The classic store is in every build, serves a
  // smoke's few ranks alike and moves no value; a USE_LIBUV the user set is kept.
  env.emplace("USE_LIBUV", "0");
  env["PYTHONHASHSEED"] = "0";
  env["TZ"] = "UTC";
  env["LC_ALL"] = "C.UTF-8";
  std::string helper = helper_python_dir();
  auto pp = env.find("PYTHONPATH");
  env["PYTHONPATH"] = helper + (pp == env.end() || pp->second.empty() ? "" : ":" + pp->second);
  return env;
}

namespace {

// The record's identity and stack: the machine's facts (under the
// environment the trainer was handed), the trainer's own (its report), the
// contract, the config's value hash and fields, the platform key.
void stamp_trainer_record(const TrainerLayout& l, const PassPlan& p, const TrainerReport& report,
                          const std::string& report_path, bool seed_overridden, RunRecord& rec) {
  const SmokeConfig& c = l.c;
  MachineOptions m;
  m.device = c.device;
  m.repo_path = l.config_dir;
  m.env = p.train_env;
  m.use_env = true;
  m.threads_pinned = true;  // the trainer's contract pins them (expected_contract), read back in its report
  rec.fingerprint = machine_fingerprint(m);
  for (const auto& [k, field] : l.inputs) rec.fingerprint[k] = field;
  for (const auto& [k, v] : c.trainer.env) rec.fingerprint["trainer.env." + k] = {v, true};
  rec.fingerprint["trainer.command"] = {join_args(c.trainer.command), false};
  // The rest of what the trainer was handed (the numerics variables are env.*).
  rec.fingerprint["trainer.env.PYTHONHASHSEED"] = {p.train_env.at("PYTHONHASHSEED"), true};
  rec.fingerprint["trainer.env.PYTHONPATH"] = {p.train_env.at("PYTHONPATH"), false};
  add_trainer_facts(report, report_path, rec);
  apply_package_relevance(c.trainer, rec.fingerprint);
  if (l.multi) {
    rec.contract["distributed.world_size"] = std::to_string(l.world);
    rec.contract["distributed.backend"] = c.distributed.backend;
  }
  finish_record(c, {{l.seed, seed_overridden}, c.steps}, rec);
}

}  // namespace

// A Python trainer's script (`python3 train.py ...`: the first argument
// that is no option, unless -m or -c runs a module or a string) is checked
// before minutes are spent: a mistyped name is the config's error (exit 2,
// naming trainer.command[i]), not a trainer that exited with status 2.
// Options that take a value (-W, -X) skip it. Other launchers (torchrun,
// a shell wrapper) parse their own arguments and are left to run.
// The script found is fingerprinted: "trainer.script.<as written>", its
// XXH3-128, informational (a refactor that keeps the numbers passes), so a
// failing check after a code change names the script among the
// environment differences.
void check_python_script(TrainerLayout& l) {
  const SmokeConfig& c = l.c;
  const auto& cmd = c.trainer.command;
  if (cmd.size() < 2 || fs::path(cmd[0]).filename().string().rfind("python", 0) != 0) return;
  for (size_t i = 1; i < cmd.size(); ++i) {
    const std::string& a = cmd[i];
    if (a == "-" || a.rfind("-m", 0) == 0 || a.rfind("-c", 0) == 0) return;
    if (a == "-W" || a == "-X") {
      ++i;
      continue;
    }
    if (!a.empty() && a[0] == '-') continue;
    if (a.find("{out}") != std::string::npos || a.find("{checkpoint}") != std::string::npos) return;
    const fs::path full = trainer_path(a, c.trainer.resolved_cwd, l.data_dir, l.config_dir);
    std::error_code ec;
    if (fs::is_regular_file(full, ec)) {
      try {
        l.inputs["trainer.script." + a] = {cached_file_xxh3(full.string()), false};
      } catch (const Error& e) {
        throw BadInput(c.file, "trainer.command[" + std::to_string(i) + "]",
                       "a Python script lockstep can read to hash, got " + std::string(e.what()));
      }
      return;
    }
    if (fs::exists(full, ec)) return;  // a folder (python3 runs its __main__.py) or a special file: left to Python
    std::string cwd = fs::path(c.trainer.resolved_cwd).lexically_normal().string();
    if (cwd.size() > 1 && cwd.back() == '/') cwd.pop_back();
    throw BadInput(c.file, "trainer.command[" + std::to_string(i) + "]",
                   "the Python script the trainer runs, got \"" + input_excerpt(a) + "\" = " +
                       full.lexically_normal().string() + ", which does not exist (trainer.cwd is " + cwd + ")");
    return;
  }
}

TrainerRun run_trainer(const RunPlan& run, const std::string& work_dir) {
  const SmokeConfig& c = run.config;
  const RunRequest& o = run.request;
  const TrainerConfig& t = c.trainer;
  if (!c.has_trainer()) throw BadUsage(c.file + ": no trainer section");
  const std::pair<uint64_t, bool> seed = base_seed(c, o.seed.empty() ? nullptr : o.seed.c_str());
  const bool stopping = o.stop_after > 0, resuming = !o.resume.empty();
  if ((stopping || resuming) && t.resume_stop.empty())
    throw BadInput(c.file, "trainer.resume", "a resume section (how the command stops at a checkpoint and continues)");
  if (!run.train && !t.has_data_pass())
    throw BadUsage(c.file + ": `lockstep probe` runs the data-only pass, and this trainer has none (it writes no "
                   "batch probes: trainer.probes)");
  // The resumed run starts from what the stopped run recorded.
  ResumePoint resume = resuming ? read_resume_point(c, o.resume, seed.first) : ResumePoint{{}, o.stop_after};
  TrainerLayout l(c, seed.first, work_dir);
  l.checkpoint = stopping ? fs::absolute(o.checkpoint).string() : resuming ? fs::absolute(o.resume).string() : "";
  l.resume_at = resume.at;
  check_python_script(l);
  add_trainer_inputs(c, l.inputs);  // a pattern that matches nothing is refused before the trainer runs

  TrainerRun result;
  RunRecord& rec = result.record;
  PassPlan passes = plan_passes(l, run, stopping, resuming);
  run_passes(c, passes.passes, l.multi);
  auto [report, report_path] = check_reports(l, passes, run.train);
  std::string worker_difference, data_path;
  if (!passes.data_outs.empty()) rec.probes = read_data_probes(l, passes, worker_difference, data_path);
  else if (!t.has_data_pass() && run.train) result.notes.push_back(missing_data_pass_note(c));
  if (!worker_difference.empty() && (!run.train || resuming))
    throw_data_pass_difference(worker_difference, rec.probes, nullptr, 0, data_path, "");
  if (run.train) {
    const int64_t first = resuming ? resume.at : 0, end = stopping ? resume.at : c.steps;
    TrainedOutputs out;
    read_metrics_of_ranks(l, passes, first, end, out, result.notes);
    read_trained_batches_and_trace(l, passes, first, end, out, result.notes);
    if (!worker_difference.empty())
      throw_data_pass_difference(worker_difference, rec.probes, &out.train_probes, l.worker_counts.front(), data_path,
                                 "the training pass's batches (" + passes.train_out + ")");
    if (resuming) merge_with_stopped_run(resume, partial_path(o.resume), c.trace.steps, out);
    if (!stopping) {
      for (auto& [name, s] : out.series) compact_steps(s);
      compact_steps(out.digests, c.steps);
    }
    rec.series = std::move(out.series);
    rec.train_probes = std::move(out.train_probes);
    rec.module_trace = std::move(out.trace);
    rec.digests = std::move(out.digests);
  }
  stamp_trainer_record(l, passes, report, report_path, seed.second, rec);
  if (c.perturb == "parameter" && !report.perturbed.empty())  // the helper's ModuleTracer names it
    rec.fingerprint["perturb.parameter"] = {report.perturbed, false};
  if (c.perturb == "data" && !passes.data_outs.empty()) {
    // What the helper moved, as its rank-0 data-only pass reported it.
    std::string said = read_trainer_report(l.rank_dir(passes.data_outs.front(), 0) + "/" + kTrainerReportFile).perturbed;
    rec.fingerprint["perturb.data"] = {said.empty() ? "nothing: the trainer never called ctx.register_loader(loader) "
                                                      "(python/lockstep; the helper perturbs a sample there)"
                                                    : said,
                                       false};
  }
  if (stopping) {
    write_run_record(partial_path(l.checkpoint), rec);
    // Its hash beside it: an edited or damaged partial record is refused on resume.
    write_file_atomically(partial_path(l.checkpoint) + ".xxh3", file_xxh3(partial_path(l.checkpoint)) + "\n");
    result.stopped_at_checkpoint = true;
  }
  return result;
}

}  // namespace lockstep
