// `lockstep env --diff RECORD` when RECORD is a team trainer's: the diff is
// made without LibTorch (external/trainer_environment.h: this machine's
// facts and the trainer interpreter's Python stack), so the front answers
// it itself; every other `env` goes to lockstep-torch (env_command).
#include <filesystem>
#include <iostream>
#include <optional>

#include "bisect/bisect_env.h"
#include "cli/commands.h"
#include "core/error.h"
#include "core/atomic_file.h"
#include "core/json_io.h"
#include "external/trainer_environment.h"
#include "record/golden.h"
#include "smoke/smoke_config.h"

namespace lockstep {

bool is_trainer_record_file(const std::string& path) {
  try {
    return is_trainer_fingerprint(read_golden_or_record(path).record.fingerprint);
  } catch (const Error&) {
    return false;  // env_command reads it again and says what is wrong
  }
}

namespace {

// The smoke config of the trainer record at `record` (a golden filed as
// <goldens>/<smoke>/<platform>.json): `given` when set, else the one of
// that name in the smoke/ folder beside the goldens folder. Exit 2 when
// there is none: the config names the interpreter to ask (a record's own
// python.executable is never run).
SmokeConfig trainer_config_of(const std::string& record, const std::string& given) {
  if (!given.empty()) return load_smoke_config(given);
  std::string smoke = read_golden_or_record(record).record.smoke;
  namespace fs = std::filesystem;
  fs::path goldens = fs::absolute(record).lexically_normal().parent_path().parent_path();
  fs::path smoke_dir = goldens.parent_path() / "smoke";
  std::error_code ec;
  if (fs::is_directory(smoke_dir, ec)) {
    try {
      auto all = load_smoke_folder(smoke_dir.string());
      auto it = all.find(smoke);
      if (it != all.end()) return it->second;
    } catch (const Error&) {  // a folder that does not load is no answer; said below
    }
  }
  throw BadUsage("env --diff " + record + ": a team trainer's record of smoke '" + input_excerpt(smoke) +
                 "', and no config of that smoke in " + smoke_dir.string() + ": pass --config SMOKE (its "
                 "trainer.command names the interpreter to ask; lockstep never runs a program a record names)");
}

}  // namespace

void write_env_pair(const EnvOptions& o, const std::vector<FieldDiff>& differences) {
  if (o.write_envs.empty()) return;
  std::error_code same;
  if (o.write_envs.size() != 2 ||
      std::filesystem::weakly_canonical(std::filesystem::absolute(o.write_envs[0]), same) ==
          std::filesystem::weakly_canonical(std::filesystem::absolute(o.write_envs[1]), same))
    throw BadUsage("env --write-envs: two different files, the record's and this machine's");
  for (const auto& path : o.write_envs) {
    std::error_code ec;
    if (path.empty() || path.back() == '/' || std::filesystem::is_directory(path, ec))
      throw BadUsage("env --write-envs '" + path + "': a file path for an environment file");
    if (!std::filesystem::exists(path, ec)) continue;
    try {
      read_stack_env(path);  // an earlier environment file may be replaced, nothing else
    } catch (const Error&) {
      throw BadUsage("env --write-envs " + path + ": refusing to overwrite a file that is not an environment file");
    }
  }
  StackEnv record, here;
  std::vector<std::string> left_out;
  size_t used = settable_differences(differences, record, here, left_out);
  write_stack_env(o.write_envs[0], record);
  write_stack_env(o.write_envs[1], here);
  std::ostream& out = o.json ? std::cerr : std::cout;  // --json: stdout holds the JSON only
  out << "wrote " << used << " settable difference(s): the record's values to " << o.write_envs[0]
            << ", this machine's to " << o.write_envs[1] << " (lockstep bisect-env --good-env " << o.write_envs[0]
            << " --bad-env " << o.write_envs[1] << " SMOKE)";
  if (!left_out.empty()) {
    out << "; not settable by a variable: ";
    for (size_t i = 0; i < left_out.size() && i < 6; ++i) out << (i ? ", " : "") << left_out[i];
    if (left_out.size() > 6) out << ", and " << left_out.size() - 6 << " more";
  }
  out << "\n";
}

int env_trainer_diff_command(const EnvOptions& o) {
  if (o.device_given)
    throw BadUsage("env --device " + o.device + " --diff " + o.diff_record + ": a team trainer's record; the diff "
                   "uses the record's device; drop --device");
  SmokeConfig cfg = trainer_config_of(o.diff_record, o.config);
  TrainerEnvironmentDiff d =
      diff_trainer_environment(o.diff_record, std::filesystem::current_path().string(), cfg, o.python);
  size_t relevant = 0;
  for (const auto& f : d.differences) relevant += f.relevant ? 1 : 0;
  if (o.json || !o.json_out.empty()) {
    nlohmann::json arr = nlohmann::json::array();
    for (const auto& f : d.differences)
      arr.push_back({{"field", f.name}, {"record", f.golden}, {"here", f.run}, {"relevant", f.relevant}});
    const std::string doc = pretty_dump({{"platform", d.platform},
                                         {"record_platform", d.record_platform},
                                         {"interpreter", d.interpreter},
                                         {"differences", arr},
                                         {"compared", d.compared},
                                         {"config", d.config},
                                         {"left_out", d.left_out}});
    if (!o.json_out.empty()) write_file_atomically(o.json_out, doc);
    if (o.json) {
      std::cout << doc;  // --format json: stdout holds the JSON only
      write_env_pair(o, d.differences);
      return 0;
    }
  }
  std::cout << "platform here: " << printable_message(d.platform, false) << ", in " << o.diff_record << ": "
            << printable_message(d.record_platform, false) << "\n"
            << "a team trainer's record, compared with this machine and its interpreter "
            << printable_message(d.interpreter, false) << ": " << d.differences.size() << " difference(s) in "
            << d.compared << " field(s), " << relevant
            << " determinism-relevant (*: a check against this record would use the cross-stack lane); " << d.left_out
            << " field(s) a run sets itself (its determinism contract, loader, modules imported) are left out"
            << "; the interpreter and trainer.packages are " + d.config + "'s\n";
  for (const auto& f : d.differences)
    std::cout << (f.relevant ? "* " : "  ") << printable_message(f.name, false)
              << "\n      record: " << printable_message(f.golden, false)
              << "\n      here:   " << printable_message(f.run, false) << "\n";
  write_env_pair(o, d.differences);
  return 0;
}

}  // namespace lockstep
