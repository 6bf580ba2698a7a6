#include "ingest/mllog.h"

#include "core/error.h"
#include "ingest/json_line.h"
#include "ingest/line_reader.h"
#include "ingest/series_builder.h"

namespace lockstep {

namespace {
constexpr std::string_view kMarker = ":::MLLOG";
}

std::map<std::string, Series> read_mllog_metrics(const MetricsSpec& spec) {
  IngestSources sources("line");
  uint32_t file = sources.add(spec.path);
  SeriesSet set(spec.series, "key", sources);
  set.begin_file(file);
  LineReader lines(spec.path);
  JsonLineParser parser;
  bool any_mllog = false;
  std::string_view line;
  while (lines.next(line)) {
    size_t at = line.find(kMarker);
    if (at == line.npos) continue;
    any_mllog = true;
    uint64_t n = lines.line_number();
    std::string where = "line " + std::to_string(n);
    simdjson::dom::object obj = parser.parse_object(line.substr(at + kMarker.size()), spec.path, n);
    simdjson::dom::element key_node;
    std::string_view key;
    if (obj["key"].get(key_node) != simdjson::SUCCESS || key_node.get_string().get(key) != simdjson::SUCCESS)
      throw BadInput(spec.path, where, "an MLLOG record with a string \"key\"");
    int i = set.find(key);
    if (i < 0) {
      set.note_unrequested(key);
      continue;
    }
    where += ": key '" + std::string(key) + "'";
    simdjson::dom::element value;
    double v;
    if (obj["value"].get(value) != simdjson::SUCCESS)
      throw BadInput(spec.path, where, "a \"value\" (missing)");
    if (!json_number(value, v))
      throw BadInput(spec.path, where,
                     std::string("a number \"value\" (or NaN, Infinity, -Infinity, \"nan\", \"inf\", \"-inf\"), got ") +
                         json_type_name(value));
    simdjson::dom::element metadata, step_node;
    if (obj["metadata"].get(metadata) != simdjson::SUCCESS || !metadata.is_object())
      throw BadInput(spec.path, where, "a \"metadata\" object holding the step \"" + spec.mllog_step + "\"");
    if (metadata[spec.mllog_step].get(step_node) != simdjson::SUCCESS)
      throw BadInput(spec.path, where, "metadata." + spec.mllog_step + ", the step (missing)");
    int64_t step;
    if (!json_step(step_node, step))
      throw BadInput(spec.path, where,
                     "metadata." + spec.mllog_step + ", a non-negative integer step, got " + json_type_name(step_node));
    set.at(static_cast<size_t>(i)).add(step, v, Series::Dtype::kFloat64, n);
  }
  if (!any_mllog) throw BadInput(spec.path, "", "MLPerf log lines (\":::MLLOG {...}\"); the file has none");
  return set.finish(spec.path, "in the log's :::MLLOG lines");
}

}  // namespace lockstep
