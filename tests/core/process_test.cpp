// Running a process (core/process.h): program resolution (exit 2), exit status,
// signals, the timeout that kills the process group, the stderr tail.
#include "core/process.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <thread>
#include <algorithm>
#include <atomic>

#include "core/atomic_file.h"
#include "core/error.h"

namespace lockstep {
namespace {
namespace fs = std::filesystem;

class Process : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("lockstep-process-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  ProcessSpec sh(const std::string& body, int64_t timeout_s = 60) {
    ProcessSpec p;
    p.argv = {"sh", "-c", body};
    p.env = {"PATH=/usr/bin:/bin", "GREETING=hello"};
    p.cwd = dir_.string();
    p.stdout_path = (dir_ / "out.log").string();
    p.stderr_path = (dir_ / "err.log").string();
    p.timeout_s = timeout_s;
    return p;
  }
  std::string read(const std::string& name) {
    std::ifstream in(dir_ / name);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  }
  fs::path dir_;
};

TEST_F(Process, RunsInItsFolderWithExactlyTheGivenEnvironment) {
  ProcessOutcome o = run_process(sh("pwd; echo $GREETING; echo ${HOME:-nohome}; echo oops >&2"));
  EXPECT_TRUE(o.ok());
  EXPECT_EQ(o.exit_status, 0);
  EXPECT_EQ(read("out.log"), fs::canonical(dir_).string() + "\nhello\nnohome\n");
  EXPECT_EQ(read("err.log"), "oops\n");
}

// `run --vary affinity`: the process starts pinned to the CPUs asked for
// (the kernel's own list of them, read back from /proc).
TEST_F(Process, CpusPinTheProcessBeforeItStarts) {
  const CpuSet allowed = allowed_cpus_mask();
  ASSERT_TRUE(allowed.any());
  size_t last = 0;
  for (size_t c = 0; c < allowed.size(); ++c)
    if (allowed.test(c)) last = c;
  ProcessSpec p = sh("grep Cpus_allowed_list /proc/self/status");
  p.cpus.set(last);
  ASSERT_TRUE(run_process(p).ok()) << read("err.log");
  EXPECT_EQ(read("out.log"), "Cpus_allowed_list:\t" + std::to_string(last) + "\n");
  CpuSet two;
  two.set(1).set(3);
  EXPECT_EQ(cpu_list(two), "1+3");
  EXPECT_EQ(cpu_list(CpuSet{}), "");
}

TEST_F(Process, ExitStatusAndSignalAreReported) {
  ProcessOutcome o = run_process(sh("exit 3"));
  EXPECT_FALSE(o.ok());
  EXPECT_EQ(o.exit_status, 3);
  EXPECT_EQ(o.describe(60), "exited with status 3");
  o = run_process(sh("kill -9 $$"));
  EXPECT_EQ(o.signal, 9);
  EXPECT_EQ(o.exit_status, -1);
  EXPECT_NE(o.describe(60).find("killed by signal 9"), std::string::npos);
}

TEST_F(Process, TimeoutKillsTheWholeProcessGroup) {
  // A child that ignores SIGTERM and a grandchild (a DataLoader worker) that
  // would outlive it: both must be gone.
  ProcessSpec p = sh("sleep 30 & echo $! > grandchild.pid; trap '' TERM; sleep 30", 1);
  p.kill_grace_ms = 200;  // SIGKILL 0.2 s after the ignored SIGTERM (5 s by default)
  ProcessOutcome o = run_process(p);
  EXPECT_TRUE(o.timed_out);
  EXPECT_FALSE(o.ok());
  EXPECT_EQ(o.describe(1), "timed out after 1 s (killed with its process group)");
  EXPECT_LT(o.wall_s, 20);
  pid_t grandchild = std::stoi(read("grandchild.pid"));
  usleep(100000);
  EXPECT_NE(::kill(grandchild, 0), 0) << "the grandchild survived";
}

TEST_F(Process, ProgramNotFoundOrNotExecutableIsBadInput) {
  ProcessSpec p = sh("true");
  p.argv = {"no-such-trainer-xyz"};
  try {
    run_process(p);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kBadInput);
    EXPECT_NE(std::string(e.what()).find("no-such-trainer-xyz: command not found on PATH (/usr/bin:/bin)"),
              std::string::npos)
        << e.what();
  }
  write_file_atomically((dir_ / "train.py").string(), "print(1)\n");
  p.argv = {"./train.py"};
  try {
    run_process(p);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kBadInput);
    EXPECT_NE(std::string(e.what()).find("./train.py: not an executable file"), std::string::npos) << e.what();
  }
  p.argv = {"./missing.py"};
  EXPECT_THROW(run_process(p), Error);
}

TEST_F(Process, TailLinesKeepsTheLastN) {
  std::string path = (dir_ / "t.log").string();
  write_file_atomically(path, "a\nb\nc\nd\n");
  EXPECT_EQ(tail_lines(path, 2), "c\nd");
  EXPECT_EQ(tail_lines(path, 4), "a\nb\nc\nd");
  EXPECT_EQ(tail_lines(path, 40), "a\nb\nc\nd");
  EXPECT_EQ(tail_lines((dir_ / "none.log").string(), 3), "");
  write_file_atomically(path, "");
  EXPECT_EQ(tail_lines(path, 3), "");
}

TEST_F(Process, StopAllOnFailureKillsThePeersOfTheFirstFailure) {
  // The ranks of a multi-rank run: one dies, the other would wait forever.
  ProcessSpec dies = sh("sleep 0.2; kill -9 $$");
  ProcessSpec waits = sh("sleep 30");
  waits.stdout_path = (dir_ / "out2.log").string();
  waits.stderr_path = (dir_ / "err2.log").string();
  auto t0 = std::chrono::steady_clock::now();
  std::vector<ProcessOutcome> out = run_processes({waits, dies}, /*stop_all_on_failure=*/true);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 20);
  EXPECT_TRUE(out[0].stopped_for_peer);
  EXPECT_EQ(out[0].signal, SIGKILL);
  EXPECT_FALSE(out[1].stopped_for_peer);
  EXPECT_EQ(out[1].signal, SIGKILL);
  // Without it, a failure stops nobody else.
  std::vector<ProcessOutcome> both = run_processes({sh("exit 3"), sh("sleep 0.3; exit 0")});
  EXPECT_EQ(both[0].exit_status, 3);
  EXPECT_TRUE(both[1].ok());
  EXPECT_FALSE(both[1].stopped_for_peer);
}

// The signal handler's registry is the process's, shared by every thread
// that runs trainers (check -j, calibrate, bisect): one thread's runs
// ending neither unregisters another thread's process group nor takes the
// handler away while that group runs, so Ctrl-C still kills it.
TEST_F(Process, OneThreadsRunsEndingKeepAnotherThreadsGroupRegistered) {
  std::thread a([&] {
    ProcessSpec slow = sh("echo $$ > slow.pid; sleep 3");
    run_process(slow);
  });
  // Wait for the slow one to be running.
  for (int i = 0; i < 300 && !fs::exists(dir_ / "slow.pid"); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  std::vector<pid_t> slow_group = trainer_groups_registered();
  ASSERT_EQ(slow_group.size(), 1u);
  std::thread b([&] { run_process(sh("true")); });  // starts and ends while the slow one runs
  b.join();
  EXPECT_EQ(trainer_groups_registered(), slow_group)
      << "the slow process's group was unregistered by another thread's run";
  struct sigaction current {};
  sigaction(SIGTERM, nullptr, &current);
  EXPECT_NE(current.sa_handler, SIG_DFL) << "another thread's run took the handler away";
  a.join();
  EXPECT_TRUE(trainer_groups_registered().empty());
  sigaction(SIGTERM, nullptr, &current);
  EXPECT_EQ(current.sa_handler, SIG_DFL);  // restored by the last user
}

}  // namespace
}  // namespace lockstep
