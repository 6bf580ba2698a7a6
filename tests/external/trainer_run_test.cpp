// A team trainer run end to end in-process, with a POSIX shell script as
// the trainer (no Python needed): the environment it is handed, the
// record assembled from its metrics, probes and report, and every exit
// class of external/trainer_run.h.
#include "external/trainer_run.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "compare/compare.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "smoke/smoke_config.h"

namespace lockstep {
namespace {
namespace fs = std::filesystem;

// The fake trainer: `trainer.sh [--data-only] [--stop-after K --checkpoint P] [--resume P]`.
// It reports a strict contract (or $FAKE_CONTRACT_MODE), logs loss = (step+1)/8
// for its steps to metrics.jsonl, one probe per batch to probes.jsonl
// (numbered from the first step it trains, as the Python helper does), and its
// environment to env.txt. $FAKE_EXIT makes it fail after writing to stderr;
// $FAKE_TRACE is written as its module_trace.jsonl.
const char* kTrainer = R"SH(#!/bin/sh
set -e
out="$LOCKSTEP_OUT"
env > "$out/env.txt"
start=0; end="$LOCKSTEP_STEPS"; data=0; ckpt=""
while [ $# -gt 0 ]; do
  case "$1" in
    --data-only) data=1 ;;
    --stop-after) end="$2"; shift ;;
    --checkpoint) ckpt="$2"; shift ;;
    --resume) start=$(cat "$2"); shift ;;
  esac
  shift
done
mode="${FAKE_CONTRACT_MODE:-$LOCKSTEP_DETERMINISM}"
cat > "$out/lockstep-trainer.json" <<EOF
{"schema": "lockstep.trainer/1",
 "helper": {"version": "${FAKE_HELPER_VERSION:-@VERSION@}", "path": "/opt/fake/lockstep"},
 "contract": {"mode": "$mode", "deterministic_algorithms": "true", "deterministic_algorithms_warn_only": "false",
              "cudnn_deterministic": "true", "cudnn_benchmark": "${FAKE_BENCHMARK:-false}", "allow_tf32_cublas": "false",
              "allow_tf32_cudnn": "false", "intra_op_threads": "$LOCKSTEP_INTRA_OP_THREADS",
              "inter_op_threads": "$LOCKSTEP_INTER_OP_THREADS"},
 "fingerprint": {"python.torch": {"value": "1.13.1", "relevant": true},
                 "python.torch.cpu_capability": {"value": "${FAKE_CAPABILITY:-AVX2}", "relevant": true},
                 "loader.num_workers": {"value": "2", "relevant": false}}}
EOF
if [ -n "$FAKE_EXIT" ]; then
  i=0; while [ $i -lt 50 ]; do echo "stderr line $i" >&2; i=$((i+1)); done
  echo "RuntimeError: boom" >&2
  exit "$FAKE_EXIT"
fi
i=$start; b=$start
while [ $i -lt $end ]; do
  if [ $data -eq 0 ]; then echo "{\"step\": $i, \"loss\": $(( (i + 1) * 125 ))e-3}" >> "$out/metrics.jsonl"; fi
  echo "{\"batch\": $b, \"sample_index_hash\": \"00000000000000$(printf %02x $i)\", \"inputs\": {\"shape\": [2], \"dtype\": \"float32\", \"xxh3_128\": \"0000000000000000000000000000$(printf %04x $i)\", \"sum\": $i, \"mean\": 0, \"std\": 0, \"min\": 0, \"max\": 0, \"nan_count\": 0, \"inf_count\": 0}, \"labels\": {\"shape\": [2], \"dtype\": \"int64\", \"xxh3_128\": \"00000000000000000000000000000000\", \"sum\": 0, \"mean\": 0, \"std\": 0, \"min\": 0, \"max\": 0, \"nan_count\": 0, \"inf_count\": 0}}" >> "$out/probes.jsonl"
  i=$((i+1)); b=$((b+1))
done
if [ -n "$ckpt" ]; then echo "$end" > "$ckpt"; fi
if [ -n "$FAKE_TRACE" ]; then printf '%s\n' "$FAKE_TRACE" > "$out/module_trace.jsonl"; fi
)SH";

class TrainerRunTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("lockstep-trainer-run-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    std::string trainer = kTrainer;
    trainer.replace(trainer.find("@VERSION@"), 9, LOCKSTEP_VERSION);
    write_file_atomically((dir_ / "trainer.sh").string(), trainer);
    ::chmod((dir_ / "trainer.sh").c_str(), 0755);
    ::unsetenv("LOCKSTEP_SEED");
  }
  void TearDown() override {
    fs::remove_all(dir_);
    for (const char* v : {"FAKE_EXIT", "FAKE_TRACE", "FAKE_CONTRACT_MODE", "FAKE_BENCHMARK", "FAKE_CAPABILITY",
                          "FAKE_HELPER_VERSION", "LOCKSTEP_SEED"})
      ::unsetenv(v);
  }
  // A smoke config with `trainer_extra` spliced into the trainer section.
  SmokeConfig config(const std::string& trainer_extra = "", const std::string& top_extra = "") {
    std::string text = R"({"name": "fake", "seed": 7, "steps": 6, )" + top_extra + R"(
      "trainer": {"command": ["./trainer.sh"], "timeout_s": 30,
                  "metrics": {"format": "jsonl", "path": "{out}/metrics.jsonl", "series": {"loss": "loss"}},
                  "probes": "{out}/probes.jsonl", "data_only": ["--data-only"])" + trainer_extra + "}}";
    write_file_atomically((dir_ / "fake.json").string(), text);
    return load_smoke_config((dir_ / "fake.json").string());
  }
  // A whole run of `c` as `lockstep run` plans it (no overrides).
  static RunPlan plan_of(const SmokeConfig& c) {
    RunPlan p;
    p.config = c;
    p.site = RunSite::kTrainer;
    return p;
  }
  std::string work() const { return (dir_ / "work").string(); }
  // run_trainer(c) must throw an Error of exit class `code` whose message holds `part`.
  void expect_error(const SmokeConfig& c, ExitCode code, const std::string& part) {
    try {
      run_trainer(plan_of(c), work());
      ADD_FAILURE() << "run_trainer did not throw; expected exit " << to_int(code) << ": " << part;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), code) << e.what();
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
    }
  }
  std::string read(const fs::path& p) {
    std::ifstream in(p);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  }
  fs::path dir_;
};

TEST_F(TrainerRunTest, RecordHoldsTheTrainersMetricsProbesAndContract) {
  SmokeConfig c = config();
  TrainerRun r = run_trainer(plan_of(c), work());
  const RunRecord& rec = r.record;
  EXPECT_EQ(rec.smoke, "fake");
  EXPECT_EQ(rec.seed, 7u);
  EXPECT_EQ(rec.steps, 6);
  EXPECT_EQ(rec.platform, "cpu-" + rec.fingerprint.at("cpu.arch").value + "-avx2");
  ASSERT_EQ(rec.series.count("loss"), 1u);
  EXPECT_EQ(rec.series.at("loss").values, (std::vector<double>{0.125, 0.25, 0.375, 0.5, 0.625, 0.75}));
  EXPECT_TRUE(rec.series.at("loss").steps.empty());
  ASSERT_EQ(rec.probes.size(), 6u);
  ASSERT_EQ(rec.train_probes.size(), 6u);
  EXPECT_EQ(rec.train_probes[5].inputs.xxh3_128, "00000000000000000000000000000005");
  EXPECT_EQ(rec.contract.at("mode"), "strict");
  EXPECT_EQ(rec.fingerprint.at("python.torch").value, "1.13.1");
  EXPECT_TRUE(rec.fingerprint.at("python.torch").relevant);
  EXPECT_EQ(rec.fingerprint.at("determinism.cudnn_benchmark").value, "false");
  EXPECT_EQ(rec.fingerprint.at("config.values_xxh3").value, c.values_hash);
  EXPECT_TRUE(rec.fingerprint.at("config.values_xxh3").input);
  EXPECT_EQ(rec.fingerprint.at("env.OMP_NUM_THREADS").value, "1");
  EXPECT_EQ(rec.fingerprint.at("env.TZ").value, "UTC");
  // The record survives its own JSON.
  write_run_record((dir_ / "r.json").string(), rec);
  EXPECT_EQ(first_bit_difference(read_run_record((dir_ / "r.json").string()), rec), "");
}

TEST_F(TrainerRunTest, TheTrainerGetsTheContractThroughItsEnvironment) {
  ::setenv("LOCKSTEP_SEED", "99", 1);
  ::setenv("LOCKSTEP_STRAY", "leak", 1);
  SmokeConfig c = config(R"(, "env": {"MY_FLAG": "on"})");
  TrainerRun r = run_trainer(plan_of(c), work());
  ::unsetenv("LOCKSTEP_STRAY");
  std::string env = read(dir_ / "work" / "train" / "env.txt");
  for (const std::string& line : std::vector<std::string>{"LOCKSTEP_SEED=99", "LOCKSTEP_OUT=" + (dir_ / "work" / "train").string(), std::string("LOCKSTEP_DETERMINISM=strict"),
        std::string("LOCKSTEP_INTRA_OP_THREADS=1"), std::string("LOCKSTEP_INTER_OP_THREADS=1"),
        std::string("LOCKSTEP_DEVICE=cpu"), std::string("LOCKSTEP_STEPS=6"), std::string("LOCKSTEP_PASS=train"),
        std::string("CUBLAS_WORKSPACE_CONFIG=:4096:8"), std::string("OMP_NUM_THREADS=1"),
        std::string("MKL_NUM_THREADS=1"), std::string("PYTHONHASHSEED=0"), std::string("TZ=UTC"),
        std::string("LC_ALL=C.UTF-8"), std::string("MY_FLAG=on")})
    EXPECT_NE(env.find(line + "\n"), std::string::npos) << line << " not in\n" << env;
  EXPECT_NE(env.find("PYTHONPATH=" + helper_python_dir()), std::string::npos) << env;
  EXPECT_EQ(env.find("LOCKSTEP_STRAY"), std::string::npos);
  EXPECT_NE(read(dir_ / "work" / "data" / "env.txt").find("LOCKSTEP_PASS=data\n"), std::string::npos);
  EXPECT_EQ(r.record.seed, 99u);
  EXPECT_TRUE(r.record.seed_overridden);
  EXPECT_EQ(r.record.fingerprint.at("trainer.env.MY_FLAG").value, "on");
}

TEST_F(TrainerRunTest, AFailingTrainerIsARegressionQuotingItsStderr) {
  ::setenv("FAKE_EXIT", "1", 1);
  try {
    run_trainer(plan_of(config()), work());
    FAIL();
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_EQ(e.code(), ExitCode::kRegression);
    EXPECT_NE(m.find("the trainer exited with status 1 in the data-only pass: `./trainer.sh --data-only`"),
              std::string::npos) << m;
    EXPECT_NE(m.find("\n  | RuntimeError: boom"), std::string::npos) << m;
    EXPECT_NE(m.find("\n  | stderr line 11\n"), std::string::npos) << m;  // 40 lines: 11..49 and the error
    EXPECT_EQ(m.find("stderr line 10\n"), std::string::npos) << m;
  }
}

TEST_F(TrainerRunTest, AnotherContractIsAnEnvironmentError) {
  ::setenv("FAKE_BENCHMARK", "true", 1);
  expect_error(config(), ExitCode::kEnvironment, "cudnn_benchmark must be false, the trainer reported true");
}

// The helper the trainer imported must be this lockstep's own: another
// version is exit 3 naming both and where the trainer found it.
TEST_F(TrainerRunTest, AHelperOfAnotherVersionIsAnEnvironmentError) {
  ::setenv("FAKE_HELPER_VERSION", "0.0.9", 1);
  expect_error(config(), ExitCode::kEnvironment,
               "lockstep-trainer.json: the trainer imported lockstep's Python helper 0.0.9 from /opt/fake/lockstep, "
               "but this lockstep is " LOCKSTEP_VERSION ": the helper and the binary must come from one install");
}

TEST_F(TrainerRunTest, MissingMetricsOrReportIsBadInput) {
  SmokeConfig c = config();
  c.trainer.series = {{"loss", "lossx"}};
  // Named where it is spelt: the config's field, then the log it is not in.
  expect_error(c, ExitCode::kBadInput,
               (dir_ / "fake.json").string() + ": trainer.metrics.series.loss: expected a key the trainer logs in " +
                   (dir_ / "work" / "train" / "metrics.jsonl").string() +
                   ", got 'lossx', which never appears (did you mean 'loss'?)");
  c = config();
  c.trainer.command = {"sh", "-c", "true"};
  c.trainer.data_only.clear();
  expect_error(c, ExitCode::kBadInput, "lockstep-trainer.json");
}

// A metrics or probes path the trainer never writes (a misspelt name) names
// the config's field and what the trainer wrote instead.
TEST_F(TrainerRunTest, APathTheTrainerNeverWritesNamesTheConfigField) {
  SmokeConfig c = config();
  c.trainer.metrics_path = "{out}/metric.jsonl";
  const std::string train = (dir_ / "work" / "train").string();
  expect_error(c, ExitCode::kBadInput,
               (dir_ / "fake.json").string() + ": trainer.metrics.path: expected the path the trainer writes; it "
               "exited 0 without writing " + train + "/metric.jsonl ({out} holds env.txt, lockstep-trainer.json, "
               "metrics.jsonl, probes.jsonl, stderr.log, stdout.log)");
  c = config();
  c.trainer.probes = "{out}/probe.jsonl";
  expect_error(c, ExitCode::kBadInput, ": trainer.probes: expected the path the trainer writes; it exited 0 without writing ");
}

// The reported CPU capability names the platform and the golden's file: a
// path or a paragraph there is refused, naming the field.
TEST_F(TrainerRunTest, ACpuCapabilityThatCannotNameAPlatformIsBadInput) {
  for (const char* bad : {"AVX2/../../etc", "AVXAVXAVXAVXAVXAVXAVXAVXAVXAVXAVX2"}) {
    ::setenv("FAKE_CAPABILITY", bad, 1);
    SCOPED_TRACE(bad);
    expect_error(config(), ExitCode::kBadInput,
                 "lockstep-trainer.json: fingerprint.python.torch.cpu_capability.value: "
                 "expected what torch.backends.cpu.get_cpu_capability() returns");
  }
  ::setenv("FAKE_CAPABILITY", "NO AVX", 1);
  RunRecord rec = run_trainer(plan_of(config()), work()).record;
  EXPECT_EQ(rec.platform, "cpu-" + rec.fingerprint.at("cpu.arch").value + "-default");
}

TEST_F(TrainerRunTest, ATrainerThatStopsEarlyIsBadInput) {
  SmokeConfig c = config();
  c.trainer.command = {"./trainer.sh", "--stop-after", "4"};
  expect_error(c, ExitCode::kBadInput, "values up to step 5 (logged every 1), the last is step 3");
}

TEST_F(TrainerRunTest, StopAndResumeGiveTheUninterruptedRecord) {
  SmokeConfig c = config(R"(, "resume": {"stop": ["--stop-after", "{resume_at}", "--checkpoint", "{checkpoint}"],
                                         "continue": ["--resume", "{checkpoint}"]})",
                         R"("resume_at": 4,)");
  RunRecord straight = run_trainer(plan_of(c), work()).record;
  RunPlan stop = plan_of(c);
  stop.request.stop_after = 4;
  stop.request.checkpoint = (dir_ / "at-4.ckpt").string();
  EXPECT_TRUE(run_trainer(stop, (dir_ / "stop").string()).stopped_at_checkpoint);
  EXPECT_EQ(read(dir_ / "at-4.ckpt"), "4\n");
  RunPlan resume = plan_of(c);
  resume.request.resume = stop.request.checkpoint;
  RunRecord resumed = run_trainer(resume, (dir_ / "resume").string()).record;
  EXPECT_EQ(resumed.series.at("loss").values, straight.series.at("loss").values);
  EXPECT_TRUE(resumed.series.at("loss").steps.empty());
  ASSERT_EQ(resumed.train_probes.size(), 6u);
  EXPECT_EQ(resumed.train_probes[4].batch, 4);
  EXPECT_EQ(first_bit_difference(resumed, straight), "");
}

TEST_F(TrainerRunTest, CommandNotFoundIsBadInput) {
  SmokeConfig c = config();
  c.trainer.command = {"./no-such-train.py"};
  expect_error(c, ExitCode::kBadInput, "./no-such-train.py: no such file");
}

// A Python trainer's script is looked for before anything runs: a
// mistyped name is the config's error, not a trainer exiting with 2.
TEST_F(TrainerRunTest, AMissingPythonScriptIsBadInputNamingTheField) {
  SmokeConfig c = config();
  c.trainer.command = {"python3", "-u", "-W", "ignore", "trian.py", "--steps", "{steps}"};
  expect_error(c, ExitCode::kBadInput,
               (dir_ / "fake.json").string() + ": trainer.command[4]: expected the Python script the trainer runs, got "
               "\"trian.py\" = " + (dir_ / "trian.py").string() + ", which does not exist (trainer.cwd is " +
                   dir_.string() + ")");
  c.trainer.command = {"python3", "{config_dir}/nope.py"};
  expect_error(c, ExitCode::kBadInput, ": trainer.command[1]: expected the Python script the trainer runs, got "
               "\"{config_dir}/nope.py\" = " + (dir_ / "nope.py").string() + ", which does not exist");
  // -m and -c run no file: nothing is looked for, the trainer runs (and
  // here writes no report).
  c.trainer.command = {"python3", "-c", "pass", "trian.py"};
  expect_error(c, ExitCode::kBadInput, "lockstep-trainer.json");
}

TEST_F(TrainerRunTest, OutputsMustStayInsideTheProcesssFolder) {
  SmokeConfig c = config();
  c.trainer.metrics_path = "{out}/../../stale.jsonl";
  expect_error(c, ExitCode::kBadInput, "trainer.metrics.path: expected a path inside {out}");
}

TEST_F(TrainerRunTest, OneProbePerStepTrained) {
  SmokeConfig c = config();
  // Three of the six batches probed: the others would go unchecked.
  c.trainer.command = {"sh", "-c", "./trainer.sh \"$@\"; head -n 3 \"$LOCKSTEP_OUT/probes.jsonl\" > \"$LOCKSTEP_OUT/p\" && mv \"$LOCKSTEP_OUT/p\" \"$LOCKSTEP_OUT/probes.jsonl\"", "sh"};
  c.trainer.data_only.clear();
  expect_error(c, ExitCode::kBadInput, "expected one probe per step trained (6), got 3");
}

// trace.ops asked and a trace without op entries or the helper's reason
// for none: a note says how to record them (the helper of another lockstep,
// or ModuleTracer without ops=True); with the reason, no note.
TEST_F(TrainerRunTest, ATraceWithoutOpEntriesUnderTraceOpsIsNamedInANote) {
  SmokeConfig c = config("", R"("trace": {"steps": 1, "ops": true},)");
  ModuleTrace t;
  t.steps = 1;
  ModuleTraceEntry e;
  e.phase = TracePhase::kForward;
  e.module = "fc";
  e.input_xxh3 = std::string(32, 'a');
  e.output.shape = {2};
  e.output.dtype = "float32";
  e.output.xxh3_128 = std::string(32, 'b');
  t.entries = {e};
  const std::string entry = to_json(t)["entries"][0].dump();
  ::setenv("FAKE_TRACE", entry.c_str(), 1);
  TrainerRun r = run_trainer(plan_of(c), work());
  EXPECT_EQ(r.record.module_trace.entries.size(), 1u);
  const std::string trace_file = (dir_ / "work" / "train" / "module_trace.jsonl").string();
  const std::string note = trace_file + " holds no op entry although trace.ops is true: the helper records them "
                           "with ModuleTracer(..., ops=True) or LOCKSTEP_TRACE_OPS=1 (python/lockstep of this lockstep)";
  EXPECT_NE(std::find(r.notes.begin(), r.notes.end(), note), r.notes.end()) << ::testing::PrintToString(r.notes);
  ::setenv("FAKE_TRACE", (entry + "\n{\"ops_not_traced\": \"torch 1.13.1 has no DebugMode\"}").c_str(), 1);
  r = run_trainer(plan_of(c), work());
  EXPECT_EQ(r.record.module_trace.ops_not_traced, "torch 1.13.1 has no DebugMode");
  for (const std::string& n : r.notes) EXPECT_EQ(n.find("holds no op entry"), std::string::npos) << n;
}

TEST(ExpandPlaceholders, ReplacesKnownNamesOnly) {
  EXPECT_EQ(expand_placeholders("{out}/tb-{seed}/{other}", {{"out", "/o"}, {"seed", "7"}}), "/o/tb-7/{other}");
  EXPECT_EQ(expand_placeholders("{", {}), "{");
}

}  // namespace
}  // namespace lockstep
