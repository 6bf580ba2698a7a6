#include "ingest/jsonl.h"

#include <utility>
#include <vector>

#include "core/error.h"
#include "ingest/json_line.h"
#include "ingest/line_reader.h"
#include "ingest/series_builder.h"

namespace lockstep {

std::map<std::string, Series> read_jsonl_metrics(const MetricsSpec& spec) {
  IngestSources sources("line");
  uint32_t file = sources.add(spec.path);
  SeriesSet set(spec.series, "key", sources);
  set.begin_file(file);
  LineReader lines(spec.path);
  JsonLineParser parser;
  std::vector<std::pair<size_t, simdjson::dom::element>> found;
  std::string_view line;
  while (lines.next(line)) {
    if (is_blank_line(line)) continue;
    uint64_t n = lines.line_number();
    if (n == kExtrapolateAfterLines) set.extrapolate(lines.offset(), lines.file_bytes());
    simdjson::dom::object obj = parser.parse_object(line, spec.path, n);
    found.clear();
    bool have_step = false;
    int64_t step = 0;
    for (simdjson::dom::key_value_pair kv : obj) {
      if (kv.key == spec.step_key) {
        if (!json_step(kv.value, step))
          throw BadInput(spec.path, "line " + std::to_string(n) + ": key '" + spec.step_key + "'",
                         std::string("a non-negative integer step, got ") + json_type_name(kv.value) +
                             (kv.value.is_number() ? " that is not one" : ""));
        have_step = true;
      } else if (int i = set.find(kv.key); i >= 0) {
        found.emplace_back(static_cast<size_t>(i), kv.value);
      } else {
        set.note_unrequested(kv.key);
      }
    }
    if (found.empty()) continue;
    if (!have_step)
      throw BadInput(spec.path, "line " + std::to_string(n),
                     "the step key '" + spec.step_key + "' on a line that logs '" + set.key(found[0].first) + "'");
    for (const auto& [i, value] : found) {
      double v;
      if (!json_number(value, v))
        throw BadInput(spec.path, "line " + std::to_string(n) + ": key '" + set.key(i) + "'",
                       std::string("a number (or NaN, Infinity, -Infinity, \"nan\", \"inf\", \"-inf\"), got ") +
                           json_type_name(value));
      set.at(i).add(step, v, Series::Dtype::kFloat64, n);
    }
  }
  return set.finish(spec.path, "in the log");
}

}  // namespace lockstep
