#include "cli/child_runs.h"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "core/error.h"

extern char** environ;

namespace lockstep {

std::string self_executable() {
  std::error_code ec;
  auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) throw EnvironmentError("cannot resolve /proc/self/exe: " + ec.message());
  return p.string();
}

RunRecord run_child(const ChildRun& run) {
  std::vector<std::string> args = {self_executable(), "run", run.config, "--out", run.out, "--quiet"};
  args.insert(args.end(), run.extra_args.begin(), run.extra_args.end());
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  pid_t pid = 0;
  int rc = posix_spawn(&pid, argv[0], nullptr, nullptr, argv.data(), environ);
  if (rc != 0) throw EnvironmentError("cannot start " + args[0] + ": " + std::strerror(rc));
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) throw EnvironmentError(std::string("waitpid: ") + std::strerror(errno));
  }
  if (WIFSIGNALED(status))
    throw EnvironmentError("`lockstep run " + run.config + "` was killed by signal " +
                           std::to_string(WTERMSIG(status)));
  int code = WEXITSTATUS(status);
  if (code == to_int(ExitCode::kBadInput))
    throw Error(ExitCode::kBadInput, "`lockstep run " + run.config + "` failed (see above)");
  if (code != 0)
    throw Error(ExitCode::kEnvironment, "`lockstep run " + run.config + "` exited with " +
                                            std::to_string(code) + " (see above)");
  return read_run_record(run.out);
}

}  // namespace lockstep
