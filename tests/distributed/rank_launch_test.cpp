// The rank coordinator's rules (distributed/rank_launch.h), driven through
// its executable seam with a fake rank: a shell script that reads its
// --rank, --rendezvous and --record and does what $FAKE_RANK_<r> says (write a
// progress mark, a record, an error line; exit, hang, die). No LibTorch,
// no Gloo: each rule in milliseconds.
#include "distributed/rank_launch.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <map>

#include "core/atomic_file.h"
#include "core/error.h"

namespace lockstep {
namespace {
namespace fs = std::filesystem;

// progress STEP PHASE: the rank's progress file, as RankProgress writes it;
// record: its record path exists; error MSG: a lockstep error line.
const char* kFakeRank = R"SH(#!/bin/sh
rank=""; dir=""; out=""
while [ $# -gt 0 ]; do
  case "$1" in
    --rank) rank="$2"; shift ;;
    --rendezvous) dir="$2"; shift ;;
    --record) out="$2"; shift ;;
  esac
  shift
done
progress() { printf '%20s %2s\n' "$1" "$2" > "$dir/rank-$rank.progress"; }
record() { echo '{}' > "$out"; }
error() { echo "lockstep: error: $*" >&2; }
progress -1 0
eval "$(printenv FAKE_RANK_$rank)"
)SH";

class RankLaunchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("lockstep-rank-launch-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    write_file_atomically((dir_ / "fake-rank").string(), kFakeRank);
    ::chmod((dir_ / "fake-rank").c_str(), 0755);
  }
  void TearDown() override {
    for (const auto& [name, _] : set_) ::unsetenv(name.c_str());
    fs::remove_all(dir_);
  }
  // What rank r does (a shell snippet using progress/record/error).
  void rank(int r, const std::string& script) {
    std::string name = "FAKE_RANK_" + std::to_string(r);
    ::setenv(name.c_str(), script.c_str(), 1);
    set_[name] = script;
  }
  RankLaunch launch(int world = 2, int64_t timeout_s = 30) {
    RankLaunch l;
    l.executable = (dir_ / "fake-rank").string();
    l.rendezvous = (dir_ / "run.json.ranks").string();
    l.argv = [rendezvous = l.rendezvous](int r, const std::string& record) {
      return std::vector<std::string>{"run", "smoke/fake.json", "--record", record, "--quiet",
                                      "--rank", std::to_string(r), "--rendezvous", rendezvous};
    };
    l.world_size = world;
    l.timeout_s = timeout_s;
    l.smoke = "fake";
    l.peer_grace_ms = 200;
    return l;
  }
  // run_ranks(l) must throw exit `code` with exactly `message`.
  void expect_error(const RankLaunch& l, ExitCode code, const std::string& message) {
    try {
      run_ranks(l);
      ADD_FAILURE() << "run_ranks did not throw; expected: " << message;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), code) << e.what();
      EXPECT_EQ(std::string(e.what()), message);
    }
  }
  fs::path dir_;
  std::map<std::string, std::string> set_;
};

TEST_F(RankLaunchTest, RanksThatFinishGiveTheirRecordsInRankOrder) {
  for (int r : {0, 1, 2}) rank(r, "progress 9 8; record; exit 0");
  RankLaunch l = launch(3);
  std::vector<std::string> records = run_ranks(l);
  ASSERT_EQ(records.size(), 3u);
  for (int r : {0, 1, 2}) {
    EXPECT_EQ(records[static_cast<size_t>(r)], l.rendezvous + "/rank-" + std::to_string(r) + ".json");
    EXPECT_TRUE(fs::exists(records[static_cast<size_t>(r)]));
  }
}

// A rank's own error is named with its class; the peer that only saw it
// go (a closed connection, exit 3, a moment later) is not blamed.
TEST_F(RankLaunchTest, ARanksOwnErrorOutranksThePeerThatSawItGo) {
  rank(0, "progress -1 3; sleep 0.05; error 'connection closed by peer'; exit 3");
  rank(1, "progress -1 3; error 'data/digits.csv.gz: line 7: expected 65 columns'; exit 2");
  expect_error(launch(), ExitCode::kBadInput, "rank 1 of 2: data/digits.csv.gz: line 7: expected 65 columns");
}

// A cross-rank check (exit 1, a message every rank computes alike) comes
// before a rank's bad input; among equals, the lowest rank.
TEST_F(RankLaunchTest, ACrossRankCheckIsBlamedFirstThenTheLowestRank) {
  rank(0, "error 'data/x.csv: expected a file'; exit 2");
  rank(1, "error 'rank 1 of 2: parameters differ from rank 0 after step 3'; exit 1");
  expect_error(launch(), ExitCode::kRegression, "rank 1 of 2: parameters differ from rank 0 after step 3");
  rank(0, "error 'one'; exit 2");
  rank(1, "error 'two'; exit 2");
  expect_error(launch(), ExitCode::kBadInput, "rank 0 of 2: one");
}

// A rank killed by a signal we did not send is exit 1 at its last mark;
// before the data-only pass it is the environment's (exit 3, its log quoted).
TEST_F(RankLaunchTest, AKilledRankIsNamedWithWhereItWas) {
  rank(0, "progress 3 6; sleep 30");
  rank(1, "progress 3 5; kill -9 $$");
  RankLaunch l = launch();
  expect_error(l, ExitCode::kRegression,
               "rank 1 of 2 was killed by signal 9 (Killed) at step 3, forward/backward; the other ranks were "
               "stopped (logs: " + l.rendezvous + ")");
  rank(1, "progress -1 2; echo 'terminate called after throwing an instance of c10::Error' >&2; kill -6 $$");
  try {
    run_ranks(l);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kEnvironment) << e.what();
    EXPECT_EQ(std::string(e.what()).rfind("rank 1 of 2 was killed by signal 6 (Aborted) at the rendezvous, before any "
                                          "training; the other ranks were stopped (logs: " + l.rendezvous + "); its "
                                          "log ends:\n  | terminate called after throwing", 0),
              0u)
        << e.what();
  }
}

// The deadline: the rank furthest behind is named, with where the others
// waited; all alike, no rank is singled out.
TEST_F(RankLaunchTest, AHangIsNamedAtTheDeadline) {
  rank(0, "progress 2 6; sleep 30");
  rank(1, "progress 2 5; sleep 30");
  RankLaunch l = launch(2, 1);
  expect_error(l, ExitCode::kRegression,
               "rank 1 of 2 stopped (last seen: step 2, forward/backward) and did not finish within "
               "distributed.timeout_s = 1 s; the other ranks waited for it (rank 0 at step 2, the step's "
               "collectives); all ranks were killed (the timeout counts from process start: LibTorch, the "
               "rendezvous and the data-only pass too; logs: " + l.rendezvous + ")");
  rank(1, "progress 2 6; sleep 30");
  expect_error(l, ExitCode::kRegression,
               "no rank of fake finished within distributed.timeout_s = 1 s (every rank at step 2, the step's "
               "collectives); all ranks were killed (the timeout counts from process start: LibTorch, the "
               "rendezvous and the data-only pass too; logs: " + l.rendezvous + ")");
}

// On several machines each node judges its own ranks at the deadline:
// node 0 alone waited at the rendezvous for the other nodes; node 1 alone
// could not reach node 0's store (nothing answered); ranks stuck elsewhere
// are listed where they were, pointing at the other nodes' logs.
TEST_F(RankLaunchTest, ANodeAtTheDeadlineSaysWhereItsRanksWaited) {
  RankLaunch l = launch(4, 1);
  l.nnodes = 2;
  l.master = "10.0.0.5:29500";
  rank(0, "progress -1 2; sleep 30");
  rank(1, "progress -1 2; sleep 30");
  expect_error(l, ExitCode::kRegression,
               "the ranks of fake on this node (node 0 of 2) waited at the rendezvous (10.0.0.5:29500) for 2 rank(s) "
               "of the other nodes, and they did not all come within distributed.timeout_s = 1 s; start the same "
               "`lockstep run` with --nnodes 2, this --master and each --node-rank on every node (logs: " +
                   l.rendezvous + ")");
  l.node_rank = 1;
  rank(2, "progress -1 1; sleep 30");
  rank(3, "progress -1 1; sleep 30");
  expect_error(l, ExitCode::kRegression,
               "the ranks of fake on this node (node 1 of 2) could not reach node 0's store at 10.0.0.5:29500 within "
               "distributed.timeout_s = 1 s: nothing answered there. Rank 0, on node 0, serves it: start the same "
               "`lockstep run` with --node-rank 0 and this --master there, and check that this host reaches that "
               "address and port (logs: " + l.rendezvous + ")");
  rank(2, "progress 4 6; sleep 30");
  rank(3, "progress 4 4; sleep 30");
  try {
    run_ranks(l);
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kRegression);
    EXPECT_NE(std::string(e.what()).find("did not finish within distributed.timeout_s = 1 s and were killed; they "
                                         "were at: rank 2 at step 4, the step's collectives; rank 3 at step 4, the "
                                         "buffer broadcast."),
              std::string::npos)
        << e.what();
  }
  // Node 1 starts only its own ranks (2 and 3) and returns no records.
  rank(2, "record; exit 0");
  rank(3, "record; exit 0");
  EXPECT_TRUE(run_ranks(l).empty());
}

// Exit codes outside lockstep's classes are the environment's; a rank
// that wrote no error line has its log's end quoted.
TEST_F(RankLaunchTest, AnUnknownExitIsTheEnvironmentsWithTheLogsEnd) {
  rank(0, "record; exit 0");
  rank(1, "echo 'Segmentation fault in libgloo' >&2; exit 139");
  expect_error(launch(), ExitCode::kEnvironment,
               "rank 1 of 2 exited with status 139: (no lockstep error line; its log ends:)\n  | Segmentation fault "
               "in libgloo");
}

// Said before any rank starts: an executable that is not there, and a
// rendezvous folder lockstep did not make (never removed).
TEST_F(RankLaunchTest, WhatCannotStartIsSaidBeforeAnyRank) {
  RankLaunch l = launch();
  l.executable = (dir_ / "lockstep-torch").string();
  try {
    run_ranks(l);
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kEnvironment);
    EXPECT_EQ(std::string(e.what()).rfind("the ranks of fake run in " + l.executable + ", which cannot be started: No "
                                          "such file or directory", 0),
              0u)
        << e.what();
  }
  l = launch();
  fs::create_directories(l.rendezvous);
  write_file_atomically(l.rendezvous + "/mine.txt", "a user's file");
  expect_error(l, ExitCode::kBadInput,
               l.rendezvous + ": exists and is not a rendezvous folder lockstep made; refusing to remove it (move it "
               "away, or choose another --record)");
  EXPECT_TRUE(fs::exists(l.rendezvous + "/mine.txt"));
}

}  // namespace
}  // namespace lockstep
