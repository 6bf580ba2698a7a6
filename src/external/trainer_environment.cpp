#include "external/trainer_environment.h"

#include <stdlib.h>

#include <algorithm>
#include <charconv>
#include <filesystem>

#include "core/error.h"
#include "core/json_io.h"
#include "machine/machine_facts.h"
#include "core/process.h"
#include "core/temp_folder.h"
#include "external/trainer_report.h"
#include "external/trainer_run.h"
#include "record/golden.h"
#include "record/platform_key.h"

namespace lockstep {
namespace fs = std::filesystem;

namespace {

const char* const kStackProbe =
    "import json, lockstep\n"
    "print(json.dumps({'schema': 'lockstep.stack/1', 'fingerprint': lockstep.stack_fingerprint()}))\n";

// Fields a run sets rather than the stack, or that name the smoke.
// python.torch.inductor is Inductor's config as the trainer left it, and
// only once it imported Inductor (torch 2.x's optimisers and torch.compile
// may): the probe's fresh interpreter never has, like python.module.*.
bool left_out_of_diff(const std::string& name, const FingerprintField& f) {
  for (const char* prefix : {"determinism.", "trainer.", "loader.", "python.module.", "data.", "model.", "config."})
    if (name.rfind(prefix, 0) == 0) return true;
  return name == "python.torch.inductor" || f.input;
}

// The record's contract field `key` as an integer in [1, 1024] (exit 2 otherwise).
int contract_threads(const RunRecord& r, const std::string& path, const char* key) {
  auto it = r.contract.find(key);
  std::string text = it == r.contract.end() ? "1" : it->second;
  int n = 0;
  auto res = std::from_chars(text.data(), text.data() + text.size(), n);
  if (res.ec != std::errc() || res.ptr != text.data() + text.size() || n < 1 || n > 1024)
    throw BadInput(path, std::string("contract.") + key, "an integer in [1, 1024], got \"" + input_excerpt(text) + "\"");
  return n;
}

// What the interpreter may print: a fingerprint is a few KB.
constexpr uintmax_t kMaxStackOutput = 16u << 20;

// Runs the helper's stack_fingerprint() in `interpreter` under `env`;
// its python.* fields.
Fingerprint python_facts(const std::string& interpreter, const std::map<std::string, std::string>& env,
                         const std::string& cwd) {
  TempFolder scratch("lockstep-env");
  const std::string& tmpl = scratch.path();
  ProcessSpec p;
  p.argv = {interpreter, "-c", kStackProbe};
  for (const auto& [k, v] : env) p.env.push_back(k + "=" + v);
  p.cwd = cwd;
  p.stdout_path = tmpl + "/stdout.log";
  p.stderr_path = tmpl + "/stderr.log";
  p.timeout_s = 300;
  ProcessOutcome o = run_process(p);
  if (!o.ok())
    throw EnvironmentError("the trainer's interpreter " + interpreter + " " + o.describe(p.timeout_s) +
                           " reading its stack (import lockstep; lockstep.stack_fingerprint()); its stderr: " +
                           tail_lines(p.stderr_path, 20));
  std::error_code ec;
  uintmax_t size = fs::file_size(p.stdout_path, ec);
  if (ec || size == 0 || size > kMaxStackOutput)
    throw EnvironmentError("the trainer's interpreter " + interpreter + " printed " +
                           (ec ? std::string("nothing readable") : std::to_string(size) + " bytes") +
                           " for lockstep.stack_fingerprint(), not one JSON fingerprint (a few KB): is it a Python "
                           "with lockstep's helper importable?");
  nlohmann::json doc;
  try {
    doc = parse_json_file(p.stdout_path);
  } catch (const Error& e) {
    throw EnvironmentError("the trainer's interpreter " + interpreter + " did not print a fingerprint for "
                           "lockstep.stack_fingerprint() (" + std::string(e.what()) + ")");
  }
  JsonView v(doc, interpreter + " (lockstep.stack_fingerprint())");
  v.allow_keys({"schema", "fingerprint"});
  if (v.at("schema").as_string() != "lockstep.stack/1") v.at("schema").fail("\"lockstep.stack/1\"");
  return fingerprint_from_json(v.at("fingerprint"));
}

// The interpreter to ask: `python` when given, else the smoke's
// trainer.command[0] resolved as a run resolves it (on the PATH lockstep
// hands the trainer, or relative to trainer.cwd), which must be a Python.
// Never a program the record names: a record is data (a CI artifact, a
// merge request's golden), and running what it says would run anything.
std::string choose_interpreter(const SmokeConfig& cfg, const std::string& python,
                               const std::map<std::string, std::string>& env) {
  auto it = env.find("PATH");
  const std::string path_var = it == env.end() ? "" : it->second;
  if (!python.empty()) return resolve_program(python, fs::current_path().string(), path_var, "env --python");
  const std::string& argv0 = cfg.trainer.command.front();
  std::string resolved = resolve_program(argv0, cfg.trainer.resolved_cwd, path_var, cfg.file + ": trainer.command[0]");
  if (fs::path(resolved).filename().string().rfind("python", 0) != 0)
    throw BadUsage(cfg.file + ": trainer.command[0] runs " + resolved + ", not a Python interpreter: name the one "
                   "the trainer runs with --python PATH");
  return resolved;
}

}  // namespace

bool is_trainer_fingerprint(const Fingerprint& record) { return record.count("trainer.command") > 0; }

TrainerEnvironmentDiff diff_trainer_environment(const std::string& path, const std::string& repo_path,
                                                const SmokeConfig& cfg, const std::string& python) {
  RunRecord rec = read_golden_or_record(path).record;
  if (!is_trainer_fingerprint(rec.fingerprint))
    throw BadInput(path, "fingerprint.trainer.command", "a team trainer's record (this one is a built-in smoke's)");
  if (rec.device != "cpu" && rec.device != "cuda")
    throw BadInput(path, "device", "\"cpu\" or \"cuda\", got \"" + input_excerpt(rec.device) + "\"");
  auto mode_it = rec.contract.find("mode");
  std::string mode = mode_it == rec.contract.end() ? "strict" : mode_it->second;
  if (mode != "strict" && mode != "default")
    throw BadInput(path, "contract.mode", "\"strict\" or \"default\", got \"" + input_excerpt(mode) + "\"");
  int intra = contract_threads(rec, path, "intra_op_threads");
  contract_threads(rec, path, "inter_op_threads");

  if (rec.smoke != cfg.name)
    throw BadUsage(cfg.file + ": the config of smoke '" + cfg.name + "', but " + path + " is a record of smoke '" +
                   input_excerpt(rec.smoke) + "'");
  if (!cfg.has_trainer()) throw BadUsage(cfg.file + ": a built-in smoke's config; " + path + " is a team trainer's record");
  // The environment lockstep would hand the trainer: the smoke's
  // trainer.env under the record's contract (never the record's variables).
  std::map<std::string, std::string> env = trainer_base_environment(cfg.trainer.env, mode, intra);

  TrainerEnvironmentDiff d;
  d.interpreter = choose_interpreter(cfg, python, env);
  MachineOptions m;
  m.device = rec.device;
  m.repo_path = repo_path;
  m.env = env;
  m.use_env = true;
  m.threads_pinned = true;  // as in a trainer run
  RunRecord here;
  here.fingerprint = machine_fingerprint(m);
  TrainerReport facts;
  facts.contract = rec.contract;
  facts.fingerprint = python_facts(d.interpreter, env, cfg.trainer.resolved_cwd);
  add_trainer_facts(facts, d.interpreter + " (lockstep.stack_fingerprint())", here);
  // The smoke's trainer.packages, on both sides, as check applies them.
  apply_package_relevance(cfg.trainer, rec.fingerprint);
  apply_package_relevance(cfg.trainer, here.fingerprint);
  d.config = cfg.file;
  d.platform = platform_key(here.fingerprint);
  d.record_platform = rec.platform;

  Fingerprint theirs, ours;
  for (const auto& [k, f] : rec.fingerprint) {
    if (left_out_of_diff(k, f)) ++d.left_out;
    else theirs[k] = f;
  }
  for (const auto& [k, f] : here.fingerprint)
    if (!left_out_of_diff(k, f)) ours[k] = f;
  // This process imported nothing of the trainer's: which packages and
  // modules the trainer imports is the record's to say.
  for (auto& [k, f] : ours)
    if (auto t = theirs.find(k); t != theirs.end() && (k.rfind("python.packages.", 0) == 0 ||
                                                      k.rfind("python.module.", 0) == 0))
      f.relevant = f.relevant || t->second.relevant;
  d.compared = theirs.size();
  d.differences = diff_fingerprints(theirs, ours);
  return d;
}

}  // namespace lockstep
