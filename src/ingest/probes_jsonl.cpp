#include "ingest/probes_jsonl.h"

#include "core/error.h"
#include "core/json_io.h"
#include "ingest/line_reader.h"
#include "ingest/series_builder.h"

namespace lockstep {

std::vector<BatchProbe> read_probes_jsonl(const std::string& path, int64_t first_batch) {
  LineReader lines(path);
  std::vector<BatchProbe> probes;
  std::string_view line;
  while (lines.next(line)) {
    if (is_blank_line(line)) continue;
    // "<file>: line N" stands for the file in every message below, so the
    // record's own errors ("inputs.std: expected a number") name the line.
    std::string where = path + ": line " + std::to_string(lines.line_number());
    nlohmann::json doc = parse_json_text(std::string(line), where);
    BatchProbe probe = batch_probe_from_json(JsonView(doc, where));
    int64_t expected = first_batch + static_cast<int64_t>(probes.size());
    if (probe.batch != expected)
      throw BadInput(where, "batch",
                     "batch " + std::to_string(expected) + " (batches are numbered " + std::to_string(first_batch) +
                         ", " + std::to_string(first_batch + 1) + ", " + std::to_string(first_batch + 2) +
                         ", ... in order), got " + std::to_string(probe.batch));
    if (probes.size() >= kMaxSeriesValues)
      throw BadInput(where, "", "at most " + std::to_string(kMaxSeriesValues) + " probes");
    probes.push_back(std::move(probe));
  }
  if (probes.empty()) throw BadInput(path, "", "at least one batch probe (the file holds only blank lines)");
  return probes;
}

}  // namespace lockstep
