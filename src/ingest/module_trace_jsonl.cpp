#include "ingest/module_trace_jsonl.h"

#include <filesystem>
#include <map>
#include <utility>

#include "core/error.h"
#include "core/json_io.h"
#include "ingest/line_reader.h"

namespace lockstep {

ModuleTrace read_module_trace_jsonl(const std::string& path, int64_t steps, int64_t first_step) {
  ModuleTrace trace;
  trace.steps = steps;
  std::error_code ec;
  if (std::filesystem::file_size(path, ec) == 0 && !ec) return trace;  // nothing traced in this process
  LineReader lines(path);
  std::map<std::pair<int64_t, TracePhase>, int64_t> per_pass;
  std::string_view line;
  while (lines.next(line)) {
    if (is_blank_line(line)) continue;
    std::string where = path + ": line " + std::to_string(lines.line_number());
    nlohmann::json doc = parse_json_text(std::string(line), where);
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
