#include "ingest/module_trace_jsonl.h"

#include <filesystem>
#include <map>
#include <utility>

#include "core/error.h"
#include "core/json_io.h"
#include "ingest/line_reader.h"

namespace lockstep {

namespace {

// One line of the helper's per-op trace: an op entry, the count of a
// step's entries left out ({"step", "ops_dropped"}), or why none were
// recorded ({"ops_not_traced": "..."}). Entries past kMaxTraceOpsPerStep
// are counted, as the helper counts them.
void read_op_line(const JsonView& v, const std::string& where, int64_t steps, int64_t first_step, ModuleTrace& t,
                  std::map<int64_t, int64_t>& per_step) {
  if (v.has("rank")) v.at("rank").as_int(0, 1023);
  if (v.has("ops_not_traced")) {
    v.allow_keys({"ops_not_traced", "rank"});
    t.ops_not_traced = v.at("ops_not_traced").as_string();
    if (t.ops_not_traced.empty()) v.at("ops_not_traced").fail("a reason");
    if (!t.ops.empty())
      v.at("ops_not_traced").fail("no reason for missing ops after op entries (ops are either recorded or not)");
    return;
  }
  if (v.has("ops_dropped")) {
    v.allow_keys({"step", "ops_dropped", "rank"});
    int64_t step = v.at("step").as_int(0, kMaxTraceSteps - 1);
    if (step < first_step || step >= steps)
      throw BadInput(where, "step", "a traced step in [" + std::to_string(first_step) + ", " + std::to_string(steps) +
                                        "), got " + std::to_string(step));
    t.ops_dropped += v.at("ops_dropped").as_int(0, kMaxTraceOpsPerStep * 1000);
    return;
  }
  if (!t.ops_not_traced.empty())
    throw BadInput(where, "op", "no op entry after a line saying none are recorded (\"" +
                                    input_excerpt(t.ops_not_traced) + "\")");
  OpTraceEntry o = op_trace_entry_from_json(v);
  if (o.step < first_step || o.step >= steps)
    throw BadInput(where, "step", "a traced step in [" + std::to_string(first_step) + ", " + std::to_string(steps) +
                                      ") (trace.steps is " + std::to_string(steps) + "), got " + std::to_string(o.step));
  if (!t.ops.empty() && o.step < t.ops.back().step)
    throw BadInput(where, "step", "op entries in execution order (step " + std::to_string(t.ops.back().step) +
                                      " came before), got step " + std::to_string(o.step));
  if (++per_step[o.step] > kMaxTraceOpsPerStep) {
    ++t.ops_dropped;
    return;
  }
  t.ops.push_back(std::move(o));
}

}  // namespace

ModuleTrace read_module_trace_jsonl(const std::string& path, int64_t steps, int64_t first_step) {
  ModuleTrace trace;
  trace.steps = steps;
  std::error_code ec;
  if (std::filesystem::file_size(path, ec) == 0 && !ec) return trace;  // nothing traced in this process
  LineReader lines(path);
  std::map<std::pair<int64_t, TracePhase>, int64_t> per_pass;
  std::map<int64_t, int64_t> ops_per_step;
  std::string_view line;
  while (lines.next(line)) {
    if (is_blank_line(line)) continue;
    std::string where = path + ": line " + std::to_string(lines.line_number());
    nlohmann::json doc = parse_json_text(std::string(line), where);
    // The helper's per-op lines (trace.ops) share the file.
    if (doc.is_object() && (doc.contains("op") || doc.contains("ops_dropped") || doc.contains("ops_not_traced"))) {
      read_op_line(JsonView(doc, where), where, steps, first_step, trace, ops_per_step);
      continue;
    }
    ModuleTraceEntry e = module_trace_entry_from_json(JsonView(doc, where));
    if (e.step < first_step || e.step >= steps)
      throw BadInput(where, "step",
                     "a traced step in [" + std::to_string(first_step) + ", " + std::to_string(steps) +
                         ") (trace.steps is " + std::to_string(steps) + "; the helper reads LOCKSTEP_TRACE_STEPS), got " +
                         std::to_string(e.step));
    if (!trace.entries.empty() && e.step < trace.entries.back().step)
      throw BadInput(where, "step", "entries in execution order (step " + std::to_string(trace.entries.back().step) +
                                        " came before), got step " + std::to_string(e.step));
    if (++per_pass[{e.step, e.phase}] > kMaxTraceEntriesPerPass) {
      ++trace.dropped;  // the size cap, as the built-in tracer applies it
      continue;
    }
    trace.entries.push_back(std::move(e));
  }
  return trace;
}

}  // namespace lockstep
