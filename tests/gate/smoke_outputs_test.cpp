// clear_smoke_outputs(): what an earlier check or bless left goes, what
// lockstep did not write stays.
#include "gate/smoke_outputs.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

namespace lockstep {
namespace {
namespace fs = std::filesystem;

TEST(SmokeOutputs, LockstepsNamesOnly) {
  for (const char* ours : {"run-1.json", "run-12.json.log", "run-2.json.ranks", "run-1.json.trainer", "bless-1.json",
                           "bless-seed-7-2.json", "resume-part.json", "resume-at-5.ckpt", "resume-at-5.ckpt.log",
                           "resumed.json", "resumed.json.ranks", "data-only.json", "data-only.json.trainer", "variant-accum2.json", "variant-accum2.rerun.json", "variant-ranks2.json.ranks", "report.json", "report.md", "report.html",
                           "cpu-x86_64-avx2.golden.new", "rerun-1.json", "calibrate-12.json.trainer",
                           "detect-3.json.log"})
    EXPECT_TRUE(is_smoke_output_name(ours)) << ours;
  for (const char* theirs : {"run-tests.sh", "run.json", "run-1.jsonx", "notes.txt", "report.txt", "bless.json",
                             "resume-at-x.ckpt", ".golden.new", "calibrate.json", "detect-x.json", "../x.golden.new", "a b.golden.new", "report.html~"})
    EXPECT_FALSE(is_smoke_output_name(theirs)) << theirs;
}

TEST(SmokeOutputs, ClearsAnEarlierCommandsFilesAndKeepsTheRest) {
  fs::path dir = fs::temp_directory_path() / ("lockstep-smoke-outputs-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "run-1.json.ranks");
  for (const char* f : {"run-1.json", "run-1.json.ranks/rank-0.json", "cpu-x86_64-avx2.golden.new", "report.html",
                        "notes.txt"})
    std::ofstream(dir / f) << "x";
  fs::create_symlink("/nonexistent", dir / "resumed.json");
  clear_smoke_outputs(dir.string());
  std::vector<std::string> left;
  for (const auto& e : fs::directory_iterator(dir)) left.push_back(e.path().filename().string());
  EXPECT_EQ(left, std::vector<std::string>{"notes.txt"});
  clear_smoke_outputs((dir / "absent").string());  // nothing to clear is not an error
  fs::remove_all(dir);
}

// A check killed mid-write leaves ".run-1.json.tmp.<pid>.<mkstemp's six
// random characters>": the next one removes it, but not a temporary being
// written now, nor another file's.
TEST(SmokeOutputs, ClearsTheTemporariesOfAKilledWriter) {
  fs::path dir = fs::temp_directory_path() / ("lockstep-smoke-temporaries-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string alive = std::to_string(::getpid());
  const std::string gone = "4194303";  // above any pid this machine hands out
  for (const std::string& f : {".run-1.json.tmp." + gone + ".AbC123", ".report.html.tmp." + gone + ".x1y2z3",
                               ".run-2.json.tmp." + alive + ".QwErTy", ".notes.txt.tmp." + gone + ".zzzzzz"})
    std::ofstream(dir / f) << "x";
  clear_smoke_outputs(dir.string());
  std::vector<std::string> left;
  for (const auto& e : fs::directory_iterator(dir)) left.push_back(e.path().filename().string());
  std::sort(left.begin(), left.end());
  EXPECT_EQ(left, (std::vector<std::string>{".notes.txt.tmp." + gone + ".zzzzzz", ".run-2.json.tmp." + alive + ".QwErTy"}));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace lockstep
