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
  return out;
}

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
  n.allow_keys({"steps", "entries", "dropped", "not_traced"});
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
  return t;
}

}  // namespace lockstep
