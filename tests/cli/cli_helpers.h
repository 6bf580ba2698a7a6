// Helpers for the end-to-end tests: run the lockstep executable the way CI
// and users do, and build scratch projects from the committed smokes.
//
//   Result r = lockstep("check " + smoke + " --out " + dir);
//   EXPECT_EQ(r.code, 1) << r.output;
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <string>

#include "core/atomic_file.h"
#include "core/json_io.h"
#include "test_paths.h"

namespace lockstep::cli_test {
namespace fs = std::filesystem;

struct Result {
  int code = -1;
  std::string output;  // stdout and stderr
};

// Runs a shell command, capturing stdout and stderr together.
inline Result shell(const std::string& cmd) {
  Result r;
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.output.append(buf, n);
  int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

// This test process's own working folder for lockstep (a run without
// --out writes lockstep-out/ there): CTest runs the CLI tests two at a
// time, each in its own process, and none may see another's outputs.
// Removed when the process ends.
inline const std::string& own_working_dir() {
  struct Dir {
    std::string path;
    Dir() : path((fs::temp_directory_path() / ("lockstep-cli-cwd-" + std::to_string(::getpid()))).string()) {
      fs::create_directories(path);
    }
    ~Dir() {
      std::error_code ec;
      fs::remove_all(path, ec);
    }
  };
  static Dir dir;
  return dir.path;
}

// Runs `lockstep ARGS` with CI unset (bless refuses in CI), with extra
// environment `env`, in folder `dir` when given, else in the test's own
// working folder.
inline Result lockstep(const std::string& args, const std::string& env = "", const std::string& dir = "") {
  return shell("cd '" + (dir.empty() ? own_working_dir() : dir) + "' && env -u CI " + env + " " + test_paths::lockstep_binary() +
               " " + args);
}

inline const std::string kSourceDir = test_paths::source_dir();

// The folder of lockstep's fetched datasets ("{data}" in a config), by the
// rule of smoke_config.h's data_dir().
inline std::string data_dir() {
  const char* d = std::getenv("LOCKSTEP_DATA_DIR");
  if (d && *d) return d;
  const char* x = std::getenv("XDG_CACHE_HOME");
  if (x && *x) return std::string(x) + "/lockstep/data";
  return std::string(std::getenv("HOME")) + "/.cache/lockstep/data";
}
inline const std::string kSmoke = kSourceDir + "/smoke/digits-cnn.json";

// The scratch projects this test process made, removed when it exits
// (KEEP=1 keeps them, to look at a failure).
struct ScratchProjects {
  std::vector<fs::path> made;
  ~ScratchProjects() {
    if (std::getenv("KEEP")) return;
    std::error_code ec;
    for (const auto& d : made) fs::remove_all(d, ec);
  }
};
inline ScratchProjects& scratch_projects() {
  static ScratchProjects projects;
  return projects;
}

// A scratch project: smoke/<name of `smoke`> (optionally edited) and, once
// blessed, goldens/. Defaults to the digits-cnn smoke.
inline fs::path scratch(const std::string& name, const std::function<void(nlohmann::json&)>& edit = {},
                        const std::string& smoke = kSmoke) {
  fs::path d = fs::temp_directory_path() / ("lockstep-cli-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(d);
  scratch_projects().made.push_back(d);
  fs::create_directories(d / "smoke");
  nlohmann::json cfg = parse_json_file(smoke);
  cfg.erase("platforms");  // a scratch golden is made for whatever platform runs the test
  cfg.erase("equivalence");  // lanes are runs of their own, tested where they are the subject
  if (edit) edit(cfg);
  write_file_atomically((d / "smoke" / fs::path(smoke).filename()).string(), pretty_dump(cfg));
  return d;
}

}  // namespace lockstep::cli_test
