// `lockstep hook install`: installs the pre-push hook of the repository
// that contains the current folder, without overwriting an existing hook.
// The installed hook only execs ci/pre-push from the work tree, so updates
// to the script need no reinstall.
#include <sys/stat.h>

#include <filesystem>
#include <iostream>

#include "cli/commands.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "env/git_state.h"

namespace lockstep {
namespace fs = std::filesystem;

int hook_install_command() {
  GitState git = read_git_state(fs::current_path().string());
  if (!git.in_repo || git.workdir.empty()) throw BadUsage("hook install: " + (git.error.empty() ? "no work tree" : git.error));
  fs::path hooks = fs::path(git.git_dir) / "hooks";
  fs::path hook = hooks / "pre-push";
  std::string body =
      "#!/bin/sh\n"
      "# Installed by `lockstep hook install`: runs ci/pre-push of this work tree.\n"
      "exec \"$(git rev-parse --show-toplevel)/ci/pre-push\" \"$@\"\n";
  std::error_code ec;
  if (fs::exists(hook, ec)) {
    if (read_file(hook.string()) == body) {
      std::cout << "lockstep pre-push hook already installed: " << hook.string() << "\n";
      return 0;
    }
    throw BadUsage(hook.string() + ": a pre-push hook already exists; not overwriting it. Call ci/pre-push "
                   "from it, or remove it and run `lockstep hook install` again");
  }
  if (!fs::exists(fs::path(git.workdir) / "ci" / "pre-push", ec))
    throw BadUsage(git.workdir + "ci/pre-push: missing; the hook would have nothing to run");
  write_file_atomically(hook.string(), body);
  ::chmod(hook.c_str(), 0755);
  std::cout << "installed " << hook.string() << " (skip with LOCKSTEP_SKIP=1 git push, or git push --no-verify)\n";
  return 0;
}

}  // namespace lockstep
