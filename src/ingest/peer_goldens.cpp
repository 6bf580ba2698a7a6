#include "ingest/peer_goldens.h"

#include <cerrno>
#include <cmath>
#include <set>
#include <cstdlib>
#include <string_view>

#include "core/error.h"
#include "core/json_io.h"
#include "ingest/line_reader.h"
#include "ingest/series_builder.h"

namespace lockstep {

namespace {

// A decimal step ("12"), or false.
bool decimal_step(std::string_view text, int64_t& step) {
  if (text.empty() || text.size() > 18 || text.find_first_not_of("0123456789") != std::string_view::npos) return false;
  step = std::stoll(std::string(text));
  return true;
}

// A float as Python's repr writes it ("2.3012", "1e-05", "nan", "inf"), or false.
bool float_repr(std::string_view text, double& value) {
  if (text.empty() || text.size() > 64) return false;
  std::string s(text);
  if (s == "nan" || s == "NaN") return value = NAN, true;
  if (s == "inf" || s == "Infinity") return value = INFINITY, true;
  if (s == "-inf" || s == "-Infinity") return value = -INFINITY, true;
  if (s.find_first_not_of("0123456789+-.eE") != std::string::npos) return false;
  char* end = nullptr;
  errno = 0;
  value = std::strtod(s.c_str(), &end);
  return end == s.c_str() + s.size() && errno != ERANGE;
}

// A JSON value as a metric value: a number, or "nan"/"inf"/"-inf".
bool json_value(const nlohmann::json& v, double& out) {
  if (v.is_number()) return out = v.get<double>(), true;
  if (v.is_string()) {
    const std::string& s = v.get_ref<const std::string&>();
    return (s == "nan" || s == "NaN" || s == "inf" || s == "-inf") && float_repr(s, out);
  }
  return false;
}

}  // namespace

std::map<std::string, Series> read_megatron_metrics(const MetricsSpec& spec) {
  nlohmann::json doc = parse_json_file(spec.path);
  JsonView root(doc, spec.path);
  root.expect_object();
  IngestSources sources("value");
  uint32_t file = sources.add(spec.path);
  SeriesSet set(spec.series, "metric", sources);
  set.begin_file(file);
  std::set<std::string> full;  // metrics whose block says "value_precision": "full"
  for (const auto& name : root.keys()) {
    int i = set.find(name);
    if (i < 0) {
      set.note_unrequested(name);
      continue;
    }
    JsonView m = root.at(name);
    m.expect_object();
    m.allow_keys({"start_step", "end_step", "step_interval", "values", "value_precision"});
    int64_t start = m.has("start_step") ? m.at("start_step").as_int(0, int64_t{1} << 52) : 0;
    int64_t end = m.has("end_step") ? m.at("end_step").as_int(0, int64_t{1} << 52) : -1;
    int64_t interval = m.has("step_interval") ? m.at("step_interval").as_int(1, int64_t{1} << 40) : 1;
    if (end >= 0 && end < start) m.at("end_step").fail("a step at or after start_step " + std::to_string(start));
    if (m.has("value_precision") && m.at("value_precision").as_enum({"full", "rounded"}) == "full") full.insert(name);
    JsonView values = m.at("values");
    uint64_t n = 0;
    auto add = [&](int64_t step, const JsonView& v, const nlohmann::json& raw) {
      double x;
      if (!json_value(raw, x)) v.fail("a number or \"nan\"");
      if (end >= 0 && step > end) v.fail("a step at most end_step " + std::to_string(end));
      if (step < start) v.fail("a step at least start_step " + std::to_string(start));
      set.at(static_cast<size_t>(i)).add(step, x, Series::Dtype::kFloat64, ++n);
    };
    const nlohmann::json& raw = doc[name]["values"];
    if (raw.is_array()) {  // older goldens: a list from start_step by step_interval
      for (size_t k = 0; k < raw.size(); ++k) add(start + static_cast<int64_t>(k) * interval, values.at(k), raw[k]);
    } else {
      values.expect_object();
      // Steps as numbers, in order: "10" after "9", not after "1".
      std::map<int64_t, std::string> by_step;
      for (const auto& key : values.keys()) {
        int64_t step;
        if (!decimal_step(key, step)) values.at(key).fail("a value under a decimal step key, not '" + key + "'");
        if (!by_step.emplace(step, key).second)
          values.at(key).fail("one value for step " + std::to_string(step) + " (it is also '" + by_step[step] + "')");
      }
      for (const auto& [step, key] : by_step) add(step, values.at(key), raw[key]);
    }
  }
  std::map<std::string, Series> out = set.finish(spec.path, "among the file's metrics");
  // Megatron's legacy goldens hold 5 decimals unless the block says
  // "value_precision": "full": those are never marked rounded.
  for (auto& [name, s] : out)
    s.rounded = full.count(spec.series.at(name)) ? 0 : decimal_grid(s.values, s.dtype == Series::Dtype::kFloat32);
  return out;
}

std::map<std::string, Series> read_torchtitan_metrics(const MetricsSpec& spec) {
  if (spec.series.size() != 1)
    throw BadUsage("torchtitan: a loss file holds one series; give one --series NAME=TAG (the TAG is not read)");
  IngestSources sources("line");
  uint32_t file = sources.add(spec.path);
  SeriesBuilder b("the loss", sources);
  b.begin_file(file);
  LineReader lines(spec.path);
  std::string_view line;
  while (lines.next(line)) {
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    uint64_t n = lines.line_number();
    size_t a = line.find_first_not_of(" \t");
    size_t gap = line.find_first_of(" \t", a);
    size_t c = gap == std::string_view::npos ? gap : line.find_first_not_of(" \t", gap);
    size_t e = c == std::string_view::npos ? c : line.find_first_of(" \t\r", c);
    int64_t step;
    double value;
    if (c == std::string_view::npos || (e != std::string_view::npos && line.find_first_not_of(" \t\r", e) != std::string_view::npos))
      throw BadInput(spec.path, "line " + std::to_string(n), "\"<step> <loss>\" (two fields)");
    if (!decimal_step(line.substr(a, gap - a), step))
      throw BadInput(spec.path, "line " + std::to_string(n), "a decimal step first, got '" + std::string(line.substr(a, gap - a)) + "'");
    std::string_view v = line.substr(c, e == std::string_view::npos ? std::string_view::npos : e - c);
    if (!float_repr(v, value))
      throw BadInput(spec.path, "line " + std::to_string(n), "a number after the step, got '" + std::string(v) + "'");
    b.add(step, value, Series::Dtype::kFloat64, n);
  }
  if (b.size() == 0) throw BadInput(spec.path, "", "at least one \"<step> <loss>\" line");
  return {{spec.series.begin()->first, b.finish()}};
}

std::map<std::string, Series> read_hf_trainer_metrics(const MetricsSpec& spec) {
  nlohmann::json doc = parse_json_file(spec.path);
  JsonView root(doc, spec.path);
  root.expect_object();
  if (!root.has("log_history")) root.fail("a \"log_history\" list (Hugging Face Trainer's trainer_state.json)");
  JsonView history = root.at("log_history");
  history.expect_array();
  IngestSources sources("log_history entry");
  uint32_t file = sources.add(spec.path);
  SeriesSet set(spec.series, "key", sources);
  set.begin_file(file);
  const nlohmann::json& raw = doc["log_history"];
  for (size_t k = 0; k < raw.size(); ++k) {
    JsonView entry = history.at(k);
    entry.expect_object();
    bool logs = false;
    for (const auto& key : entry.keys())
      if (key != "step" && set.find(key) >= 0) logs = true;
      else if (key != "step") set.note_unrequested(key);
    if (!logs) continue;
    if (!entry.has("step")) entry.fail("a \"step\" in an entry that logs a requested key");
    int64_t step = entry.at("step").as_int(0, int64_t{1} << 52);
    for (const auto& key : entry.keys()) {
      int i = key == "step" ? -1 : set.find(key);
      if (i < 0) continue;
      double x;
      if (!json_value(raw[k][key], x)) entry.at(key).fail("a number or \"nan\"");
      set.at(static_cast<size_t>(i)).add(step, x, Series::Dtype::kFloat64, k);
    }
  }
  return set.finish(spec.path, "in log_history");
}

}  // namespace lockstep
