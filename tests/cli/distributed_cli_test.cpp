// Multi-rank smokes end to end: the committed 2-rank digits CNN and edits of
// it, each run through the lockstep executable with real rank processes on
// c10d Gloo (distributed/rank_launch.h, train/trainer.h).
#include <arpa/inet.h>
#include <dirent.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <chrono>
#include <csignal>
#include <fstream>

#include "cli/cli_helpers.h"
#include "core/json_io.h"
#include "test_paths.h"

namespace lockstep::cli_test {
namespace {

const std::string kTwoRank = kSourceDir + "/smoke/digits-cnn-2rank.json";

fs::path two_rank(const std::string& name, const std::function<void(nlohmann::json&)>& edit = {}) {
  return scratch(name, edit, kTwoRank);
}

std::string cfg_path(const fs::path& d) { return (d / "smoke" / "digits-cnn-2rank.json").string(); }

nlohmann::json read(const fs::path& p) { return parse_json_file(p.string()); }

// Processes whose command line mentions `needle` (orphaned ranks).
int processes_mentioning(const std::string& needle) {
  int n = 0;
  DIR* proc = opendir("/proc");
  while (dirent* e = readdir(proc)) {
    std::string pid = e->d_name;
    if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in("/proc/" + pid + "/cmdline", std::ios::binary);
    std::string cmd((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (cmd.find(needle) != std::string::npos && cmd.find("lockstep-torch") != std::string::npos) ++n;
  }
  closedir(proc);
  return n;
}

void self_test(nlohmann::json& c, const char* fault, int rank, int step) {
  c["distributed"]["self_test"] = {{"fault", fault}, {"rank", rank}, {"step", step}};
}

TEST(DistributedCli, TwoAndFourRanksAreBitIdenticalAcrossRepeats) {
  fs::path d = two_rank("repeat");
  for (int world : {2, 4}) {
    std::string out = (d / ("w" + std::to_string(world) + ".json")).string();
    Result r = lockstep("run " + cfg_path(d) + " --repeat 2 --world-size " + std::to_string(world) + " --record " + out);
    ASSERT_EQ(r.code, 0) << r.output;
    EXPECT_NE(r.output.find("2 runs in fresh processes are bit-identical"), std::string::npos) << r.output;
    nlohmann::json rec = read(out);
    EXPECT_EQ(rec["contract"]["distributed.world_size"], std::to_string(world));
    EXPECT_EQ(rec["contract"]["distributed.backend"], "gloo");
    for (int k = 0; k < world; ++k)
      EXPECT_TRUE(rec["series"].contains("rank" + std::to_string(k) + "/loss")) << k;
    EXPECT_FALSE(rec["series"].contains("rank" + std::to_string(world) + "/loss"));
    // 1797 samples over `world` ranks in batches of 16, drop_last.
    EXPECT_EQ(rec["probes"].size(), static_cast<size_t>(1797 / world / 16 * world));
  }
}

TEST(DistributedCli, RanksSeeDifferentDataWhileTheirParametersAgree) {
  fs::path d = two_rank("shards");
  std::string out = (d / "run.json").string();
  Result r = lockstep("run " + cfg_path(d) + " --record " + out);
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("2 ranks (gloo)"), std::string::npos) << r.output;
  nlohmann::json r0 = read(out + ".ranks/rank-0.json"), r1 = read(out + ".ranks/rank-1.json");
  // Data: every batch of rank 1 holds other samples and other values.
  ASSERT_EQ(r0["probes"].size(), r1["probes"].size());
  for (size_t b = 0; b < r0["probes"].size(); ++b) {
    EXPECT_NE(r0["probes"][b]["sample_index_hash"], r1["probes"][b]["sample_index_hash"]) << b;
    EXPECT_NE(r0["probes"][b]["inputs"]["xxh3_128"], r1["probes"][b]["inputs"]["xxh3_128"]) << b;
    EXPECT_EQ(r0["probes"][b]["rank"], 0);
    EXPECT_EQ(r1["probes"][b]["rank"], 1);
  }
  // Each rank's own loss differs; the parameters, the global loss and the
  // gradients agree bit for bit.
  EXPECT_NE(r0["series"]["rank0/loss"]["values"], r0["series"]["rank1/loss"]["values"]);
  EXPECT_EQ(r0["series"], r1["series"]);
  EXPECT_EQ(r0["hashes"], r1["hashes"]);
  // Global loss = float32(mean of the ranks' losses), every step.
  for (size_t s = 0; s < 10; ++s) {
    double a = r0["series"]["rank0/loss"]["values"][s], b = r0["series"]["rank1/loss"]["values"][s];
    EXPECT_EQ(r0["series"]["loss"]["values"][s].get<double>(), static_cast<double>(static_cast<float>((a + b) / 2)))
        << s;
  }
  // The merged record interleaves the ranks' batches.
  nlohmann::json merged = read(out);
  EXPECT_EQ(merged["probes"][0]["sample_index_hash"], r0["probes"][0]["sample_index_hash"]);
  EXPECT_EQ(merged["probes"][1]["sample_index_hash"], r1["probes"][0]["sample_index_hash"]);
  EXPECT_EQ(merged["probes"][1]["rank"], 1);
  EXPECT_EQ(merged["probes"][1]["batch"], 1);
  EXPECT_EQ(merged["train_probes"][3]["sample_index_hash"], r1["train_probes"][1]["sample_index_hash"]);
}

TEST(DistributedCli, ASkippedAllReduceIsADesyncNamingRankStepAndParameter) {
  fs::path d = two_rank("desync", [](nlohmann::json& c) { self_test(c, "skip_allreduce", 1, 3); });
  Result r = lockstep("run " + cfg_path(d) + " --record " + (d / "run.json").string());
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find("ranks desynchronised at step 3: rank 1's parameter conv.weight differs from rank 0's"),
            std::string::npos)
      << r.output;
}

TEST(DistributedCli, ADesyncOfRankZeroIsNamedAgainstTheMajority) {
  fs::path d = two_rank("desync0", [](nlohmann::json& c) { self_test(c, "skip_allreduce", 0, 2); });
  Result r = lockstep("run " + cfg_path(d) + " --world-size 3 --record " + (d / "run.json").string());
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find("ranks desynchronised at step 2: rank 0's parameter conv.weight differs from rank 1's"),
            std::string::npos)
      << r.output;
  fs::path d1 = two_rank("desync1", [](nlohmann::json& c) { self_test(c, "skip_allreduce", 1, 2); });
  Result gone = lockstep("run " + cfg_path(d1) + " --world-size 1 --record " + (d1 / "run1.json").string());
  EXPECT_EQ(gone.code, 2) << gone.output;  // no rank 1 to misbehave: the self-test would never fire
  EXPECT_NE(gone.output.find("distributed.self_test.rank is 1, which would not exist"), std::string::npos)
      << gone.output;
}

TEST(DistributedCli, RanksDieWithAKilledCoordinator) {
  fs::path d = two_rank("orphans", [](nlohmann::json& c) {
    self_test(c, "hang", 1, 1);
    c["distributed"]["timeout_s"] = 120;
  });
  std::string pid_file = (d / "pid").string();
  shell("(" + test_paths::lockstep_binary() + " run " + cfg_path(d) + " --record " + (d / "run.json").string() +
        " >/dev/null 2>&1 & echo $! > " + pid_file + "; wait) >/dev/null 2>&1 &");
  for (int i = 0; i < 200 && processes_mentioning(d.string()) < 2; ++i) ::usleep(50000);
  ASSERT_EQ(processes_mentioning(d.string()), 2);
  ::usleep(500000);
  std::ifstream in(pid_file);
  int pid = 0;
  in >> pid;
  ASSERT_GT(pid, 0);
  ::kill(pid, SIGKILL);
  for (int i = 0; i < 100 && processes_mentioning(d.string()) > 0; ++i) ::usleep(50000);
  EXPECT_EQ(processes_mentioning(d.string()), 0);
}

TEST(DistributedCli, TwoRunsWithOneRecordPathDoNotShareARendezvous) {
  fs::path d = two_rank("same-out");
  std::string run = test_paths::lockstep_binary() + " run " + cfg_path(d) + " --record " + (d / "run.json").string();
  Result r = shell("cd " + d.string() + " && ( (" + run + " > a.log 2>&1; echo $? > a.rc) & (" + run +
                   " > b.log 2>&1; echo $? > b.rc) & wait ) && cat a.rc b.rc a.log b.log");
  // One of them runs; the other stops at once, naming the first (whichever won the lock).
  bool a_ran = r.output.rfind("0\n3\n", 0) == 0, b_ran = r.output.rfind("3\n0\n", 0) == 0;
  EXPECT_TRUE(a_ran || b_ran) << r.output;
  // The holder's pid is named when it could be read (it is written just
  // after the lock is taken; see core/directory_lock.cpp).
  EXPECT_NE(r.output.find("run.json.ranks: another `lockstep run` with this record path is running"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("; give one of them another --record"), std::string::npos) << r.output;
}

TEST(DistributedCli, ANaNOnRankOneIsNamed) {
  fs::path d = two_rank("nan", [](nlohmann::json& c) { self_test(c, "nan_loss", 1, 2); });
  Result r = lockstep("run " + cfg_path(d) + " --record " + (d / "run.json").string());
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find("step 2: rank 1 of 2: its loss is nan; every rank stopped before the update"),
            std::string::npos)
      << r.output;
}

TEST(DistributedCli, AKilledRankIsExitOneWithinTheTimeoutAndLeavesNoProcess) {
  fs::path d = two_rank("kill", [](nlohmann::json& c) {
    self_test(c, "kill", 1, 4);
    c["distributed"]["timeout_s"] = 60;
  });
  auto t0 = std::chrono::steady_clock::now();
  Result r = lockstep("run " + cfg_path(d) + " --record " + (d / "run.json").string());
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find("rank 1 of 2 was killed by signal 9 (Killed) at step 4, forward/backward; the other ranks "
                          "were stopped"),
            std::string::npos)
      << r.output;
  EXPECT_LT(s, 60) << "rank 0 must be stopped when rank 1 dies, not wait for the timeout";
  EXPECT_EQ(processes_mentioning(d.string()), 0);
}

TEST(DistributedCli, AHungRankIsNamedAtTheTimeout) {
  fs::path d = two_rank("hang", [](nlohmann::json& c) {
    self_test(c, "hang", 1, 2);
    // Long enough for LibTorch's start-up, the data-only pass and two steps
    // on a loaded 2-core runner: the hang must be the only thing that times out.
    c["distributed"]["timeout_s"] = 15;
  });
  Result r = lockstep("run " + cfg_path(d) + " --record " + (d / "run.json").string());
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find("rank 1 of 2 stopped (last seen: step 1, after the update) and did not finish within "
                          "distributed.timeout_s = 15 s; the other ranks waited for it (rank 0 at step 2, "
                          "the buffer broadcast)"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(processes_mentioning(d.string()), 0);
}

TEST(DistributedCli, ATwoRankGoldenAgainstAFourRankRunIsAContractMismatch) {
  fs::path d = two_rank("contract");
  ASSERT_EQ(shell("cd " + d.string() + " && git init -q && git add -A && git -c user.email=t@t -c user.name=t "
                  "commit -qm init").code, 0);
  Result b = lockstep("bless " + cfg_path(d) + " --reason two-rank --out " + (d / "bless").string());
  ASSERT_EQ(b.code, 0) << b.output;
  Result r = lockstep("check " + cfg_path(d) + " --world-size 4 --out " + (d / "out").string());
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find("lane: contract-mismatch — 1 determinism contract setting(s) differ "
                          "(distributed.world_size 2 → 4)"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("contract.distributed.world_size: golden 2, run 4"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("(the golden was made under another determinism contract: distributed.world_size golden 2, "
                          "run 4)"),
            std::string::npos)
      << r.output;
  // The 4-rank run's pending golden never replaces the 2-rank one.
  Result a = lockstep("accept " + (d / "out").string() + " --reason four --allow-dirty --goldens " + (d / "goldens").string());
  EXPECT_EQ(a.code, 2) << a.output;
  EXPECT_NE(a.output.find("it was made with contract.distributed.world_size 4, but " + cfg_path(d) + " sets 2"),
            std::string::npos)
      << a.output;
  // The same world size passes against it.
  Result same = lockstep("check " + cfg_path(d) + " --out " + (d / "out2").string());
  EXPECT_EQ(same.code, 0) << same.output;
  // The committed smoke's resume_at: both ranks stop at step 5 and resume.
  EXPECT_NE(same.output.find("resumed at step 5 from a checkpoint in 2 fresh rank processes: bit-identical to the "
                             "uninterrupted run"),
            std::string::npos)
      << same.output;
}

// --stop-after / --resume on two ranks: one checkpoint folder, a file per
// rank, bound together by its manifest.
TEST(DistributedCli, AStoppedAndResumedTwoRankRunReplaysTheStraightOne) {
  fs::path d = two_rank("resume");
  std::string cfg = cfg_path(d), ck = (d / "ck").string();
  std::string straight = (d / "straight.json").string(), resumed = (d / "resumed.json").string();
  ASSERT_EQ(lockstep("run " + cfg + " --record " + straight).code, 0);
  Result stop = lockstep("run " + cfg + " --stop-after 5 --checkpoint " + ck);
  ASSERT_EQ(stop.code, 0) << stop.output;
  EXPECT_NE(stop.output.find("2 ranks stopped after 5 steps, checkpoint " + ck), std::string::npos) << stop.output;
  nlohmann::json manifest = read(d / "ck" / "checkpoint.json");
  EXPECT_EQ(manifest["world_size"], 2);
  EXPECT_EQ(manifest["step"], 5);
  EXPECT_TRUE(fs::is_regular_file(d / "ck" / "rank-1.ckpt"));
  Result resume = lockstep("run " + cfg + " --resume " + ck + " --record " + resumed);
  ASSERT_EQ(resume.code, 0) << resume.output;
  Result same = lockstep("compare " + resumed + " " + straight);
  EXPECT_EQ(same.code, 0) << same.output;

  // Another world size, swapped rank files, a changed byte, a file: exit 2.
  auto refused = [&](const std::string& args, const std::string& expect) {
    Result r = lockstep("run " + cfg + " " + args + " --record " + (d / "x.json").string());
    EXPECT_EQ(r.code, 2) << args << "\n" << r.output;
    EXPECT_NE(r.output.find(expect), std::string::npos) << r.output;
  };
  refused("--resume " + ck + " --world-size 4",
          ck + "/checkpoint.json: world_size: expected 4 (this run's ranks, distributed.world_size or --world-size");
  refused("--resume " + straight, "got a file (a single-process smoke's checkpoint?)");
  fs::copy(d / "ck", d / "swapped");
  fs::rename(d / "swapped" / "rank-0.ckpt", d / "swapped" / "tmp");
  fs::rename(d / "swapped" / "rank-1.ckpt", d / "swapped" / "rank-0.ckpt");
  fs::rename(d / "swapped" / "tmp", d / "swapped" / "rank-1.ckpt");
  nlohmann::json m = manifest;
  std::swap(m["ranks"][0]["xxh3_128"], m["ranks"][1]["xxh3_128"]);
  write_file_atomically((d / "swapped" / "checkpoint.json").string(), m.dump());
  // Both ranks find a file of the other; whichever exits first is named.
  refused("--resume " + (d / "swapped").string(), ".ckpt: rank: expected rank ");
  refused("--resume " + (d / "swapped").string(), " of 2, got rank ");
  std::ofstream(d / "swapped" / "rank-1.ckpt", std::ios::app) << "!";
  refused("--resume " + (d / "swapped").string(), "rank-1.ckpt: expected XXH3-128 ");
  Result single = lockstep("run " + kSmoke + " --resume " + ck + " --record " + (d / "y.json").string());
  EXPECT_EQ(single.code, 2) << single.output;
  EXPECT_NE(single.output.find("got a folder (a multi-rank smoke's checkpoint?)"), std::string::npos) << single.output;

  // The record never lands among the checkpoint's files, nor a checkpoint in the goldens.
  fs::create_directory_symlink(".", d / "L");  // the same path through a link
  for (const std::string& o : {ck + "/checkpoint.json", (d / "L" / "ck" / "checkpoint.json").string()}) {
    Result inside = lockstep("run " + cfg + " --resume " + ck + " --record " + o);
    EXPECT_EQ(inside.code, 2) << inside.output;
    EXPECT_NE(inside.output.find("would share paths"), std::string::npos) << inside.output;
  }
  // Both halves run under one determinism contract.
  // (Every rank finds it; whichever exits first is named.)
  refused("--resume " + ck + " --intra-op-threads 2",
          ".ckpt: contract.intra_op_threads: expected \"2\" (this run's), got \"1\": a run resumes under the "
          "determinism contract it stopped under");
  refused("--stop-after 3 --checkpoint " + (d / "goldens" / "ck").string(),
          "refusing to write a checkpoint into the goldens folder");
  for (const std::string& smoke : {cfg, kSmoke}) {  // multi-rank and single-process
    Result golden_out = lockstep("run " + smoke + " --record " + (fs::path(smoke).parent_path().parent_path() / "goldens" / "r.json").string());
    EXPECT_EQ(golden_out.code, 2) << golden_out.output;
    EXPECT_NE(golden_out.output.find("refusing to write a run record into the goldens folder"), std::string::npos)
        << golden_out.output;
  }

  // A second stop replaces the checkpoint whole ("ck/" is "ck"), and
  // leaves no rank logs behind; a folder lockstep did not make is never replaced.
  Result again = lockstep("run " + cfg + " --stop-after 3 --checkpoint " + ck + "/ --record " + (d / "s.json").string());
  ASSERT_EQ(again.code, 0) << again.output;
  EXPECT_EQ(read(d / "ck" / "checkpoint.json")["step"], 3);
  EXPECT_FALSE(fs::exists(ck + ".partial"));
  EXPECT_FALSE(fs::exists(d / "s.json.ranks"));
  fs::create_directories(d / "mine");
  Result foreign = lockstep("run " + cfg + " --stop-after 3 --checkpoint " + (d / "mine").string());
  EXPECT_EQ(foreign.code, 2) << foreign.output;
  EXPECT_NE(foreign.output.find("is not a multi-rank checkpoint folder lockstep made"), std::string::npos)
      << foreign.output;
}

// Each rank's dropout generator is its own (keyed by its rank) and is in
// its own checkpoint file: resuming without them moves step 5.
TEST(DistributedCli, ResumingWithoutTheRanksGeneratorStatesMovesTheFirstResumedStep) {
  fs::path d = two_rank("resume-rng", [](nlohmann::json& c) {
    c["model"] = {{"name", "mlp"}, {"hidden", 32}, {"dropout", 0.1}, {"classes", 10}};
  });
  std::string cfg = cfg_path(d), ck = (d / "ck").string(), straight = (d / "straight.json").string();
  ASSERT_EQ(lockstep("run " + cfg + " --record " + straight).code, 0);
  ASSERT_EQ(lockstep("run " + cfg + " --stop-after 5 --checkpoint " + ck).code, 0);
  ASSERT_EQ(lockstep("run " + cfg + " --resume " + ck + " --record " + (d / "ok.json").string()).code, 0);
  EXPECT_EQ(lockstep("compare " + (d / "ok.json").string() + " " + straight).code, 0);
  ASSERT_EQ(lockstep("run " + cfg + " --resume " + ck + " --skip-generator-restore --record " + (d / "bad.json").string()).code, 0);
  Result bad = lockstep("compare " + (d / "bad.json").string() + " " + straight);
  EXPECT_EQ(bad.code, 1) << bad.output;
  EXPECT_NE(bad.output.find("first divergence: train step 5: loss"), std::string::npos) << bad.output;
}

TEST(DistributedCli, ConfigMistakesAreExitTwoNamingTheField) {
  struct Case {
    std::function<void(nlohmann::json&)> edit;
    std::string expect;
  } cases[] = {
      {[](nlohmann::json& c) { c["distributed"]["world_size"] = 0; }, "distributed.world_size"},
      {[](nlohmann::json& c) { c["distributed"]["backend"] = "nccl"; }, "distributed.backend: expected \"gloo\" with device \"cpu\""},
      {[](nlohmann::json& c) { c["distributed"]["backend"] = "mpi"; }, "distributed.backend"},
      {[](nlohmann::json& c) { self_test(c, "skip_allreduce", 2, 1); }, "distributed.self_test.rank"},
      {[](nlohmann::json& c) { self_test(c, "skip_allreduce", 1, 10); }, "distributed.self_test.step"},
      {[](nlohmann::json& c) { c["distributed"]["world"] = 2; }, "distributed.world"},
      {[](nlohmann::json& c) { c["resume_at"] = 10; }, "resume_at: expected a step between 1 and steps - 1"},
  };
  fs::path d = two_rank("config");
  for (const auto& c : cases) {
    nlohmann::json cfg = parse_json_file(kTwoRank);
    c.edit(cfg);
    write_file_atomically(cfg_path(d), pretty_dump(cfg));
    Result r = lockstep("run " + cfg_path(d) + " --record " + (d / "run.json").string());
    EXPECT_EQ(r.code, 2) << c.expect << "\n" << r.output;
    EXPECT_NE(r.output.find(c.expect), std::string::npos) << r.output;
  }
  Result single = lockstep("run " + kSmoke + " --world-size 2 --record " + (d / "single.json").string());
  EXPECT_EQ(single.code, 2) << single.output;
  EXPECT_NE(single.output.find("has no \"distributed\" section"), std::string::npos) << single.output;
}

// A `lockstep` with no lockstep-torch beside it: one exit 3 saying so.
TEST(DistributedCli, AMissingLockstepTorchIsExitThreeNamingIt) {
  fs::path d = two_rank("no-torch");
  fs::path alone = d / "bin" / "lockstep";
  fs::create_directories(alone.parent_path());
  fs::copy_file(test_paths::lockstep_binary(), alone);
  Result r = shell(alone.string() + " run " + cfg_path(d) + " --record " + (d / "run.json").string());
  EXPECT_EQ(r.code, 3) << r.output;
  EXPECT_NE(r.output.find("the ranks of digits-cnn-2rank run in " + (d / "bin" / "lockstep-torch").string() +
                          ", which cannot be started: No such file or directory (install lockstep-torch beside "
                          "lockstep"),
            std::string::npos)
      << r.output;
}

// ---- Ranks on several machines (two coordinators on this host) -----------

// A port the kernel picks on 127.0.0.1, closed again so node 0 can serve it.
int free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

struct TwoNodes {
  Result node0, node1;
  std::string master;  // "127.0.0.1:PORT"
};

// `lockstep ARGS0` as node 0 and `lockstep ARGS1` as node 1 of 2, started
// together on this host in the folder `d`, as two CI jobs on two machines
// would be.
TwoNodes on_two_nodes(const fs::path& d, const std::string& args0, const std::string& args1) {
  TwoNodes t;
  t.master = "127.0.0.1:" + std::to_string(free_port());
  std::string common = " --nnodes 2 --master " + t.master + " --node-rank ";
  std::string bin = std::string("env -u CI ") + test_paths::lockstep_binary() + " ";
  std::string log1 = (d / "node1.log").string(), rc1 = (d / "node1.rc").string();
  t.node0 = shell("cd " + d.string() + " || exit 9; (" + bin + args1 + common + "1 > " + log1 + " 2>&1; echo $? > " + rc1 + ") & " + bin + args0 +
                  common + "0 2>&1; rc=$?; wait; exit $rc");
  t.node1.output = read_file(log1);
  t.node1.code = std::stoi(read_file(rc1));
  return t;
}

// Both nodes end with `code` and a message containing `text`.
void expect_on_both_nodes(const TwoNodes& t, int code, const std::string& text) {
  for (const Result* r : {&t.node0, &t.node1}) {
    EXPECT_EQ(r->code, code) << r->output;
    EXPECT_NE(r->output.find(text), std::string::npos) << r->output;
  }
}

TEST(DistributedCli, RanksOnTwoMachinesGiveTheOneMachineRecord) {
  fs::path d = two_rank("nodes");
  for (int world : {2, 4}) {
    std::string w = " --world-size " + std::to_string(world);
    std::string one = (d / ("one" + std::to_string(world) + ".json")).string();
    std::string n0 = (d / ("n0-" + std::to_string(world) + ".json")).string();
    std::string n1 = (d / ("n1-" + std::to_string(world) + ".json")).string();
    ASSERT_EQ(lockstep("run " + cfg_path(d) + w + " --record " + one).code, 0);
    // At world size 2 both nodes run in one folder with the default --out:
    // node 1 keeps its logs beside node 0's record, not in its way.
    if (world == 2) {
      n0 = (d / "lockstep-out" / "digits-cnn-2rank.run.json").string();
      n1 = (d / "lockstep-out" / "digits-cnn-2rank.node-1.run.json").string();
    }
    std::string out0 = world == 2 ? "" : " --out " + n0, out1 = world == 2 ? "" : " --out " + n1;
    TwoNodes t = on_two_nodes(d, "run " + cfg_path(d) + w + out0, "run " + cfg_path(d) + w + out1);
    ASSERT_EQ(t.node0.code, 0) << t.node0.output << t.node1.output;
    ASSERT_EQ(t.node1.code, 0) << t.node1.output;
    EXPECT_NE(t.node0.output.find("run digits-cnn-2rank: " + std::to_string(world) + " ranks (gloo, on 2 machines "
                                  "through " + t.master + "), "),
              std::string::npos)
        << t.node0.output;
    EXPECT_NE(t.node1.output.find(world == 2 ? "node 1 of 2: rank 1 finished; node 0 writes the record"
                                             : "node 1 of 2: ranks 2..3 finished; node 0 writes the record"),
              std::string::npos)
        << t.node1.output;
    EXPECT_FALSE(fs::exists(n1)) << "only node 0 writes the record";
    EXPECT_TRUE(fs::is_directory(n1 + ".ranks")) << "node 1's ranks' logs";
    nlohmann::json a = read(one), b = read(n0);
    for (const char* key : {"series", "hashes", "init", "probes", "train_probes", "contract", "config_hash", "platform"})
      EXPECT_EQ(a[key], b[key]) << key << " differs between one machine and two, world size " << world;
    EXPECT_EQ(b["fingerprint"]["distributed.nodes"]["value"], "2 machines, store at " + t.master);
    EXPECT_FALSE(b["fingerprint"].contains("distributed.mixed_stack"));
  }
  EXPECT_EQ(processes_mentioning(d.string()), 0);
}

TEST(DistributedCli, NodesThatDisagreeOrFailAreNamedOnEveryNode) {
  fs::path d = two_rank("nodes-fail");
  std::string other = (d / "smoke" / "other.json").string(), desync = (d / "smoke" / "desync.json").string(),
              kill = (d / "smoke" / "kill.json").string();
  const nlohmann::json cfg = parse_json_file(cfg_path(d));
  auto write_edited = [&](const std::string& path, const std::function<void(nlohmann::json&)>& edit) {
    nlohmann::json c = cfg;
    edit(c);
    write_file_atomically(path, pretty_dump(c));
  };
  write_edited(other, [](nlohmann::json& c) { c["optimizer"]["lr"] = 0.02; });
  write_edited(desync, [](nlohmann::json& c) { self_test(c, "skip_allreduce", 1, 3); });
  write_edited(kill, [](nlohmann::json& c) { self_test(c, "kill", 1, 3); });
  std::string out0 = " --out " + (d / "n0.json").string(), out1 = " --out " + (d / "n1.json").string();

  // Another config on node 1: both nodes refuse before the first step.
  TwoNodes t = on_two_nodes(d, "run " + cfg_path(d) + out0, "run " + other + out1);
  expect_on_both_nodes(t, 2, ": config_hash: expected the same on every node; node 1 has \"");

  // Node 1 with another world size: both nodes refuse at once, naming it
  // (a Gloo rendezvous of ranks that disagree on their number never ends).
  auto t0 = std::chrono::steady_clock::now();
  t = on_two_nodes(d, "run " + cfg_path(d) + out0, "run " + cfg_path(d) + " --world-size 4" + out1);
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  expect_on_both_nodes(t, 2, ": world_size: expected the same on every node; node 1 has \"4\", node 0 \"2\"");
  EXPECT_LT(s, 60) << "not at the timeout";

  // A desync on node 1's rank: every node names it.
  t = on_two_nodes(d, "run " + desync + out0, "run " + desync + out1);
  expect_on_both_nodes(t, 1, "ranks desynchronised at step 3: rank 1's parameter conv.weight differs from rank 0's");

  // A rank killed on node 1: node 1 names it; node 0 sees its peer go.
  t = on_two_nodes(d, "run " + kill + out0, "run " + kill + out1);
  EXPECT_EQ(t.node1.code, 1) << t.node1.output;
  EXPECT_NE(t.node1.output.find("rank 1 of 2 (node 1 of 2) was killed by signal 9 (Killed) at step 3"),
            std::string::npos)
      << t.node1.output;
  EXPECT_EQ(t.node0.code, 3) << t.node0.output;
  EXPECT_NE(t.node0.output.find("rank 0 of 2 (node 0 of 2): "), std::string::npos) << t.node0.output;
  EXPECT_NE(t.node0.output.find("(a rank on another node may have stopped first: see that node's job log)"),
            std::string::npos)
      << t.node0.output;
  EXPECT_EQ(processes_mentioning(d.string()), 0);
}

TEST(DistributedCli, WhatCannotRunOnSeveralMachinesIsExitTwo) {
  fs::path d = two_rank("nodes-usage");
  std::string run = "run " + cfg_path(d) + " --record " + (d / "run.json").string();
  struct Case {
    std::string args, env, expect;
  } cases[] = {
      {" --nnodes 2 --node-rank 0", "-u MASTER_ADDR -u MASTER_PORT",
       "--nnodes 2: node 0's address is needed: --master HOST:PORT, or MASTER_ADDR and MASTER_PORT"},
      {" --nnodes 2 --master h:1", "", "--nnodes 2: --node-rank K is required"},
      {" --nnodes 2 --node-rank 2 --master h:1", "", "--node-rank 2: must be below --nnodes 2"},
      {" --nnodes 3 --node-rank 0 --master h:1", "",
       "--nnodes 3: the 2 ranks of " + cfg_path(d) + " (distributed.world_size or --world-size) do not split evenly "
       "over 3 machines"},
      {" --nnodes 2 --node-rank 0 --master h:65536", "", "--master: expected a port 1..65535 after the ':' in 'h:65536'"},
      {" --nnodes 2 --node-rank 0", "MASTER_ADDR=h MASTER_PORT=x",
       "MASTER_ADDR:MASTER_PORT: expected a port 1..65535 after the ':' in 'h:x'"},
      {" --node-rank 0", "", "--node-rank: only with --nnodes N > 1"},
      // Decimal only: CLI11 alone would read 0x2 as 2 and 010 as 8.
      {" --nnodes 0x2 --node-rank 0 --master h:1", "", "expected a decimal integer in [1 - 64], got '0x2'"},
      {" --nnodes 010 --node-rank 0 --master h:1", "",
       "--nnodes 10: the 2 ranks of " + cfg_path(d) + " (distributed.world_size or --world-size) do not split "
       "evenly over 10 machines"},
      {" --nnodes 2 --node-rank 0 --master ::1:29500", "",
       "--master: '::1:29500' is ambiguous: write an IPv6 address in brackets, [ADDR]:PORT"},
      {" --nnodes 2 --node-rank 0 --master h:1 --repeat 2", "", "--nnodes: --repeat runs on one machine only"},
      {" --nnodes 2 --node-rank 0 --master h:1 --resume ck", "",
       "--nnodes 2: --repeat, --stop-after and --resume run on one machine only"},
  };
  for (const auto& c : cases) {
    Result r = lockstep(run + c.args, c.env);
    EXPECT_EQ(r.code, 2) << c.args << "\n" << r.output;
    EXPECT_NE(r.output.find(c.expect), std::string::npos) << c.args << "\n" << r.output;
  }
  Result check = lockstep("check " + cfg_path(d) + " --nnodes 2 --out " + (d / "check").string());
  EXPECT_EQ(check.code, 2) << check.output;
  EXPECT_NE(check.output.find("check runs on one machine (its repeat and resume runs follow each result, which only "
                              "node 0 sees); on several machines run `lockstep run SMOKE --nnodes N"),
            std::string::npos)
      << check.output;
  Result single = lockstep("run " + kSmoke + " --nnodes 2 --node-rank 0 --master h:1 --record " + (d / "s.json").string());
  EXPECT_EQ(single.code, 2) << single.output;
  EXPECT_NE(single.output.find("--nnodes 2: " + kSmoke + " has no \"distributed\" section"), std::string::npos)
      << single.output;
  Result trainer = lockstep("run " + kSourceDir + "/examples/pytorch-trainer-2rank/smoke/pytorch-trainer-2rank.json "
                            "--nnodes 2 --node-rank 0 --master h:1 --out " + (d / "t.json").string());
  EXPECT_EQ(trainer.code, 2) << trainer.output;
  EXPECT_NE(trainer.output.find("runs a team's trainer; spreading its ranks over machines is its own launcher's job"),
            std::string::npos)
      << trainer.output;
}

// A team's own trainer on two ranks: examples/pytorch-trainer/train.py with
// DistributedDataParallel on Gloo, started by lockstep as torchrun would.
const std::string kTrainer2 = kSourceDir + "/examples/pytorch-trainer-2rank/smoke";

TEST(DistributedCli, ATeamTrainerOnTwoRanksPassesItsGoldenWithEveryRanksData) {
  fs::path d = fs::temp_directory_path() / ("lockstep-cli-trainer2-" + std::to_string(::getpid()));
  fs::remove_all(d);
  Result r = lockstep("check " + kTrainer2 + " --out " + d.string());
  ASSERT_EQ(r.code, 0) << r.output;
  // Its resume_at: each rank stops at step 5 with its own checkpoint
  // ({checkpoint}.rank-{rank}) and a fresh set of ranks continues.
  EXPECT_NE(r.output.find("resumed at step 5 from a checkpoint in 2 fresh rank processes: bit-identical"),
            std::string::npos)
      << r.output;
  EXPECT_TRUE(fs::exists(d / "pytorch-trainer-2rank" / "resume-at-5.ckpt.rank-1"));
  nlohmann::json rec = read(d / "pytorch-trainer-2rank" / "run-1.json");
  EXPECT_EQ(rec["contract"]["distributed.world_size"], "2");
  ASSERT_EQ(rec["train_probes"].size(), 20u);  // 10 batches of each rank, interleaved
  EXPECT_EQ(rec["train_probes"][0]["rank"], 0);
  EXPECT_EQ(rec["train_probes"][1]["rank"], 1);
  EXPECT_NE(rec["train_probes"][0]["sample_index_hash"], rec["train_probes"][1]["sample_index_hash"]);
  // The golden's data-only pass stood for today's; one run now sees what each rank trained on.
  EXPECT_NE(r.output.find("no data-only pass ran: the 20 batches trained on are the golden's data-only batches"),
            std::string::npos) << r.output;
  Result probe = lockstep("probe " + kTrainer2 + "/pytorch-trainer-2rank.json --record " + (d / "probe.json").string());
  ASSERT_EQ(probe.code, 0) << probe.output;
  EXPECT_EQ(rec["train_probes"], read(d / "probe.json")["probes"]);
  fs::path ranks = d / "pytorch-trainer-2rank" / "run-1.json.trainer" / "train";
  EXPECT_TRUE(fs::exists(ranks / "rank-0" / "metrics.jsonl"));
  EXPECT_TRUE(fs::exists(ranks / "rank-1" / "metrics.jsonl"));
  fs::remove_all(d);
}

// A team trainer's per-rank checkpoints: {rank} in the path is required,
// and the stopped half's record must be this run's (world size, hash).
TEST(DistributedCli, ATeamTrainersStoppedRunResumesOnlyOnItsOwnRanks) {
  fs::path d = fs::temp_directory_path() / ("lockstep-cli-trainer2-resume-" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  nlohmann::json cfg = parse_json_file(kTrainer2 + "/pytorch-trainer-2rank.json");
  cfg["trainer"]["cwd"] = kSourceDir + "/examples/pytorch-trainer";
  std::string file = (d / "t.json").string();
  // A stop argument that every rank would share: refused before any run.
  auto refused_stop_arg = [&](const std::string& arg, const std::string& expect) {
    nlohmann::json edited = cfg;
    edited["trainer"]["resume"]["stop"][3] = arg;
    write_file_atomically(file, pretty_dump(edited));
    Result r = lockstep("run " + file + " --record " + (d / "x.json").string());
    EXPECT_EQ(r.code, 2) << r.output;
    EXPECT_NE(r.output.find(expect), std::string::npos) << r.output;
  };
  refused_stop_arg("{checkpoint}", "t.json: trainer.resume.stop[3]: expected {rank} beside {checkpoint} in a multi-rank smoke");
  refused_stop_arg((d / "shared.ckpt").string(),  // one literal path, without {checkpoint}
                   "trainer.resume.stop: expected an argument with {rank} in a multi-rank smoke");

  write_file_atomically(file, pretty_dump(cfg));
  std::string ck = (d / "ck").string();
  Result stop = lockstep("run " + file + " --stop-after 5 --checkpoint " + ck);
  ASSERT_EQ(stop.code, 0) << stop.output;
  EXPECT_TRUE(fs::exists(ck + ".rank-0") && fs::exists(ck + ".rank-1"));
  Result four = lockstep("run " + file + " --resume " + ck + " --world-size 4 --record " + (d / "y.json").string());
  EXPECT_EQ(four.code, 2) << four.output;
  EXPECT_NE(four.output.find("ck.lockstep-part.json: contract.distributed.world_size: expected 4 (this run's ranks"),
            std::string::npos)
      << four.output;
  Result threads = lockstep("run " + file + " --resume " + ck + " --intra-op-threads 2 --record " + (d / "y.json").string());
  EXPECT_EQ(threads.code, 2) << threads.output;
  EXPECT_NE(threads.output.find("ck.lockstep-part.json: contract."), std::string::npos) << threads.output;
  EXPECT_NE(threads.output.find("a run resumes under the determinism contract it stopped under"), std::string::npos)
      << threads.output;
  Result over = lockstep("run " + file + " --resume " + ck + " --record " + ck + ".rank-0");
  EXPECT_EQ(over.code, 2) << over.output;
  EXPECT_NE(over.output.find("would share paths"), std::string::npos) << over.output;
  nlohmann::json part = parse_json_file(ck + ".lockstep-part.json");
  part["series"]["loss"]["values"][0] = 9;
  write_file_atomically(ck + ".lockstep-part.json", pretty_dump(part));
  Result edited = lockstep("run " + file + " --resume " + ck + " --record " + (d / "z.json").string());
  EXPECT_EQ(edited.code, 2) << edited.output;
  EXPECT_NE(edited.output.find("ck.lockstep-part.json: expected XXH3-128 "), std::string::npos) << edited.output;
  EXPECT_NE(edited.output.find("(the file changed after the run stopped)"), std::string::npos) << edited.output;
  fs::remove_all(d);
}

TEST(DistributedCli, ATeamTrainerWhoseRanksLogTheirOwnLossIsNamed) {
  fs::path d = fs::temp_directory_path() / ("lockstep-cli-trainer2-bug-" + std::to_string(::getpid()));
  fs::remove_all(d);
  Result r = lockstep("run " + kTrainer2 + "/pytorch-trainer-2rank.json --record " + (d / "run.json").string(),
                      "PYTORCH_TRAINER_BUG=rank_local_loss");
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find("train/rank-1/metrics.jsonl: rank 1 logged loss = "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("at step 0, rank 0 logged "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("a series lockstep compares is a global one, the same on every rank"), std::string::npos)
      << r.output;
  fs::remove_all(d);
}

}  // namespace
}  // namespace lockstep::cli_test
