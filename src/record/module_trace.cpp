#include "record/module_trace.h"

#include <map>
#include <utility>

#include "core/hash.h"
#include "core/error.h"
#include "core/json_io.h"

namespace lockstep {

const char* trace_phase_name(TracePhase phase) {
  return phase == TracePhase::kForward ? "forward" : "backward";
}

nlohmann::json to_json(const ModuleTrace& t) {
  nlohmann::json entries = nlohmann::json::array();
  for (const auto& e : t.entries) {
    nlohmann::json j = {{"step", e.step},
                        {"phase", trace_phase_name(e.phase)},
                        {"module", e.module},
                        {"input_xxh3", e.input_xxh3},
                        {"output", to_json(e.output)}};
    if (e.rank >= 0) j["rank"] = e.rank;
    entries.push_back(std::move(j));
  }
  nlohmann::json out = {{"steps", t.steps}, {"entries", entries}};
  if (t.dropped > 0) out["dropped"] = t.dropped;
  if (!t.not_traced.empty()) out["not_traced"] = t.not_traced;
  if (!t.ops.empty()) {
    nlohmann::json ops = nlohmann::json::array();
    for (const auto& o : t.ops) {
      nlohmann::json j = {{"step", o.step}, {"phase", o.phase}, {"module", o.module}, {"op", o.op},
                          {"output_xxh3", o.output_xxh3}};
      if (o.rank >= 0) j["rank"] = o.rank;
      ops.push_back(std::move(j));
    }
    out["ops"] = std::move(ops);
  }
  if (t.ops_dropped > 0) out["ops_dropped"] = t.ops_dropped;
  if (!t.ops_not_traced.empty()) out["ops_not_traced"] = t.ops_not_traced;
  return out;
}

bool is_op_phase(const std::string& phase) {
  return phase == "forward" || phase == "backward" || phase == "optimizer";
}

OpTraceEntry op_trace_entry_from_json(const JsonView& n) {
  n.expect_object();
  n.allow_keys({"step", "phase", "module", "op", "output_xxh3", "rank"});
  OpTraceEntry o;
  o.step = n.at("step").as_int(0, kMaxTraceSteps - 1);
  o.phase = n.at("phase").as_enum({"forward", "backward", "optimizer"});
  o.module = n.at("module").as_string();
  if (o.module.size() > 256) n.at("module").fail("a module path of at most 256 characters (\"\" outside a module)");
  o.op = n.at("op").as_string();
  if (o.op.empty() || o.op.size() > 256) n.at("op").fail("an op name of 1 to 256 characters (e.g. \"aten.addmm.default\")");
  o.output_xxh3 = n.at("output_xxh3").as_string();
  if (!is_hex_digest(o.output_xxh3, 32))
    n.at("output_xxh3").fail("32 lowercase hex digits (XXH3-128), got \"" + input_excerpt(o.output_xxh3) + "\"");
  if (n.has("rank")) o.rank = n.at("rank").as_int(0, 1023);
  return o;
}

namespace {

// The "ops" array of a trace: op entries in execution order, at most
// kMaxTraceOpsPerStep per step, each step below `steps`.
void read_ops(const JsonView& ops, int64_t steps, ModuleTrace& t) {
  ops.expect_array();
  if (static_cast<int64_t>(ops.size()) > steps * kMaxTraceOpsPerStep)
    ops.fail("at most " + std::to_string(kMaxTraceOpsPerStep) + " op entries per traced step (" +
             std::to_string(steps) + " steps), got " + std::to_string(ops.size()));
  std::map<int64_t, int64_t> per_step;
  for (size_t i = 0; i < ops.size(); ++i) {
    OpTraceEntry o = op_trace_entry_from_json(ops.at(i));
    if (o.step >= steps)
      ops.at(i).at("step").fail("a step below module_trace.steps (" + std::to_string(steps) + "), got " +
                                std::to_string(o.step));
    if (!t.ops.empty() && o.step < t.ops.back().step)
      ops.at(i).at("step").fail("op entries in execution order (step " + std::to_string(t.ops.back().step) +
                                " came before), got step " + std::to_string(o.step));
    if (++per_step[o.step] > kMaxTraceOpsPerStep)
      ops.at(i).fail("at most " + std::to_string(kMaxTraceOpsPerStep) + " op entries per step (step " +
                     std::to_string(o.step) + ")");
    t.ops.push_back(std::move(o));
  }
}

}  // namespace

ModuleTraceEntry module_trace_entry_from_json(const JsonView& n) {
  n.expect_object();
  n.allow_keys({"step", "phase", "module", "input_xxh3", "output", "rank"});
  ModuleTraceEntry e;
  e.step = n.at("step").as_int(0, kMaxTraceSteps - 1);
  e.phase = n.at("phase").as_enum({"forward", "backward"}) == "forward" ? TracePhase::kForward
                                                                        : TracePhase::kBackward;
  e.module = n.at("module").as_string();
  if (e.module.empty() || e.module.size() > 256)
    n.at("module").fail("a module path of 1 to 256 characters (e.g. \"conv\", \"encoder.layers.0\")");
  e.input_xxh3 = n.at("input_xxh3").as_string();
  if (!is_hex_digest(e.input_xxh3, 32))
    n.at("input_xxh3").fail("32 lowercase hex digits (XXH3-128), got \"" + input_excerpt(e.input_xxh3) + "\"");
  e.output = tensor_stats_from_json(n.at("output"));
  if (n.has("rank")) e.rank = n.at("rank").as_int(0, 1023);
  return e;
}

ModuleTrace module_trace_from_json(const JsonView& n) {
  n.expect_object();
  n.allow_keys({"steps", "entries", "dropped", "not_traced", "ops", "ops_dropped", "ops_not_traced"});
  ModuleTrace t;
  t.steps = n.at("steps").as_int(0, kMaxTraceSteps);
  if (n.has("dropped")) t.dropped = n.at("dropped").as_int(0);
  if (n.has("not_traced")) t.not_traced = n.at("not_traced").as_string();
  JsonView entries = n.at("entries");
  entries.expect_array();
  if (static_cast<int64_t>(entries.size()) > 2 * t.steps * kMaxTraceEntriesPerPass)
    entries.fail("at most " + std::to_string(2 * kMaxTraceEntriesPerPass) + " entries per traced step (" +
                 std::to_string(t.steps) + " steps), got " + std::to_string(entries.size()));
  if (!t.not_traced.empty() && entries.size() > 0)
    n.at("not_traced").fail("no not_traced reason beside entries (a trace is either recorded or not)");
  std::map<std::pair<int64_t, int>, int64_t> per_pass;
  int64_t last_step = 0;
  for (size_t i = 0; i < entries.size(); ++i) {
    ModuleTraceEntry e = module_trace_entry_from_json(entries.at(i));
    if (e.step >= t.steps)
      entries.at(i).at("step").fail("a step below module_trace.steps (" + std::to_string(t.steps) + "), got " +
                                    std::to_string(e.step));
    if (e.step < last_step)
      entries.at(i).at("step").fail("entries in execution order (step " + std::to_string(last_step) +
                                    " came before), got step " + std::to_string(e.step));
    last_step = e.step;
    if (++per_pass[{e.step, e.phase == TracePhase::kForward ? 0 : 1}] > kMaxTraceEntriesPerPass)
      entries.at(i).fail("at most " + std::to_string(kMaxTraceEntriesPerPass) + " entries per step and phase (step " +
                         std::to_string(e.step) + ", " + trace_phase_name(e.phase) + ")");
    t.entries.push_back(std::move(e));
  }
  if (n.has("ops")) read_ops(n.at("ops"), t.steps, t);
  if (n.has("ops_dropped")) t.ops_dropped = n.at("ops_dropped").as_int(0);
  if (n.has("ops_not_traced")) {
    t.ops_not_traced = n.at("ops_not_traced").as_string();
    if (t.ops_not_traced.empty() || !t.ops.empty())
      n.at("ops_not_traced").fail("a reason, and only without op entries (ops are either recorded or not)");
  }
  return t;
}

}  // namespace lockstep
