// The multi-rank checkpoint folder: written through a partial folder and
// swapped in whole, and refused on read unless its manifest holds.
#include "distributed/rank_checkpoint.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "core/atomic_file.h"
#include "core/error.h"
#include "core/json_io.h"

namespace lockstep {
namespace {
namespace fs = std::filesystem;

fs::path fresh(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("lockstep-rank-ckpt-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

// Runs `f` and returns the Error it throws (code and message).
template <typename F>
Error thrown(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "no Error thrown";
  return Error(ExitCode::kPass, "");
}

// A committed two-rank checkpoint of `step` at d/ck whose rank files hold `text` + rank.
std::string commit_two(const fs::path& d, int64_t step, const std::string& text) {
  std::string dir = (d / "ck").string();
  RankCheckpointWriter w(dir, {"s", 2, step});
  for (int r = 0; r < 2; ++r) std::ofstream(w.rank_file(r)) << text << r;
  w.commit();
  return dir;
}

TEST(RankCheckpoint, ACommittedCheckpointOpensInRankOrderAndReplacesTheLastOne) {
  fs::path d = fresh("commit");
  std::string dir = commit_two(d, 5, "a");
  std::vector<std::string> files = open_rank_checkpoint(dir, "s", 2);
  ASSERT_EQ(files.size(), 2u);
  EXPECT_EQ(files[0], dir + "/rank-0.ckpt");
  EXPECT_EQ(read_file(files[1]), "a1");
  nlohmann::json m = parse_json_file(dir + "/checkpoint.json");
  EXPECT_EQ(m["world_size"], 2);
  EXPECT_EQ(m["step"], 5);
  EXPECT_EQ(m["ranks"][1]["file"], "rank-1.ckpt");

  commit_two(d, 3, "b");
  EXPECT_EQ(read_file(open_rank_checkpoint(dir, "s", 2)[0]), "b0");
  EXPECT_EQ(parse_json_file(dir + "/checkpoint.json")["step"], 3);
  EXPECT_FALSE(fs::exists(dir + ".partial"));
  EXPECT_FALSE(fs::exists(dir + ".old"));
  fs::remove_all(d);
}

TEST(RankCheckpoint, AnInterruptedWriteLeavesThePreviousCheckpoint) {
  fs::path d = fresh("interrupted");
  std::string dir = commit_two(d, 5, "a");
  {
    RankCheckpointWriter w(dir, {"s", 2, 7});
    std::ofstream(w.rank_file(0)) << "new";
    // rank 1 never wrote: the commit refuses, the old checkpoint stays.
    Error e = thrown([&] { w.commit(); });
    EXPECT_EQ(e.code(), ExitCode::kEnvironment);
    EXPECT_NE(std::string(e.what()).find("rank 1 finished without writing its checkpoint"), std::string::npos) << e.what();
  }
  EXPECT_EQ(read_file(open_rank_checkpoint(dir, "s", 2)[0]), "a0");
  // The next writer clears the partial folder it left.
  commit_two(d, 2, "c");
  EXPECT_EQ(read_file(open_rank_checkpoint(dir, "s", 2)[1]), "c1");
  fs::remove_all(d);
}

TEST(RankCheckpoint, AFolderLockstepDidNotMakeOrThatHoldsMoreIsNeverReplaced) {
  fs::path d = fresh("foreign");
  fs::create_directories(d / "ck");
  std::ofstream(d / "ck" / "precious") << "x";
  Error e = thrown([&] { RankCheckpointWriter((d / "ck").string(), {"s", 2, 1}); });
  EXPECT_EQ(e.code(), ExitCode::kBadInput);
  EXPECT_NE(std::string(e.what()).find("ck: exists and is not a multi-rank checkpoint folder lockstep made and left "
                                       "untouched"),
            std::string::npos)
      << e.what();
  EXPECT_TRUE(fs::exists(d / "ck" / "precious"));
  // A checkpoint copied as a backup, with the user's notes beside its files.
  fs::remove_all(d / "ck");
  std::string dir = commit_two(d, 5, "a");
  fs::copy(dir, (d / "backup").string());
  std::ofstream(d / "backup" / "NOTES.txt") << "the good one";
  EXPECT_EQ(thrown([&] { RankCheckpointWriter((d / "backup").string(), {"s", 2, 1}); }).code(), ExitCode::kBadInput);
  EXPECT_TRUE(fs::exists(d / "backup" / "NOTES.txt"));
  // A folder of the user's inside, even one named like a temporary.
  fs::create_directories(d / "ck" / ".rank-0.ckpt.tmp.notes");
  std::ofstream(d / "ck" / ".rank-0.ckpt.tmp.notes" / "thesis.txt") << "precious";
  EXPECT_EQ(thrown([&] { RankCheckpointWriter((d / "ck").string(), {"s", 2, 1}); }).code(), ExitCode::kBadInput);
  EXPECT_TRUE(fs::exists(d / "ck" / ".rank-0.ckpt.tmp.notes" / "thesis.txt"));
  fs::remove_all(d / "ck" / ".rank-0.ckpt.tmp.notes");
  // A user's ck.old and ck.replaced-<other pid> are not lockstep's to clear.
  fs::copy(dir, (d / "ck.old").string());
  commit_two(d, 6, "b");
  EXPECT_TRUE(fs::exists(d / "ck.old" / "rank-0.ckpt"));
  fs::remove_all(d);
}

TEST(RankCheckpoint, ATrailingSlashNamesTheFolderItself) {
  fs::path d = fresh("slash");
  std::string dir = commit_two(d, 5, "a");
  RankCheckpointWriter w(dir + "/", {"s", 2, 3});
  EXPECT_EQ(w.dir(), dir);
  for (int r = 0; r < 2; ++r) std::ofstream(w.rank_file(r)) << "z" << r;
  w.commit();
  EXPECT_EQ(read_file(open_rank_checkpoint(dir + "/", "s", 2)[0]), "z0");
  EXPECT_FALSE(fs::exists(dir + "/.partial"));
  EXPECT_EQ(thrown([&] { RankCheckpointWriter(".", {"s", 2, 3}); }).code(), ExitCode::kBadInput);
  fs::remove_all(d);
}

TEST(RankCheckpoint, TwoWritersOfOneCheckpointNeverRunTogether) {
  fs::path d = fresh("lock");
  RankCheckpointWriter first((d / "ck").string(), {"s", 2, 3});
  Error e = thrown([&] { RankCheckpointWriter((d / "ck").string(), {"s", 2, 4}); });
  EXPECT_EQ(e.code(), ExitCode::kEnvironment);
  EXPECT_NE(std::string(e.what()).find("ck: another `lockstep run --stop-after` is writing this checkpoint (pid " +
                                       std::to_string(::getpid()) + "); give one of them another --checkpoint"),
            std::string::npos)
      << e.what();
  EXPECT_TRUE(fs::exists(d / "ck.partial"));  // the first writer's, untouched
  fs::remove_all(d);
}

TEST(RankCheckpoint, ABadManifestOrRankFileIsExitTwoNamingFileAndField) {
  fs::path d = fresh("bad");
  std::string dir = commit_two(d, 5, "a");
  std::string manifest = dir + "/checkpoint.json";
  const nlohmann::json good = parse_json_file(manifest);
  struct Case {
    std::function<void()> edit;
    std::string expect;
  } cases[] = {
      {[&] { write_file_atomically(manifest, "{\"format\": "); }, "checkpoint.json"},
      {[&] { nlohmann::json m = good; m["smoke"] = "t"; write_file_atomically(manifest, m.dump()); },
       "checkpoint.json: smoke: expected \"s\" (the smoke being resumed), got \"t\""},
      {[&] { nlohmann::json m = good; m["world_size"] = 4; write_file_atomically(manifest, m.dump()); },
       "checkpoint.json: world_size: expected 2 (this run's ranks, distributed.world_size or --world-size"},
      {[&] { nlohmann::json m = good; m["ranks"][1]["file"] = "../x"; write_file_atomically(manifest, m.dump()); },
       "checkpoint.json: ranks[1].file: expected \"rank-1.ckpt\""},
      {[&] { nlohmann::json m = good; m["ranks"].erase(1); write_file_atomically(manifest, m.dump()); },
       "checkpoint.json: ranks: expected one entry per rank (2), got 1"},
      {[&] { nlohmann::json m = good; m["extra"] = 1; write_file_atomically(manifest, m.dump()); }, "extra"},
      {[&] { nlohmann::json m = good; m["ranks"][0]["xxh3_128"] = std::string(32, 'A'); write_file_atomically(manifest, m.dump()); },
       "checkpoint.json: ranks[0].xxh3_128: expected 32 lowercase hex digits"},
      {[&] { std::ofstream(dir + "/rank-1.ckpt", std::ios::app) << "!"; },
       "rank-1.ckpt: expected XXH3-128 "},
      {[&] { fs::remove(dir + "/rank-0.ckpt"); }, "rank-0.ckpt: expected rank 0's checkpoint"},
      {[&] { fs::remove(manifest); }, "checkpoint.json: expected the manifest of a multi-rank checkpoint"},
  };
  for (const auto& c : cases) {
    commit_two(d, 5, "a");
    c.edit();
    Error e = thrown([&] { open_rank_checkpoint(dir, "s", 2); });
    EXPECT_EQ(e.code(), ExitCode::kBadInput) << c.expect;
    EXPECT_NE(std::string(e.what()).find(c.expect), std::string::npos) << e.what();
  }
  std::ofstream(d / "file.ckpt") << "x";
  Error file = thrown([&] { open_rank_checkpoint((d / "file.ckpt").string(), "s", 2); });
  EXPECT_EQ(file.code(), ExitCode::kBadInput);
  EXPECT_NE(std::string(file.what()).find("got a file (a single-process smoke's checkpoint?)"), std::string::npos);
  commit_two(d, 5, "a");
  Error one = thrown([&] { open_rank_checkpoint(dir + "/rank-0.ckpt", "s", 2); });
  EXPECT_NE(std::string(one.what()).find("one rank's file of the multi-rank checkpoint " + dir + "; pass the folder"),
            std::string::npos)
      << one.what();
  Error none = thrown([&] { open_rank_checkpoint((d / "none").string(), "s", 2); });
  EXPECT_EQ(none.code(), ExitCode::kBadInput);
  EXPECT_NE(std::string(none.what()).find("no such checkpoint"), std::string::npos);
  // A run killed between commit()'s renames left the previous one aside.
  fs::rename(dir, dir + ".replaced-123");
  Error aside = thrown([&] { open_rank_checkpoint(dir, "s", 2); });
  EXPECT_NE(std::string(aside.what()).find(dir + ".replaced-123 holds the checkpoint a killed run had set aside: move "
                                           "it back to " + dir),
            std::string::npos)
      << aside.what();
  fs::remove_all(d);
}

}  // namespace
}  // namespace lockstep
