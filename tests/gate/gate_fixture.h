// Test helper for the orchestration layer: a scratch project (smoke/ and
// goldens/ in a temporary folder outside any git repository) and a fake
// Launcher that hands out canned run records, so check and bless run
// in-process without LibTorch or child processes.
//
//   GateProject p("check-pass");
//   p.write_golden(make_gate_record());
//   FakeLauncher l;  l.record = make_gate_record();
//   SmokeCheck c = check_smoke(p.smoke_file(), p.check_options(), l);
#pragma once

#include <unistd.h>

#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/atomic_file.h"
#include "core/json_io.h"
#include "gate/check.h"
#include "gate/provenance.h"
#include "launch/launcher.h"
#include "record/golden.h"
#include "record_builder.h"

namespace lockstep::testing {

/// `lines` one per line, for a failed expectation's message.
inline std::string joined(const std::vector<std::string>& lines) {
  std::string all;
  for (const auto& l : lines) all += l + "\n";
  return all;
}

/// A record of the scratch smoke "unit": two steps, two probed batches that
/// the trainer consumed in the same order.
inline RunRecord make_gate_record() {
  RunRecord r = make_record({2.5, 2.25});
  r.probes = {make_probe(0, 1.0), make_probe(1, 2.0)};
  r.train_probes = r.probes;
  return r;
}

/// Returns `record` for every run; `edit(call, run, record)` may change
/// the record of a given call (1-based) before it is returned.
/// Thread-safe, as check -j needs of a launcher (runs in several threads).
class FakeLauncher : public Launcher {
 public:
  RunRecord record = make_gate_record();
  std::function<void(size_t, const ChildRun&, RunRecord&)> edit;
  std::function<void(const ChildRun&)> fail;  ///< may throw, for launcher errors
  std::vector<ChildRun> calls;                ///< every run asked for, in order
  std::vector<ChildRun> checkpoints;          ///< every run_to_checkpoint

  RunRecord run(const ChildRun& run) override {
    std::lock_guard<std::mutex> lock(*mutex_);
    calls.push_back(run);
    if (fail) fail(run);
    RunRecord r = record;
    if (edit) edit(calls.size(), run, r);
    return r;
  }
  /// Every run_together: its lanes' names, in order; then one run() each.
  std::vector<std::vector<std::string>> together;
  std::vector<RunRecord> run_together(const std::vector<ChildRun>& lanes) override {
    {
      std::lock_guard<std::mutex> lock(*mutex_);
      together.emplace_back();
      for (const auto& lane : lanes) together.back().push_back(lane.variant);
    }
    return Launcher::run_together(lanes);
  }
  void run_to_checkpoint(const ChildRun& run) override {
    std::lock_guard<std::mutex> lock(*mutex_);
    checkpoints.push_back(run);
    if (fail) fail(run);
  }

 private:
  std::shared_ptr<std::mutex> mutex_ = std::make_shared<std::mutex>();  ///< copies share it
};

/// smoke/unit.json (a small CSV smoke; its data is never read: the
/// launcher is fake) and goldens/ in a fresh temporary folder.
class GateProject {
 public:
  explicit GateProject(const std::string& name, const std::function<void(nlohmann::json&)>& edit = {}) {
    root_ = std::filesystem::temp_directory_path() / ("lockstep-gate-" + name + "-" + std::to_string(::getpid()));
    std::filesystem::remove_all(root_);
    std::filesystem::create_directories(root_ / "smoke");
    nlohmann::json cfg = {
        {"name", "unit"}, {"seed", 42}, {"steps", 2},
        {"data", {{"source", "csv"}, {"path", "unit.csv"}, {"sample_shape", {4}}, {"batch_size", 4}}},
        {"model", {{"name", "mlp"}, {"classes", 4}}},
        {"optimizer", {{"name", "sgd"}, {"lr", 0.1}}}};
    if (edit) edit(cfg);
    write_file_atomically(smoke_file(), pretty_dump(cfg));
  }
  ~GateProject() { std::filesystem::remove_all(root_); }

  std::string smoke_file() const { return (root_ / "smoke" / "unit.json").string(); }
  std::string out_dir() const { return (root_ / "out").string(); }
  std::string goldens_dir() const { return (root_ / "goldens").string(); }
  std::filesystem::path root() const { return root_; }

  /// Blesses `record` by hand as goldens/unit/<platform>[@<stack>].json.
  std::string write_golden(const RunRecord& record, const std::string& platform = "") {
    Golden g;
    g.record = record;
    if (!platform.empty()) g.record.platform = platform;
    g.provenance = stamp_provenance("bless", "test golden", GitState{}, 2);
    std::string key = g.record.stack.empty() ? g.record.platform : g.record.platform + "@" + g.record.stack;
    std::string path = (root_ / "goldens" / "unit" / (key + ".json")).string();
    lockstep::write_golden(path, g);
    return path;
  }

  CheckSmokeOptions check_options() const {
    CheckSmokeOptions o;
    o.out_dir = out_dir();
    return o;
  }

 private:
  std::filesystem::path root_;
};

}  // namespace lockstep::testing
