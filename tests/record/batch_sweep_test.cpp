#include "record/batch_sweep.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <functional>

#include "core/atomic_file.h"
#include "core/error.h"
#include "core/json_io.h"

namespace lockstep {
namespace {

namespace fs = std::filesystem;

// A sweep of 4 samples (sizes 4, 2, 1): fc invariant, mix not at 1 (where
// the difference starts), the model's output carrying it on.
BatchSweep sample_sweep() {
  BatchSweep s;
  s.smoke = "unit";
  s.device = "cpu";
  s.batch = 4;
  s.sizes = {4, 2, 1};
  s.forward_s = 0.001;
  s.modules = {{"fc", "Linear", true, {{2, 0, 0, 0, 0, 0.01, 0}, {1, 0, 0, 0, 0, 0.02, 0}}},
               {"mix", "Mix", true, {{2, 0, 0, 0, 0, 0.01, 0}, {1, 4, 4, 3, 2.5e-7, 0.02, 0}}},
               {"(model output)", "Net", true, {{2, 0, 0, 0, 0, 0.01, 0}, {1, 4, 0, 3, 2.5e-7, 0.02, 0}}}};
  return s;
}

std::string write_sweep(const std::string& name, const std::function<void(nlohmann::json&)>& edit) {
  fs::path p = fs::temp_directory_path() / ("lockstep-sweep-" + name + "-" + std::to_string(::getpid()) + ".json");
  nlohmann::json j = batch_sweep_json(sample_sweep());
  edit(j);
  write_file_atomically(p.string(), pretty_dump(j));
  return p.string();
}

// What a module's cells say: the first size that differs, the first where
// a difference starts, and the whole sweep's verdict.
TEST(BatchSweepRecord, TheVerdictIsWhatTheCellsSay) {
  BatchSweep s = sample_sweep();
  EXPECT_FALSE(s.invariant());
  EXPECT_EQ(s.modules[0].first_size_differing(), 0);
  EXPECT_EQ(s.modules[1].first_size_differing(), 1);
  EXPECT_EQ(s.modules[1].first_size_originating(), 1);
  EXPECT_EQ(s.modules[2].first_size_originating(), 0);
  s.modules[1].cells[1] = {1, 0, 0, 0, 0, 0.02, 0};
  s.modules[2].cells[1] = {1, 0, 0, 0, 0, 0.02, 0};
  EXPECT_TRUE(s.invariant());
}

TEST(BatchSweepRecord, ItsJsonReadsBackAsWritten) {
  const std::string path = write_sweep("round-trip", [](nlohmann::json&) {});
  BatchSweep back = read_batch_sweep(path);
  EXPECT_EQ(batch_sweep_json(back), batch_sweep_json(sample_sweep()));
  fs::remove(path);
}

// The helper's form: no smoke, device nor derived fields; they are
// recomputed.
TEST(BatchSweepRecord, TheHelpersFormWithoutDerivedFieldsIsRead) {
  const std::string path = write_sweep("helper", [](nlohmann::json& j) {
    j.erase("smoke");
    j.erase("device");
    j.erase("invariant");
    for (auto& m : j["modules"]) {
      m.erase("invariant");
      m.erase("first_size_differing");
      m.erase("first_size_originating");
    }
  });
  BatchSweep s = read_batch_sweep(path);
  EXPECT_EQ(s.smoke, "");
  EXPECT_FALSE(s.invariant());
  EXPECT_EQ(s.modules[1].cells[1].max_ulp, 3u);
  fs::remove(path);
}

// Each malformed sweep is exit 2 naming the file, the field and what was
// expected; a derived field that contradicts the cells is never trusted.
TEST(BatchSweepRecord, AMalformedSweepIsExitTwoNamingTheField) {
  struct Case {
    std::string name;
    std::function<void(nlohmann::json&)> edit;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {"sizes", [](nlohmann::json& j) { j["sizes"] = {4, 3, 1}; },
       "sizes[1]: expected 2 (the batch halved, rounded down)"},
      {"size-count", [](nlohmann::json& j) { j["sizes"] = {4, 2}; }, "sizes: expected the sizes 4 halved down to 1"},
      {"batch", [](nlohmann::json& j) { j["batch"] = 1; }, "batch: expected"},
      {"cells", [](nlohmann::json& j) { j["modules"][0]["cells"].erase(1); }, "modules[0].cells: expected 2 cells"},
      {"cell-order", [](nlohmann::json& j) { std::swap(j["modules"][0]["cells"][0], j["modules"][0]["cells"][1]); },
       "modules[0].cells[0].size: expected the sweep's size 2"},
      {"new", [](nlohmann::json& j) { j["modules"][2]["cells"][1]["samples_new"] = 5; },
       "modules[2].cells[1].samples_new: expected"},
      {"differ", [](nlohmann::json& j) { j["modules"][2]["cells"][1]["samples_differ"] = 9; },
       "modules[2].cells[1].samples_differ: expected"},
      {"abs", [](nlohmann::json& j) { j["modules"][1]["cells"][1]["max_abs"] = -1; },
       "modules[1].cells[1].max_abs: expected"},
      {"ulp-without-difference", [](nlohmann::json& j) { j["modules"][0]["cells"][0]["max_ulp"] = 2; },
       "modules[0].cells[0].max_ulp: expected 0 and max_abs 0 where no sample differs"},
      {"invariant", [](nlohmann::json& j) { j["invariant"] = true; },
       "invariant: expected false (what the modules' cells say)"},
      {"module-invariant", [](nlohmann::json& j) { j["modules"][1]["invariant"] = true; },
       "modules[1].invariant: expected false (what its cells say)"},
      {"no-modules", [](nlohmann::json& j) { j["modules"] = nlohmann::json::array(); },
       "modules: expected 1 to 100000 modules"},
      {"typo", [](nlohmann::json& j) { j["modules"][0]["celss"] = 1; }, "celss"},
      {"twice", [](nlohmann::json& j) { j["modules"][1]["module"] = "fc"; },
       "modules[1].module: expected a module name not used by an earlier row (a second call is \"fc#2\"), got \"fc\" "
       "again"},
      {"output-first", [](nlohmann::json& j) { j["modules"][0]["module"] = "(model output)"; },
       "modules[0].module: expected \"(model output)\" only as the last row"},
      {"escape", [](nlohmann::json& j) { j["modules"][0]["module"] = "a\x1b[31mRED\nfake: PASS"; },
       "modules[0].module: expected a module name of 1 to 1024 printable characters"},
  };
  for (const auto& c : cases) {
    const std::string path = write_sweep(c.name, c.edit);
    try {
      read_batch_sweep(path);
      ADD_FAILURE() << c.name << ": accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ExitCode::kBadInput) << c.name;
      EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << c.name << ": " << e.what();
      EXPECT_NE(std::string(e.what()).find(c.expected), std::string::npos) << c.name << ": " << e.what();
    }
    fs::remove(path);
  }
}

}  // namespace
}  // namespace lockstep
