#include "record/run_record.h"

#include <cmath>

#include "core/atomic_file.h"
#include "core/json_io.h"

namespace lockstep {

nlohmann::json to_json(const InitStats& st) {
  return {{"mean", double_to_json(st.mean)}, {"std", double_to_json(st.std)}, {"xxh3_128", st.xxh3_128}};
}

InitStats init_stats_from_json(const JsonView& p) {
  p.allow_keys({"mean", "std", "xxh3_128"});
  InitStats st{p.at("mean").as_finite(-INFINITY, INFINITY), p.at("std").as_finite(0, INFINITY),
               p.at("xxh3_128").as_string()};
  if (st.xxh3_128.size() != 32 || st.xxh3_128.find_first_not_of("0123456789abcdef") != std::string::npos)
    p.at("xxh3_128").fail("32 lowercase hex digits (XXH3-128), got \"" + st.xxh3_128 + "\"");
  return st;
}

nlohmann::json to_json(const RunRecord& r) {
  nlohmann::json series = nlohmann::json::object();
  for (const auto& [name, s] : r.series) series[name] = to_json(s);
  nlohmann::json probes = nlohmann::json::array();
  for (const auto& p : r.probes) probes.push_back(to_json(p));
  nlohmann::json train_probes = nlohmann::json::array();
  for (const auto& p : r.train_probes) train_probes.push_back(to_json(p));
  nlohmann::json out = {{"schema", kRunSchema},
          {"smoke", r.smoke},
          {"config_hash", r.config_hash},
          {"seed", {{"base", r.seed}, {"overridden", r.seed_overridden}}},
          {"device", r.device},
          {"platform", r.platform},
          {"steps", r.steps},
          {"contract", r.contract},
          {"fingerprint", to_json(r.fingerprint)},
          {"series", series},
          {"hashes", r.hashes},
          {"probes", probes},
          {"train_probes", train_probes}};
  if (!r.init.empty()) {
    nlohmann::json init = nlohmann::json::object();
    for (const auto& [name, st] : r.init) init[name] = to_json(st);
    out["init"] = init;
  }
  if (!r.resources.empty()) {
    nlohmann::json times = nlohmann::json::array();
    for (double t : r.resources.step_time_s) times.push_back(double_to_json(t));
    out["resources"] = {{"step_time_s", times},
                        {"peak_rss_bytes", r.resources.peak_rss_bytes},
                        {"peak_cuda_bytes", r.resources.peak_cuda_bytes}};
  }
  return out;
}

namespace {

// Keys of a record; a golden adds its own (see golden.cpp).
void check_schema(const JsonView& node) {
  std::string schema = node.at("schema").as_string();
  if (schema != kRunSchema)
    node.at("schema").fail(std::string("\"") + kRunSchema + "\" (this lockstep reads only that), got \"" +
                           schema + "\"");
}

std::vector<BatchProbe> probes_from_json(const JsonView& arr) {
  std::vector<BatchProbe> out;
  for (size_t i = 0; i < arr.size(); ++i) {
    out.push_back(batch_probe_from_json(arr.at(i)));
    if (out.back().batch != static_cast<int64_t>(i))
      arr.at(i).at("batch").fail("batch index " + std::to_string(i) + " (probes in order, none missing)");
  }
  return out;
}

}  // namespace

RunRecord run_record_from_json(const JsonView& n) {
  n.expect_object();
  check_schema(n);
  RunRecord r;
  r.smoke = n.at("smoke").as_string();
  r.config_hash = n.at("config_hash").as_string();
  JsonView seed = n.at("seed");
  seed.allow_keys({"base", "overridden"});
  r.seed = seed.at("base").as_uint();
  r.seed_overridden = seed.at("overridden").as_bool();
  r.device = n.at("device").as_string();
  r.platform = n.at("platform").as_string();
  r.steps = n.at("steps").as_int(0);
  JsonView contract = n.at("contract");
  for (const auto& k : contract.keys()) r.contract[k] = contract.at(k).as_string();
  r.fingerprint = fingerprint_from_json(n.at("fingerprint"));
  JsonView series = n.at("series");
  for (const auto& k : series.keys()) {
    Series s = series_from_json(series.at(k));
    if (static_cast<int64_t>(s.values.size()) != r.steps)
      series.at(k).at("values").fail(std::to_string(r.steps) + " values (one per step), got " +
                                     std::to_string(s.values.size()));
    r.series[k] = std::move(s);
  }
  JsonView hashes = n.at("hashes");
  for (const auto& k : hashes.keys()) r.hashes[k] = hashes.at(k).as_string();
  if (n.has("init")) {
    JsonView init = n.at("init");
    for (const auto& k : init.keys()) r.init[k] = init_stats_from_json(init.at(k));
  }
  if (n.has("resources")) {
    JsonView res = n.at("resources");
    res.allow_keys({"step_time_s", "peak_rss_bytes", "peak_cuda_bytes"});
    JsonView t = res.at("step_time_s");
    for (size_t i = 0; i < t.size(); ++i) r.resources.step_time_s.push_back(t.at(i).as_finite(0, 1e9));
    if (static_cast<int64_t>(t.size()) != r.steps)
      t.fail(std::to_string(r.steps) + " step times (one per step), got " + std::to_string(t.size()));
    r.resources.peak_rss_bytes = res.at("peak_rss_bytes").as_int(-1);
    r.resources.peak_cuda_bytes = res.at("peak_cuda_bytes").as_int(-1);
  }
  r.probes = probes_from_json(n.at("probes"));
  r.train_probes = probes_from_json(n.at("train_probes"));
  return r;
}

const std::vector<std::string_view>& run_record_keys() {
  static const std::vector<std::string_view> keys = {
      "schema", "smoke",  "config_hash", "seed",   "device", "platform",    "steps",
      "contract", "fingerprint", "series", "hashes", "init", "resources", "probes", "train_probes"};
  return keys;
}

RunRecord read_run_record(const std::string& path) {
  nlohmann::json doc = parse_json_file(path);
  JsonView view(doc, path);
  view.expect_object();
  view.allow_keys(run_record_keys());
  return run_record_from_json(view);
}

void write_run_record(const std::string& path, const RunRecord& record) {
  write_file_atomically(path, pretty_dump(to_json(record)));
}

}  // namespace lockstep
