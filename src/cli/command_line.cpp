// The command line main() was given, kept for the front `lockstep` that
// hands a built-in smoke's `run`/`probe` and `env` to `lockstep-torch`
// (cli/torch_commands_exec.cpp). (A `lockstep run` that check or bless
// started dies with them through the process runner: core/process.h.)
#include <cstdlib>
#include <iostream>

#include "cli/commands.h"
#include "launch/launcher.h"

namespace lockstep {

namespace {
std::vector<std::string>& saved() {
  static std::vector<std::string> args;
  return args;
}
}  // namespace

void remember_command_line(int argc, char** argv) {
  saved().assign(argv, argv + argc);
}

const std::vector<std::string>& remembered_command_line() { return saved(); }

void respell_remembered_flag(const std::string& old, const std::vector<std::string>& now) {
  std::vector<std::string> out;
  for (const std::string& a : saved()) {
    if (a == old) out.insert(out.end(), now.begin(), now.end());
    else if (now.size() == 1 && a.rfind(old + "=", 0) == 0) out.push_back(now[0] + a.substr(old.size()));
    else out.push_back(a);
  }
  saved() = std::move(out);
}

}  // namespace lockstep
