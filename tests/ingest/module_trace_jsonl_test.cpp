#include "ingest/module_trace_jsonl.h"

#include <gtest/gtest.h>

#include <string>

#include "ingest/ingest_test_util.h"

namespace lockstep {
namespace {

std::string line(int64_t step, const char* phase, const char* module) {
  ModuleTraceEntry e;
  e.step = step;
  e.phase = std::string(phase) == "forward" ? TracePhase::kForward : TracePhase::kBackward;
  e.module = module;
  e.input_xxh3 = std::string(32, 'a');
  e.output.shape = {2, 3};
  e.output.dtype = "float32";
  e.output.xxh3_128 = std::string(32, 'b');
  e.output.mean = 0.5;
  ModuleTrace t;
  t.steps = 16;
  t.entries = {e};
  return to_json(t)["entries"][0].dump() + "\n";
}

class ModuleTraceJsonl : public ::testing::Test {
 protected:
  IngestTempDir dir_{"module-trace"};
  std::string file_ = dir_.path("module_trace.jsonl");
  std::string error(const std::string& text, int64_t steps = 2, int64_t first = 0) {
    write_bytes(file_, text);
    return exit2_message([&] { read_module_trace_jsonl(file_, steps, first); });
  }
};

TEST_F(ModuleTraceJsonl, ReadsEntriesInOrderAndAnEmptyFileIsAnEmptyTrace) {
  write_bytes(file_, line(0, "forward", "conv1") + "\n" + line(0, "backward", "fc") + line(1, "forward", "conv1"));
  ModuleTrace t = read_module_trace_jsonl(file_, 2);
  EXPECT_EQ(t.steps, 2);
  ASSERT_EQ(t.entries.size(), 3u);
  EXPECT_EQ(t.entries[1].module, "fc");
  EXPECT_EQ(t.entries[1].phase, TracePhase::kBackward);
  EXPECT_EQ(t.entries[2].output.mean, 0.5);
  write_bytes(file_, "");
  EXPECT_TRUE(read_module_trace_jsonl(file_, 2, 5).entries.empty());  // a run resumed past the traced steps
}

TEST_F(ModuleTraceJsonl, BadLinesNameTheFileLineAndField) {
  EXPECT_EQ(error(line(0, "forward", "a") + line(2, "forward", "a")),
            file_ + ": line 2: step: expected a traced step in [0, 2) (trace.steps is 2; the helper reads "
                    "LOCKSTEP_TRACE_STEPS), got 2");
  EXPECT_EQ(error(line(1, "forward", "a") + line(0, "forward", "a")),
            file_ + ": line 2: step: expected entries in execution order (step 1 came before), got step 0");
  EXPECT_EQ(error(line(0, "forward", "a"), 2, 1),
            file_ + ": line 1: step: expected a traced step in [1, 2) (trace.steps is 2; the helper reads "
                    "LOCKSTEP_TRACE_STEPS), got 0");
  std::string bad = line(0, "forward", "a");
  bad.replace(bad.find("\"forward\""), 9, "\"sideways\"");
  EXPECT_NE(error(bad).find(file_ + ": line 1: phase: expected one of"), std::string::npos) << error(bad);
  EXPECT_NE(error("{\"step\": 0,\n").find(file_ + ": line 1: "), std::string::npos);
}

TEST_F(ModuleTraceJsonl, EntriesBeyondTheCapPerStepAndPhaseAreCountedNotKept) {
  std::string text;
  for (int i = 0; i < kMaxTraceEntriesPerPass + 3; ++i) text += line(0, "forward", "m");
  text += line(0, "backward", "m");
  write_bytes(file_, text);
  ModuleTrace t = read_module_trace_jsonl(file_, 2);
  EXPECT_EQ(t.entries.size(), static_cast<size_t>(kMaxTraceEntriesPerPass) + 1);
  EXPECT_EQ(t.dropped, 3);
  EXPECT_EQ(t.entries.back().phase, TracePhase::kBackward);
}

// The helper's per-op lines (trace.ops) share the file: op entries, a
// step's count left out, or why none were recorded.
TEST_F(ModuleTraceJsonl, OpLinesGoToTheOpsWithTheSameStepRules) {
  std::string op0 = R"({"module":"fc","op":"aten.addmm.default","output_xxh3":")" + std::string(32, 'c') +
                    R"(","phase":"forward","step":0})" "\n";
  std::string op1 = R"({"module":"","op":"aten.mm.default","output_xxh3":")" + std::string(32, 'd') +
                    R"(","phase":"backward","step":1})" "\n";
  write_bytes(file_, line(0, "forward", "fc") + op0 + R"({"ops_dropped":7,"step":0})" "\n" + op1);
  ModuleTrace t = read_module_trace_jsonl(file_, 2);
  ASSERT_EQ(t.entries.size(), 1u);
  ASSERT_EQ(t.ops.size(), 2u);
  EXPECT_EQ(t.ops[0].op, "aten.addmm.default");
  EXPECT_EQ(t.ops[1].phase, "backward");
  EXPECT_EQ(t.ops_dropped, 7);
  write_bytes(file_, R"({"ops_not_traced":"torch 2.6.0 has no DebugMode"})" "\n" + line(0, "forward", "fc"));
  EXPECT_EQ(read_module_trace_jsonl(file_, 2).ops_not_traced, "torch 2.6.0 has no DebugMode");
  EXPECT_EQ(error(op1 + op0), file_ + ": line 2: step: expected op entries in execution order (step 1 came before), "
                                      "got step 0");
  EXPECT_EQ(error(op0, 2, 1), file_ + ": line 1: step: expected a traced step in [1, 2) (trace.steps is 2), got 0");
  std::string bad = op0;
  bad.replace(bad.find("\"forward\""), 9, "\"sideways\"");
  EXPECT_NE(error(bad).find(file_ + ": line 1: phase: expected one of"), std::string::npos) << error(bad);
  // Ops and a reason for none in one file, or an unchecked field of a
  // count or reason line, are refused.
  EXPECT_EQ(error(op0 + R"({"ops_not_traced":"no DebugMode"})" "\n"),
            file_ + ": line 2: ops_not_traced: expected no reason for missing ops after op entries (ops are either "
                    "recorded or not)");
  EXPECT_EQ(error(R"({"ops_not_traced":"no DebugMode"})" "\n" + op0),
            file_ + ": line 2: op: expected no op entry after a line saying none are recorded (\"no DebugMode\")");
  EXPECT_NE(error(R"({"step":"zz","ops_dropped":3})" "\n").find(file_ + ": line 1: step: expected"), std::string::npos);
  EXPECT_EQ(error(R"({"step":3,"ops_dropped":3})" "\n"),
            file_ + ": line 1: step: expected a traced step in [0, 2), got 3");
  EXPECT_NE(error(R"({"ops_not_traced":"x","rank":[1]})" "\n").find(file_ + ": line 1: rank: expected"),
            std::string::npos);
  // Past the cap a step's ops are counted, as the helper counts them.
  std::string many;
  for (int i = 0; i < kMaxTraceOpsPerStep + 2; ++i) many += op0;
  write_bytes(file_, many);
  t = read_module_trace_jsonl(file_, 2);
  EXPECT_EQ(t.ops.size(), static_cast<size_t>(kMaxTraceOpsPerStep));
  EXPECT_EQ(t.ops_dropped, 2);
}

}  // namespace
}  // namespace lockstep
