// The command line main() was given, kept for the front `lockstep` that
// hands a built-in smoke's `run`/`probe` and `env` to `lockstep-torch`
// (cli/torch_commands_exec.cpp), and how a `lockstep run` that check or
// bless started ties its life to theirs (die_with_parent_lockstep).
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

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

void die_with_parent_lockstep() {
  const char* value = std::getenv(kParentPidVariable);
  if (!value) return;
  std::string parent = value;
  ::unsetenv(kParentPidVariable);
  // A check or bless killed (SIGKILL, a cancelled CI job) must not leave
  // its training child running, holding a CPU or a GPU.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (std::to_string(::getppid()) != parent) {
    std::cerr << "error: the lockstep (pid " << parent << ") that started this run is gone\n";
    std::_Exit(3);
  }
}

const std::vector<std::string>& remembered_command_line() { return saved(); }

}  // namespace lockstep
