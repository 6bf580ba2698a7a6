// `lockstep history add` and `lockstep history` as the command line calls
// them, in this process: records entered as nights (said one line each),
// the ledgers read back as text and JSON, and the refusals that keep a
// ledger true: a check's repeat run is not a night, a run is entered once,
// and a report never stands among the ledgers. The ledger and its analysis
// are history/'s (tests/history/).
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <string>

#include "cli/commands.h"
#include "cli/in_process.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "core/json_io.h"
#include "gate/gate_fixture.h"
#include "record/run_record.h"
#include "history/ledger.h"
#include "smoke/golden_store.h"

namespace lockstep {
namespace {
namespace fs = std::filesystem;
using testing::GateProject;
using testing::make_gate_record;

// Writes make_gate_record() with its loss at step 1 set to `loss` as `name`.
std::string write_record(const GateProject& p, const std::string& name, float loss) {
  RunRecord r = make_gate_record();
  r.series["loss"].values[1] = loss;
  const std::string path = (p.root() / name).string();
  write_run_record(path, r);
  return path;
}

// What `run` is refused with (testing::refusal), its stdout dropped.
std::string refusal(const std::function<int()>& run) {
  std::string out;
  return testing::refusal([&] { return testing::captured(run, out); });
}

TEST(HistoryCommand, RecordsEnteredAsNightsAreReadBackAsTextAndJson) {
  GateProject p("cli-history");
  HistoryAddOptions add;
  add.records = {write_record(p, "a.json", 2.25f), write_record(p, "b.json", 2.0f)};
  add.to = (p.root() / "ledgers").string();
  std::string out;
  ASSERT_EQ(testing::captured([&] { return history_add_command(add); }, out), 0) << out;
  const std::string ledger = ledger_path(add.to, make_gate_record().smoke);
  EXPECT_EQ(out.rfind("history: " + add.records[0] + " -> " + ledger + " (run ", 0), 0u) << out;
  EXPECT_NE(out.find("\nhistory: " + add.records[1] + " -> " + ledger + " (run "), std::string::npos) << out;

  HistoryOptions show;
  show.dir = add.to;
  show.json_out = (p.root() / "history.json").string();
  ASSERT_EQ(testing::captured([&] { return history_command(show); }, out), 0) << out;
  EXPECT_EQ(out.rfind("history: ", 0), 0u) << out;
  EXPECT_NE(out.find(": 2 nights"), std::string::npos) << out;
  const std::string tail = "history: JSON " + show.json_out + "\n";
  EXPECT_EQ(out.substr(out.size() - tail.size()), tail) << out;
  nlohmann::json j = parse_json_file(show.json_out);
  EXPECT_EQ(j["lockstep_report"], "history");
}

TEST(HistoryCommand, RefusesWhatWouldMakeALedgerUntrue) {
  GateProject p("cli-history-refuse");
  const std::string ledgers = (p.root() / "ledgers").string();
  HistoryAddOptions twice;
  twice.records = {write_record(p, "a.json", 2.25f), (p.root() / "a-copy.json").string()};
  fs::copy_file(twice.records[0], twice.records[1]);
  twice.to = ledgers;
  EXPECT_EQ(refusal([&] { return history_add_command(twice); }).rfind(twice.records[1] + ": the same run as an earlier "
                                                                      "RECORD (run ", 0),
            0u);
  EXPECT_FALSE(fs::exists(ledgers)) << "nothing was added";

  // A check's second repeat is that night seen again.
  fs::create_directories(p.root() / "check");
  write_file_atomically((p.root() / "check" / "report.json").string(), "{}\n");
  HistoryAddOptions repeat;
  repeat.records = {(p.root() / "check" / "run-2.json").string()};
  fs::copy_file(twice.records[0], repeat.records[0]);
  repeat.to = ledgers;
  EXPECT_NE(refusal([&] { return history_add_command(repeat); })
                .find("a night's run record; this is a repeat run of the check whose report is " +
                      (p.root() / "check" / "report.json").string()),
            std::string::npos);

  HistoryAddOptions one;
  one.records = {twice.records[0]};
  one.to = ledgers;
  std::string out;
  ASSERT_EQ(testing::captured([&] { return history_add_command(one); }, out), 0) << out;
  HistoryOptions show;
  show.dir = ledgers;
  show.json_out = ledgers + "/report.jsonl";
  EXPECT_EQ(refusal([&] { return history_command(show); }),
            show.json_out + ": a report would stand among the ledgers of " + ledgers + " as one; name another file");
  show.json_out = ledger_path(ledgers, make_gate_record().smoke);
  EXPECT_NE(refusal([&] { return history_command(show); }), "");
}

}  // namespace
}  // namespace lockstep
