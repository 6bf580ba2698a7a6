#include "external/trainer_environment.h"

#include <stdlib.h>

#include <algorithm>
#include <charconv>
#include <filesystem>

#include "core/error.h"
#include "core/json_io.h"
#include "machine/machine_facts.h"
#include "core/process.h"
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
bool left_out_of_diff(const std::string& name, const FingerprintField& f) {
  for (const char* prefix : {"determinism.", "trainer.", "loader.", "python.module.", "data.", "model.", "config."})
    if (name.rfind(prefix, 0) == 0) return true;
  return f.input;
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

// Runs the helper's stack_fingerprint() in `interpreter` under `env`;
// its python.* fields.
Fingerprint python_facts(const std::string& interpreter, const std::map<std::string, std::string>& env) {
  std::string tmpl = (fs::temp_directory_path() / "lockstep-env-XXXXXX").string();
  if (!::mkdtemp(tmpl.data())) throw EnvironmentError("cannot create a temporary folder in " + fs::temp_directory_path().string());
  struct Cleanup {
    std::string dir;
    ~Cleanup() {
      std::error_code ec;
      fs::remove_all(dir, ec);
    }
  } cleanup{tmpl};
  ProcessSpec p;
  p.argv = {interpreter, "-c", kStackProbe};
  for (const auto& [k, v] : env) p.env.push_back(k + "=" + v);
  p.cwd = fs::current_path().string();
  p.stdout_path = tmpl + "/stdout.log";
  p.stderr_path = tmpl + "/stderr.log";
  p.timeout_s = 300;
  auto it = env.find("PATH");
  resolve_program(interpreter, p.cwd, it == env.end() ? "" : it->second);  // exit 2 naming it when absent
  ProcessOutcome o = run_process(p);
  if (!o.ok())
    throw EnvironmentError("the trainer's interpreter " + interpreter + " " + o.describe(p.timeout_s) +
                           " reading its stack (import lockstep; lockstep.stack_fingerprint()); its stderr: " +
                           tail_lines(p.stderr_path, 20));
  nlohmann::json doc = parse_json_file(p.stdout_path);
  JsonView v(doc, interpreter + " (lockstep.stack_fingerprint())");
  v.allow_keys({"schema", "fingerprint"});
  if (v.at("schema").as_string() != "lockstep.stack/1") v.at("schema").fail("\"lockstep.stack/1\"");
  return fingerprint_from_json(v.at("fingerprint"));
}

}  // namespace

bool is_trainer_fingerprint(const Fingerprint& record) { return record.count("trainer.command") > 0; }

TrainerEnvironmentDiff diff_trainer_environment(const std::string& path, const std::string& repo_path) {
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

  // The environment lockstep would hand the trainer: the record's
  // trainer.env (the smoke's own variables) under the record's contract.
  std::map<std::string, std::string> extra;
  for (const auto& [k, f] : rec.fingerprint)
    if (k.rfind("trainer.env.", 0) == 0 && k != "trainer.env.PYTHONHASHSEED" && k != "trainer.env.PYTHONPATH")
      extra[k.substr(12)] = f.value;
  std::map<std::string, std::string> env = trainer_base_environment(extra, mode, intra);

  TrainerEnvironmentDiff d;
  auto exe = rec.fingerprint.find("python.executable");
  d.interpreter = exe == rec.fingerprint.end() ? "python3" : exe->second.value;
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
  facts.fingerprint = python_facts(d.interpreter, env);
  add_trainer_facts(facts, d.interpreter + " (lockstep.stack_fingerprint())", here);
  d.platform = platform_key(here.fingerprint);
  d.record_platform = rec.platform;

  Fingerprint theirs, ours;
  for (const auto& [k, f] : rec.fingerprint) {
    if (left_out_of_diff(k, f)) ++d.left_out;
    else theirs[k] = f;
  }
  for (const auto& [k, f] : here.fingerprint)
    if (!left_out_of_diff(k, f)) ours[k] = f;
  d.compared = theirs.size();
  d.differences = diff_fingerprints(theirs, ours);
  // Relevant first (diff_fingerprints' order), and among them the Python
  // packages: an upgraded library is the usual news.
  auto rank = [](const FieldDiff& f) {
    return f.relevant ? (f.name.rfind("python.packages.", 0) == 0 ? 0 : 1) : 2;
  };
  std::stable_sort(d.differences.begin(), d.differences.end(),
                   [&](const FieldDiff& a, const FieldDiff& b) { return rank(a) < rank(b); });
  return d;
}

}  // namespace lockstep
