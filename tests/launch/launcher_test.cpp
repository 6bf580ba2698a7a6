// The real launcher's argument list and error classes, with a stand-in
// executable (a shell script) instead of `lockstep run`.
#include "launch/launcher.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "core/atomic_file.h"
#include "core/error.h"
#include "gate/gate_fixture.h"

namespace lockstep {
namespace {
namespace fs = std::filesystem;

TEST(ChildArgs, CarryOverridesCheckpointAndResume) {
  ChildRun r;
  r.smoke = "smoke/a.json";
  r.out = "out/run-1.json";
  EXPECT_EQ(child_args(r), (std::vector<std::string>{"run", "smoke/a.json", "--record", "out/run-1.json", "--quiet"}));
  r.overrides = {2, 0};
  r.stop_after = 5;
  r.checkpoint = "out/c.ckpt";
  EXPECT_EQ(child_args(r), (std::vector<std::string>{"run", "smoke/a.json", "--record", "out/run-1.json", "--quiet",
                                                     "--intra-op-threads", "2", "--workers", "0", "--stop-after", "5",
                                                     "--checkpoint", "out/c.ckpt"}));
  ChildRun resume;
  resume.smoke = "a.json";
  resume.out = "o.json";
  resume.resume = "c.ckpt";
  EXPECT_EQ(child_args(resume), (std::vector<std::string>{"run", "a.json", "--record", "o.json", "--quiet", "--resume", "c.ckpt"}));
}

// A stand-in for `lockstep run`: writes `script` as an executable file.
class FakeExecutable : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("lockstep-launcher-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string script(const std::string& body) {
    std::string path = (dir_ / "fake-lockstep").string();
    write_file_atomically(path, "#!/bin/sh\n" + body + "\n");
    ::chmod(path.c_str(), 0755);
    return path;
  }
  ChildRun child() {
    ChildRun r;
    r.smoke = "smoke/a.json";
    r.out = (dir_ / "out" / "run-1.json").string();
    return r;
  }
  fs::path dir_;
};

TEST_F(FakeExecutable, ExitTwoStaysBadInputWithTheChildsReason) {
  ProcessLauncher l(script("echo 'warning: slow disk' >&2; echo 'lockstep: error: smoke/a.json: steps: expected an "
                           "integer' >&2; exit 2"));
  ::testing::internal::CaptureStderr();
  try {
    l.run(child());
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kBadInput);
    EXPECT_EQ(std::string(e.what()), "`lockstep run smoke/a.json` failed: smoke/a.json: steps: expected an integer");
  }
  // The child's other lines are echoed; its error is this error's message,
  // said once by whoever reports it (three runs failing alike printed it
  // three times before).
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "warning: slow disk\n");
  // The child's stderr is kept whole beside the record it would have written.
  EXPECT_TRUE(fs::exists(child().out + ".log"));
}

// A child that wrote megabytes to stderr: only the last MiB is read and
// echoed (memory stays bounded), its error still found at the end.
TEST_F(FakeExecutable, OnlyTheLastMebibyteOfALongChildLogIsRead) {
  ProcessLauncher l(script("head -c 3000000 /dev/zero | tr '\\0' 'x' >&2; echo >&2; "
                           "echo 'lockstep: error: smoke/a.json: steps: expected an integer' >&2; exit 2"));
  ::testing::internal::CaptureStderr();
  try {
    l.run(child());
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "`lockstep run smoke/a.json` failed: smoke/a.json: steps: expected an integer");
  }
  std::string echoed = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(echoed.rfind("(the child's stderr is over 1 MiB: its first ", 0), 0u) << echoed.substr(0, 200);
  EXPECT_LE(echoed.size(), (size_t{1} << 20) + 1000);
}

TEST_F(FakeExecutable, AnyOtherFailureIsEnvironment) {
  ProcessLauncher l(script("echo 'lockstep: error: CUDA is not usable' >&2; exit 3"));
  try {
    l.run_to_checkpoint(child());
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kEnvironment);
    EXPECT_EQ(std::string(e.what()), "`lockstep run smoke/a.json` exited with 3: CUDA is not usable");
  }
  ProcessLauncher killed(script("kill -9 $$"));
  try {
    killed.run(child());
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kEnvironment);
    EXPECT_EQ(std::string(e.what()), "`lockstep run smoke/a.json` was killed by signal 9");
  }
  // A child that hangs is killed at the launcher's timeout, with its group.
  ProcessLauncher hung(script("sleep 30"), 1);
  try {
    hung.run(child());
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kEnvironment);
    EXPECT_EQ(std::string(e.what()),
              "`lockstep run smoke/a.json` timed out after 1 s (killed with its process group): a hang");
  }
}

TEST_F(FakeExecutable, ASuccessfulChildsRecordIsReadAndItsArgumentsAndSeedPassed) {
  // The stand-in copies a prepared record to --out ($4) and logs its
  // arguments and LOCKSTEP_SEED.
  std::string prepared = (dir_ / "prepared.json").string();
  write_run_record(prepared, testing::make_gate_record());
  ProcessLauncher l(script("cp '" + prepared + "' \"$4\"; echo \"$@ seed=$LOCKSTEP_SEED\" > '" +
                           (dir_ / "args").string() + "'"));
  ChildRun r = child();
  r.seed = "7";
  RunRecord rec = l.run(r);
  EXPECT_EQ(rec.series.at("loss").values, testing::make_gate_record().series.at("loss").values);
  EXPECT_EQ(read_file((dir_ / "args").string()), "run smoke/a.json --record " + r.out + " --quiet seed=7\n");
  EXPECT_FALSE(fs::exists(r.out + ".log"));  // an empty stderr leaves no log
}

// A varied run's command line is the plain run's, byte for byte: its
// variation travels in LOCKSTEP_VARY, and a plain run never inherits one.
TEST_F(FakeExecutable, AVariationTravelsInTheEnvironmentNotOnTheCommandLine) {
  std::string prepared = (dir_ / "prepared.json").string();
  write_run_record(prepared, testing::make_gate_record());
  ProcessLauncher l(script("cp '" + prepared + "' \"$4\"; echo \"$@ vary=${LOCKSTEP_VARY-unset}\" > '" +
                           (dir_ / "args").string() + "'"));
  ::setenv("LOCKSTEP_VARY", "env-order", 1);  // the caller's own: never a plain child's
  ChildRun r = child();
  l.run(r);
  EXPECT_EQ(read_file((dir_ / "args").string()), "run smoke/a.json --record " + r.out + " --quiet vary=unset\n");
  r.overrides.vary.allocator_bytes = 70000;
  r.overrides.vary.thread_warmup = true;
  l.run(r);
  ::unsetenv("LOCKSTEP_VARY");
  EXPECT_EQ(read_file((dir_ / "args").string()),
            "run smoke/a.json --record " + r.out + " --quiet vary=allocator=70000,thread-warmup\n");
}

// run_children varies the run numbered varied_run (check's second repeat)
// and no other.
TEST(RunChildren, OnlyTheVariedRunVaries) {
  testing::FakeLauncher l;
  ChildRun base;
  base.smoke = "a.json";
  base.varied_run = 2;
  base.variation.env_reversed = true;
  const std::string out = (std::filesystem::temp_directory_path() /
                           ("lockstep-run-children-vary-" + std::to_string(::getpid()))).string();
  run_children(l, base, out, "run", 3);
  ASSERT_EQ(l.calls.size(), 3u);
  EXPECT_TRUE(l.calls[0].overrides.vary.empty());
  EXPECT_TRUE(l.calls[1].overrides.vary.env_reversed);
  EXPECT_EQ(l.calls[1].out, out + "/run-2.json");
  EXPECT_TRUE(l.calls[2].overrides.vary.empty());
  std::filesystem::remove_all(out);
}

TEST(ChildArgs, ADataOnlyPassIsAProbeAndATrainingPassAloneSaysSo) {
  ChildRun r;
  r.smoke = "a.json";
  r.out = "o.json";
  r.train = false;
  EXPECT_EQ(child_args(r), (std::vector<std::string>{"probe", "a.json", "--record", "o.json", "--quiet"}));
  r.train = true;
  r.data_pass = false;
  EXPECT_EQ(child_args(r), (std::vector<std::string>{"run", "a.json", "--record", "o.json", "--quiet", "--no-data-pass"}));
}

// With share_data_pass, run 1 makes the data-only pass and the others run
// without it, taking run 1's probes.
TEST(RunChildren, RunsAfterTheFirstShareItsDataOnlyPass) {
  testing::FakeLauncher l;
  l.edit = [](size_t, const ChildRun& run, RunRecord& r) {
    if (!run.data_pass) r.probes.clear();
  };
  ChildRun base;
  base.smoke = "a.json";
  base.share_data_pass = true;
  // The fake launcher writes the records: into a folder of the test's own.
  const std::string out = (std::filesystem::temp_directory_path() /
                           ("lockstep-run-children-" + std::to_string(::getpid()))).string();
  std::vector<RunRecord> runs = run_children(l, base, out, "run", 3);
  ASSERT_EQ(l.calls.size(), 3u);
  EXPECT_TRUE(l.calls[0].data_pass);
  EXPECT_FALSE(l.calls[1].data_pass);
  EXPECT_FALSE(l.calls[2].data_pass);
  EXPECT_EQ(first_repeat_difference(runs), (std::pair<size_t, std::string>{0, ""}));
  EXPECT_EQ(runs[2].probes.size(), 2u);
  base.share_data_pass = false;
  l.calls.clear();
  run_children(l, base, out, "run", 2);
  EXPECT_TRUE(l.calls[1].data_pass);
  std::filesystem::remove_all(out);
}

TEST(RepeatDifference, NamesTheFirstRunThatDiffers) {
  RunRecord a = testing::make_gate_record();
  EXPECT_EQ(first_repeat_difference({a, a, a}), (std::pair<size_t, std::string>{0, ""}));
  RunRecord b = a;
  b.series["loss"].values[1] = 1.0;
  auto [i, diff] = first_repeat_difference({a, a, b});
  EXPECT_EQ(i, 2u);
  EXPECT_EQ(diff.rfind("train step 1: loss", 0), 0u) << diff;
}

}  // namespace
}  // namespace lockstep
