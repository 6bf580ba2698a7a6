// `lockstep import` as the command line calls it (import_command), in this
// process: a log read into a record or into a pending golden of a smoke,
// what import says it read and where it wrote, its notes, and the
// refusals made before anything is written. The readers are ingest/'s and
// the record external/import_run's.
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/in_process.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "gate/gate_fixture.h"
#include "record/golden.h"
#include "record/run_record.h"
#include "smoke/golden_store.h"

namespace lockstep {
namespace {
namespace fs = std::filesystem;
using testing::GateProject;

// A JSON-lines log of the loss at steps `first`..`first`+2.
std::string write_log(const GateProject& p, int first) {
  const std::string path = (p.root() / "metrics.jsonl").string();
  std::string text;
  for (int s = first; s < first + 3; ++s)
    text += "{\"step\": " + std::to_string(s) + ", \"loss\": " + std::to_string(2.5 - 0.25 * s) + "}\n";
  write_file_atomically(path, text);
  return path;
}

ImportRequest request_for(const std::string& log) {
  ImportRequest r;
  r.format = "jsonl";
  r.path = log;
  r.series = {"loss"};
  return r;
}

TEST(ImportCommand, ALogBecomesARecordAndImportSaysWhatItRead) {
  GateProject p("cli-import");
  ImportRequest r = request_for(write_log(p, 0));
  r.record = (p.root() / "imported.json").string();
  std::string out;
  ASSERT_EQ(testing::captured([&] { return import_command(r); }, out), 0) << out;
  EXPECT_EQ(out, "import: 1 series, steps 0..2 (3 values) from " + r.path + "\n  record " + r.record + "\n");
  RunRecord rec = read_run_record(r.record);
  EXPECT_EQ(rec.smoke, "imported");
  EXPECT_EQ(rec.series.at("loss").values, (std::vector<double>{2.5, 2.25, 2.0}));
}

TEST(ImportCommand, AGoldenOfASmokeIsPendingReviewAndALogCountingFromOneIsNoted) {
  GateProject p("cli-import-golden", [](nlohmann::json& cfg) { cfg["steps"] = 4; });
  ImportRequest r = request_for(write_log(p, 1));
  r.golden = p.smoke_file();
  r.out = p.out_dir();
  r.platform = "cpu-x86_64-avx2";
  std::string out;
  ASSERT_EQ(testing::captured([&] { return import_command(r); }, out), 0) << out;
  const std::string pending = pending_path(p.out_dir(), "unit", "cpu-x86_64-avx2");
  EXPECT_EQ(out.rfind("import: 1 series, steps 1..3 (3 values) from " + r.path + "\n  pending golden of unit for "
                      "cpu-x86_64-avx2: " + pending + "\n  next: lockstep review " + p.out_dir() +
                      ", then lockstep accept " + p.out_dir() + " --reason \"...\" (the smoke runs 4 steps;",
                      0),
            0u)
      << out;
  EXPECT_NE(out.find("  note: every series starts at step 1, so the golden holds no step 0: if the log counts its "
                     "steps from 1, import again with --step-offset -1\n"),
            std::string::npos)
      << out;
  Golden g = read_golden(pending);
  EXPECT_EQ(g.provenance.action, "import");
  EXPECT_EQ(g.record.smoke, "unit");
  EXPECT_FALSE(fs::exists(p.goldens_dir())) << "nothing is blessed by an import";
}

// Each refusal, word for word, with nothing written.
TEST(ImportCommand, RefusesBadArgumentsBeforeWritingAnything) {
  GateProject p("cli-import-refuse");
  const std::string log = write_log(p, 0);
  const std::string record = (p.root() / "r.json").string();
  struct Case {
    std::function<void(ImportRequest&)> edit;
    std::string message;
  };
  const std::vector<Case> cases = {
      {[](ImportRequest&) {}, "import: --record FILE is required (or --golden SMOKE for a pending golden)"},
      {[&](ImportRequest& r) {
         r.record = record;
         r.golden = p.smoke_file();
       },
       "import --record " + record + " with --golden: a pending golden goes to --out DIR (default lockstep-import), "
       "not to a record file; drop one"},
      {[&](ImportRequest& r) {
         r.record = record;
         r.step_offset = -1;
       },
       "--step-offset: only with --golden (a record keeps the log's own steps)"},
      {[&](ImportRequest& r) {
         r.record = record;
         r.platform = "cpu-x86_64-avx2";
       },
       "--platform: only with --golden (a record's platform is this machine's)"},
      {[&](ImportRequest& r) {
         r.record = record;
         r.name = ".hidden";
       },
       "--name .hidden: a smoke name of 1 to 100 letters, digits, '.', '_' and '-', not starting with '.'"},
      {[&](ImportRequest& r) {
         r.path = p.root().string();
         r.format = "tensorboard";
         r.record = (p.root() / "in" / "r.json").string();
       },
       "--record " + (p.root() / "in" / "r.json").string() + ": inside the folder read (" + p.root().string() +
           "); write the record elsewhere"},
      {[&](ImportRequest& r) {
         r.golden = p.smoke_file();
         r.out = log;
       },
       "--out " + log + ": a folder for the pending golden, and this is a file"},
      {[&](ImportRequest& r) {
         r.golden = p.smoke_file();
         r.out = log + "/pending";
       },
       "--out " + log + "/pending: " + log + " is not a folder"},
      {[&](ImportRequest& r) { r.record = (p.root() / "out" / "x/").string(); },
       "--record " + (p.root() / "out" / "x/").string() + ": a file path for the record, not a folder (drop the "
       "trailing /)"},
      {[&](ImportRequest& r) { r.record = p.root().string(); },
       "--record " + p.root().string() + ": refusing to write a run record over something that is not a regular "
       "file (name the record's file, e.g. " + (p.root() / "<smoke>.run.json").string() + ")"},
  };
  for (const Case& c : cases) {
    ImportRequest r = request_for(log);
    c.edit(r);
    std::string out;
    EXPECT_EQ(testing::refusal([&] { return testing::captured([&] { return import_command(r); }, out); }), c.message);
    EXPECT_FALSE(fs::exists(record)) << c.message;
    EXPECT_FALSE(fs::exists(p.root() / "out")) << c.message;  // no folder made on the way to a refusal
    EXPECT_EQ(out, "") << c.message;
  }
}

}  // namespace
}  // namespace lockstep
