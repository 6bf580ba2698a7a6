// Run records read and written as files: another JSON file is named as
// such rather than as a record with unknown keys, and `--record` replaces only
// an earlier record, never another file.
#include "record/run_record.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "../record_builder.h"
#include "core/atomic_file.h"
#include "core/error.h"

namespace lockstep {
namespace {
namespace fs = std::filesystem;

struct Scratch {
  fs::path dir = fs::temp_directory_path() / ("lockstep-run-record-" + std::to_string(::getpid()));
  Scratch() { fs::create_directories(dir); }
  ~Scratch() { fs::remove_all(dir); }
  std::string path(const std::string& name) const { return (dir / name).string(); }
};

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kBadInput) << e.what();
    return e.what();
  }
  return "(no error)";
}

TEST(RunRecordFile, AReportIsNamedAsNoRecord) {
  Scratch s;
  write_file_atomically(s.path("report.json"), R"({"environment_diff": [], "exit_code": 0, "lane": "same-stack"})");
  EXPECT_EQ(message_of([&] { read_run_record(s.path("report.json")); }),
            s.path("report.json") + ": (top level): expected a lockstep run record (\"schema\": \"lockstep.run/1\", "
                                    "from lockstep run or import --record); this JSON has none of its keys (a report? a "
                                    "config?)");
}

TEST(RunRecordFile, OutReplacesOnlyAnEarlierRecord) {
  Scratch s;
  EXPECT_NO_THROW(refuse_replacing_other_than_a_record(s.path("new.json"), "--out"));  // nothing there
  write_run_record(s.path("run.json"), testing::make_record({2.5, 2.25}));
  EXPECT_NO_THROW(refuse_replacing_other_than_a_record(s.path("run.json"), "--record"));
  write_file_atomically(s.path("notes.md"), "# notes\n");
  EXPECT_EQ(message_of([&] { refuse_replacing_other_than_a_record(s.path("notes.md"), "--record"); }),
            "--record " + s.path("notes.md") + ": refusing to write a run record over a file that is not a lockstep run "
                                            "record (a record replaces only an earlier record; name a new file, e.g. "
                                            "lockstep-out/<smoke>.run.json)");
  // A compact record another tool wrote is a record too.
  write_file_atomically(s.path("compact.json"), R"({"schema":"lockstep.run/1","smoke":"x"})");
  EXPECT_NO_THROW(refuse_replacing_other_than_a_record(s.path("compact.json"), "--out"));
}

TEST(RunRecordFile, APathNamingAFolderOrThroughAFileIsRefused) {
  Scratch s;
  write_file_atomically(s.path("notes.md"), "# notes\n");
  const std::vector<std::pair<std::string, std::string>> cases = {
      {s.path("out/x/"), "a file path for the record, not a folder (drop the trailing /)"},
      {s.path("out/x/.."), "a file path for the record, not a folder"},
      {s.path("out/."), "a file path for the record, not a folder"},
      {s.path("notes.md/r.json"), s.path("notes.md") + " is not a folder"},
      {s.path("notes.md/deeper/r.json"), s.path("notes.md") + " is not a folder"},
      {s.dir.string(), "refusing to write a run record over something that is not a regular file (name the "
                       "record's file, e.g. " + s.path("<smoke>.run.json") + ")"},
  };
  for (const auto& c : cases)  // (not a structured binding: clang's C++17 cannot capture one)
    EXPECT_EQ(message_of([&] { refuse_replacing_other_than_a_record(c.first, "--record"); }),
              "--record " + c.first + ": " + c.second);
  EXPECT_FALSE(std::filesystem::exists(s.path("out")));
}

}  // namespace
}  // namespace lockstep
