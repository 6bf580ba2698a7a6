// `lockstep hook install`, `lockstep hook uninstall` and `lockstep hook plan`.
//
// install: writes .git/hooks/pre-push of the repository holding the current
// folder — a short shim that runs the pre-push script lockstep ships
// (<prefix>/share/lockstep/hooks/pre-push, or ci/pre-push of lockstep's
// source tree) with this lockstep, honours LOCKSTEP_SKIP=1 itself, and says
// how to push or remove it once lockstep is uninstalled. Never overwrites
// a hook that is not lockstep's; re-running it is a no-op.
//
// uninstall: removes that shim (only lockstep's own).
//
// plan: what the hook checks and what triggers it, from the committed
// lockstep.json (gate/hook_settings.h), one "<kind>\t<path>" line each:
//   smokes	smoke
//   trigger	goldens/
#include <sys/stat.h>

#include <cstdio>
#include <filesystem>
#include <iostream>

#include "cli/commands.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "core/install_paths.h"
#include "machine/git_state.h"
#include "gate/hook_settings.h"

namespace lockstep {
namespace fs = std::filesystem;

namespace {
const char* kMarker = "# Installed by `lockstep hook install`";

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// The folder git runs hooks from: core.hooksPath, or the common git dir's
// hooks/ (a linked worktree shares its main repository's), as
// `git rev-parse --git-path hooks` says; libgit2's git dir when git is absent.
fs::path hooks_folder(const GitState& git, const std::string& dir) {
  std::string cmd = "git -C " + shell_quote(dir) + " rev-parse --path-format=absolute --git-path hooks 2>/dev/null";
  FILE* p = ::popen(cmd.c_str(), "r");
  std::string out;
  if (p) {
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
    if (::pclose(p) != 0) out.clear();
  }
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  if (!out.empty() && out.find('\n') == std::string::npos && fs::path(out).is_absolute()) return out;
  return fs::path(git.git_dir) / "hooks";
}

// The hook git runs: LOCKSTEP_SKIP=1 honoured by the shim itself, and when
// lockstep has been removed (the script or the binary gone) it says so
// and how to push or remove the hook, failing closed as git-lfs's and
// pre-commit's hooks do: a gate that vanished is never a silent pass.
std::string shim_body(const std::string& script, const std::string& self) {
  return "#!/bin/sh\n" + std::string(kMarker) +
         ": lockstep's pre-push check; settings in lockstep.json.\n"
         "# Remove it with `lockstep hook uninstall`, or delete this file.\n"
         "if [ \"${LOCKSTEP_SKIP:-0}\" = \"1\" ]; then\n"
         "  echo \"lockstep pre-push: skipped (LOCKSTEP_SKIP=1)\" >&2\n"
         "  exit 0\n"
         "fi\n"
         "installed_by=" + shell_quote(self) + "\n"
         "LOCKSTEP_BIN=\"${LOCKSTEP_BIN:-$installed_by}\"; export LOCKSTEP_BIN\n"
         "script=" + shell_quote(script) + "\n"
         "if [ ! -x \"$script\" ] || [ ! -x \"$LOCKSTEP_BIN\" ]; then\n"
         "  echo \"lockstep pre-push: this hook runs $script with $LOCKSTEP_BIN, and lockstep is no longer installed "
         "there (removed?); push blocked.\" >&2\n"
         "  echo \"  push without the check: LOCKSTEP_SKIP=1 git push   (or git push --no-verify)\" >&2\n"
         "  echo \"  remove the hook: rm '$0'   (or lockstep hook uninstall, where lockstep is installed)\" >&2\n"
         "  echo \"  or install lockstep again and run lockstep hook install\" >&2\n"
         "  exit 1\n"
         "fi\n"
         "exec \"$script\" \"$@\"\n";
}

}  // namespace

int hook_uninstall_command(const std::string& dir) {
  GitState git = read_git_state(fs::absolute(dir).string());
  if (!git.in_repo) throw BadUsage("hook uninstall: " + (git.error.empty() ? "not in a git repository" : git.error));
  fs::path hook = hooks_folder(git, dir) / "pre-push";
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(hook, ec))) {
    std::cout << "no pre-push hook in " << hook.parent_path().string() << ": nothing to remove\n";
    return 0;
  }
  // lockstep's shim, or a link to one (install takes a link to it as
  // installed, so uninstall removes the link, never its target).
  bool ours = fs::is_regular_file(hook, ec) && read_file(hook.string()).find(kMarker) != std::string::npos;
  if (!ours)
    throw BadUsage(hook.string() + ": a pre-push hook that `lockstep hook install` did not write; not removing it "
                   "(remove lockstep's line from it by hand)");
  if (!fs::remove(hook, ec) || ec) throw io_error(hook.string(), "remove the hook", ec.value());
  std::cout << "removed " << hook.string() << " (lockstep's pre-push check)\n";
  return 0;
}

int hook_install_command(const std::string& dir) {
  GitState git = read_git_state(fs::absolute(dir).string());
  if (!git.in_repo || git.workdir.empty()) throw BadUsage("hook install: " + (git.error.empty() ? "no work tree" : git.error));
  std::string script = shipped_path("hooks/pre-push", "ci/pre-push");
  if (script.empty())
    throw EnvironmentError("hook install: the pre-push script is neither in share/lockstep/hooks beside this lockstep "
                           "nor in its source tree (a broken install)");
  std::error_code ec;
  fs::path self = self_executable();
  fs::path hook = hooks_folder(git, dir) / "pre-push";
  std::string body = shim_body(script, self.string());
  bool replacing = false;
  if (fs::exists(hook, ec)) {
    std::string existing = read_file(hook.string());
    if (existing == body) {
      std::cout << "lockstep pre-push hook already installed: " << hook.string() << " (runs " << script << " with "
                << self.string() << ")\n";
      return 0;
    }
    if (existing.find(kMarker) == std::string::npos)
      throw BadUsage(hook.string() + ": a pre-push hook already exists; not overwriting it. Call " + script +
                     " from it, or remove it and run `lockstep hook install` again");
    replacing = true;  // an earlier lockstep's shim
  }
  fs::create_directories(hook.parent_path(), ec);
  write_file_atomically(hook.string(), body);
  ::chmod(hook.c_str(), 0755);
  std::cout << (replacing ? "updated " : "installed ") << hook.string() << " (runs " << script << " with "
            << self.string() << "; settings in lockstep.json; skip once with LOCKSTEP_SKIP=1 git push, or git "
            << "push --no-verify)\n";
  return 0;
}

int hook_plan_command(const HookPlanOptions& o) {
  HookPlan plan = hook_plan(o.root);
  for (const std::string& s : plan.smokes) std::cout << "smokes\t" << s << "\n";
  for (const std::string& t : plan.triggers) std::cout << "trigger\t" << t << "\n";
  for (const std::string& n : plan.notes) std::cout << "note\t" << n << "\n";
  return 0;
}

}  // namespace lockstep
