// Test fixture for bisect: a real git repository made in a scratch folder
// whose commits change a smoke's learning rate, and a fake launcher whose
// records follow that rate (tests/bisect/, tests/cli/bisect_command_test.cpp).
//
//   Repo repo("forty", 40, [](int k) { return k >= 23 ? 0.1001 : 0.1; });
//   FakeLauncher l = lr_launcher();
//   BisectResult r = bisect(repo.options(0, 39), l);   // r.first_bad.hash == repo.hash(23)
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "bisect/bisect.h"
#include "core/atomic_file.h"
#include "core/json_io.h"
#include "gate/gate_fixture.h"

namespace lockstep::testing {

namespace fs = std::filesystem;

/// Runs `cmd` in a shell; its stdout and stderr. A non-zero exit fails the test.
inline std::string sh(const std::string& cmd) {
  std::string out;
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  EXPECT_EQ(pclose(p), 0) << cmd << "\n" << out;
  return out;
}

/// A repository whose commit k (0-based) holds smoke/unit.json with the
/// learning rate lr(k) (or no config where lr(k) < 0), and whatever
/// `extra(k, dir)` adds.
class Repo {
 public:
  Repo(const std::string& name, int commits, const std::function<double(int)>& lr,
       const std::function<void(int, const fs::path&)>& extra = {}) {
    dir_ = fs::temp_directory_path() / ("lockstep-bisect-repo-" + name + "-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    git("init -q -b main");
    for (int k = 0; k < commits; ++k) {
      fs::create_directories(dir_ / "smoke");
      fs::path cfg = dir_ / "smoke" / "unit.json";
      if (lr(k) < 0) {
        fs::remove(cfg);
      } else {
        nlohmann::json c = {{"name", "unit"}, {"seed", 42}, {"steps", 2},
                            {"data", {{"source", "csv"}, {"path", "unit.csv"}, {"sample_shape", {4}}, {"batch_size", 4}}},
                            {"model", {{"name", "mlp"}, {"classes", 4}}},
                            {"optimizer", {{"name", "sgd"}, {"lr", lr(k)}}}};
        write_file_atomically(cfg.string(), pretty_dump(c));
      }
      write_file_atomically((dir_ / "history.txt").string(), "commit " + std::to_string(k) + "\n");
      if (extra) extra(k, dir_);
      git("add -A");
      git("commit -q -m 'commit " + std::to_string(k) + "'");
      hashes_.push_back(sh("git -C '" + dir_.string() + "' rev-parse HEAD").substr(0, 40));
    }
  }
  ~Repo() { fs::remove_all(dir_); }
  void git(const std::string& args) {
    sh("git -C '" + dir_.string() + "' -c user.name=Ann -c user.email=ann@example.org " + args);
  }
  const std::string& hash(int k) const { return hashes_[static_cast<size_t>(k)]; }
  std::string path() const { return dir_.string(); }

  BisectOptions options(int good, int bad) const {
    BisectOptions o;
    o.good = hash(good);
    o.bad = hash(bad);
    o.repo = path();
    o.out_dir = (dir_.parent_path() / (dir_.filename().string() + "-out")).string();
    return o;
  }

 private:
  fs::path dir_;
  std::vector<std::string> hashes_;
};

/// Records whose loss follows the config's lr (as a real run's would).
inline FakeLauncher lr_launcher() {
  FakeLauncher l;
  l.edit = [](size_t, const ChildRun& run, RunRecord& r) {
    double lr = parse_json_file(run.smoke)["optimizer"]["lr"].get<double>();
    r.series["loss"].values[1] = static_cast<float>(2.25 - lr);
    if (fs::exists(fs::path(run.smoke).parent_path() / "nondeterministic"))
      r.series["grad_norm"].values[1] += (run.out[run.out.size() - 6] - '0') * 1e-3;  // unit-N.json: N
  };
  return l;
}

}  // namespace lockstep::testing
