#include "record/module_trace.h"

#include <gtest/gtest.h>

#include "core/error.h"
#include "core/json_io.h"

namespace lockstep {
namespace {

nlohmann::json entry(int step, const char* phase, const char* module) {
  return {{"step", step},
          {"phase", phase},
          {"module", module},
          {"input_xxh3", std::string(32, 'a')},
          {"output",
           {{"shape", {2, 3}}, {"dtype", "float32"}, {"xxh3_128", std::string(32, 'b')}, {"sum", 1.5}, {"mean", 0.25},
            {"std", 0.5}, {"min", -1}, {"max", 1}, {"nan_count", 0}, {"inf_count", 0}}}};
}

std::string error_of(const nlohmann::json& j) {
  try {
    module_trace_from_json(JsonView(j, "run.json", "module_trace"));
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kBadInput);
    return e.what();
  }
  return "";
}

TEST(ModuleTrace, RoundTripsThroughJson) {
  nlohmann::json j = {{"steps", 2}, {"entries", {entry(0, "forward", "conv"), entry(0, "backward", "fc"), entry(1, "forward", "conv")}}};
  ModuleTrace t = module_trace_from_json(JsonView(j, "run.json", "module_trace"));
  ASSERT_EQ(t.entries.size(), 3u);
  EXPECT_EQ(t.entries[1].phase, TracePhase::kBackward);
  EXPECT_EQ(t.entries[1].module, "fc");
  EXPECT_EQ(t.entries[2].output.mean, 0.25);
  EXPECT_EQ(to_json(t), j);
}

TEST(ModuleTrace, BadInputNamesTheField) {
  auto with = [](nlohmann::json e) { return nlohmann::json{{"steps", 2}, {"entries", {e}}}; };
  nlohmann::json e = entry(0, "sideways", "conv");
  EXPECT_NE(error_of(with(e)).find("module_trace.entries[0].phase"), std::string::npos) << error_of(with(e));
  e = entry(2, "forward", "conv");
  EXPECT_NE(error_of(with(e)).find("module_trace.entries[0].step: expected a step below module_trace.steps (2), got 2"),
            std::string::npos)
      << error_of(with(e));
  e = entry(0, "forward", "conv");
  e["input_xxh3"] = "xyz";
  EXPECT_NE(error_of(with(e)).find("module_trace.entries[0].input_xxh3"), std::string::npos);
  e = entry(0, "forward", "");
  EXPECT_NE(error_of(with(e)).find("module_trace.entries[0].module"), std::string::npos);
  nlohmann::json out_of_order = {{"steps", 2}, {"entries", {entry(1, "forward", "a"), entry(0, "forward", "a")}}};
  EXPECT_NE(error_of(out_of_order).find("entries in execution order"), std::string::npos);
  EXPECT_NE(error_of({{"steps", 99}, {"entries", nlohmann::json::array()}}).find("module_trace.steps"), std::string::npos);
  EXPECT_NE(error_of({{"steps", 1}, {"entries", {}}, {"extra", 1}}).find("extra"), std::string::npos);
}

TEST(ModuleTrace, TheSizeCapIsEnforcedOnRead) {
  nlohmann::json j = {{"steps", 1}, {"entries", nlohmann::json::array()}};
  for (int i = 0; i < 2 * kMaxTraceEntriesPerPass + 1; ++i) j["entries"].push_back(entry(0, "forward", "m"));
  EXPECT_NE(error_of(j).find("at most 512 entries per traced step (1 steps), got 513"), std::string::npos) << error_of(j);
}

nlohmann::json op(int step, const char* phase, const char* module, const char* name) {
  return {{"step", step}, {"phase", phase}, {"module", module}, {"op", name}, {"output_xxh3", std::string(32, 'c')}};
}

TEST(ModuleTrace, OpEntriesRoundTripAndAreHeldToTheirShape) {
  nlohmann::json j = {{"steps", 1},
                      {"entries", {entry(0, "forward", "fc")}},
                      {"ops", {op(0, "forward", "fc", "aten.addmm.default"), op(0, "backward", "", "aten.mm.default"),
                               op(0, "optimizer", "", "aten.add_.Tensor")}},
                      {"ops_dropped", 3}};
  ModuleTrace t = module_trace_from_json(JsonView(j, "run.json", "module_trace"));
  ASSERT_EQ(t.ops.size(), 3u);
  EXPECT_EQ(t.ops[2].phase, "optimizer");
  EXPECT_EQ(t.ops[0].module, "fc");
  EXPECT_EQ(t.ops_dropped, 3);
  EXPECT_EQ(to_json(t), j);
  auto with_op = [&](nlohmann::json o) {
    nlohmann::json k = j;
    k["ops"] = nlohmann::json::array({o});  // not {o}: clang reads that as a copy of o
    return error_of(k);
  };
  nlohmann::json o = op(0, "sideways", "", "aten.mm.default");
  EXPECT_NE(with_op(o).find("module_trace.ops[0].phase: expected one of"), std::string::npos) << with_op(o);
  o = op(0, "forward", "", "");
  EXPECT_NE(with_op(o).find("module_trace.ops[0].op: expected an op name of 1 to 256 characters"), std::string::npos);
  o = op(1, "forward", "", "aten.mm.default");
  EXPECT_NE(with_op(o).find("module_trace.ops[0].step: expected a step below module_trace.steps (1), got 1"),
            std::string::npos)
      << with_op(o);
  o = op(0, "forward", "", "aten.mm.default");
  o["output_xxh3"] = "12";
  EXPECT_NE(with_op(o).find("module_trace.ops[0].output_xxh3: expected 32 lowercase hex digits"), std::string::npos);
  nlohmann::json both = j;
  both["ops_not_traced"] = "torch 2.6.0 has no DebugMode";
  EXPECT_NE(error_of(both).find("module_trace.ops_not_traced: expected a reason, and only without op entries"),
            std::string::npos)
      << error_of(both);
  nlohmann::json many = {{"steps", 1}, {"entries", nlohmann::json::array()}, {"ops", nlohmann::json::array()}};
  for (int i = 0; i <= kMaxTraceOpsPerStep; ++i) many["ops"].push_back(op(0, "forward", "", "aten.mm.default"));
  EXPECT_NE(error_of(many).find("at most 4096 op entries per traced step (1 steps), got 4097"), std::string::npos);
}

}  // namespace
}  // namespace lockstep
