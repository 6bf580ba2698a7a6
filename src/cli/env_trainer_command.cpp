// `lockstep env --diff RECORD` when RECORD is a team trainer's: the diff is
// made without LibTorch (external/trainer_environment.h: this machine's
// facts and the trainer interpreter's Python stack), so the front answers
// it itself; every other `env` goes to lockstep-torch (env_command).
#include <filesystem>
#include <iostream>

#include "cli/commands.h"
#include "core/error.h"
#include "core/json_io.h"
#include "external/trainer_environment.h"
#include "record/golden.h"

namespace lockstep {

bool is_trainer_record_file(const std::string& path) {
  try {
    return is_trainer_fingerprint(read_golden_or_record(path).record.fingerprint);
  } catch (const Error&) {
    return false;  // env_command reads it again and says what is wrong
  }
}

int env_trainer_diff_command(const EnvOptions& o) {
  if (o.device_given)
    throw BadUsage("env --device " + o.device + " --diff " + o.diff_record + ": a team trainer's record; the diff "
                   "uses the record's device; drop --device");
  TrainerEnvironmentDiff d = diff_trainer_environment(o.diff_record, std::filesystem::current_path().string());
  size_t relevant = 0;
  for (const auto& f : d.differences) relevant += f.relevant ? 1 : 0;
  if (o.json) {
    nlohmann::json arr = nlohmann::json::array();
    for (const auto& f : d.differences)
      arr.push_back({{"field", f.name}, {"record", f.golden}, {"here", f.run}, {"relevant", f.relevant}});
    std::cout << pretty_dump({{"platform", d.platform},
                              {"record_platform", d.record_platform},
                              {"interpreter", d.interpreter},
                              {"differences", arr},
                              {"compared", d.compared},
                              {"left_out", d.left_out}});
    return 0;
  }
  std::cout << "platform here: " << printable_message(d.platform, false) << ", in " << o.diff_record << ": "
            << printable_message(d.record_platform, false) << "\n"
            << "a team trainer's record, compared with this machine and its interpreter "
            << printable_message(d.interpreter, false) << ": " << d.differences.size() << " difference(s) in "
            << d.compared << " field(s), " << relevant
            << " determinism-relevant (*: a check against this record would use the cross-stack lane); " << d.left_out
            << " field(s) a run sets itself (its determinism contract, loader, modules imported) are left out\n";
  for (const auto& f : d.differences)
    std::cout << (f.relevant ? "* " : "  ") << printable_message(f.name, false)
              << "\n      record: " << printable_message(f.golden, false)
              << "\n      here:   " << printable_message(f.run, false) << "\n";
  return 0;
}

}  // namespace lockstep
