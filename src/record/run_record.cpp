#include "record/run_record.h"

#include <cmath>

#include <algorithm>
#include <filesystem>
#include <optional>

#include "core/hash.h"
#include "core/atomic_file.h"
#include "core/float_bits.h"
#include "core/error.h"
#include "core/json_io.h"
#include "record/platform_key.h"
#include "record/series_file.h"

namespace lockstep {

nlohmann::json to_json(const InitStats& st) {
  return {{"mean", double_to_json(st.mean)}, {"std", double_to_json(st.std)}, {"xxh3_128", st.xxh3_128}};
}

InitStats init_stats_from_json(const JsonView& p) {
  p.allow_keys({"mean", "std", "xxh3_128"});
  InitStats st{p.at("mean").as_finite(-INFINITY, INFINITY), p.at("std").as_finite(0, INFINITY),
               p.at("xxh3_128").as_string()};
  if (!is_hex_digest(st.xxh3_128, 32))
    p.at("xxh3_128").fail("32 lowercase hex digits (XXH3-128), got \"" + input_excerpt(st.xxh3_128) + "\"");
  return st;
}

nlohmann::json to_json(const RunRecord& r, SeriesPacker* packer) {
  nlohmann::json series = nlohmann::json::object();
  for (const auto& [name, s] : r.series) series[name] = to_json(s, packer);
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
  if (!r.stack.empty()) out["stack"] = r.stack;
  if (!r.config.empty()) out["config"] = r.config;
  if (!r.module_trace.empty()) out["module_trace"] = to_json(r.module_trace);
  if (!r.digests.empty()) out["digests"] = to_json(r.digests);
  if (!r.init.empty()) {
    nlohmann::json init = nlohmann::json::object();
    for (const auto& [name, st] : r.init) init[name] = to_json(st);
    out["init"] = init;
  }
  if (!r.resources.empty()) {
    nlohmann::json times = nlohmann::json::array();
    if (packer) times = packer->add(r.resources.step_time_s);
    else
      for (double t : r.resources.step_time_s) times.push_back(double_to_json(t));
    out["resources"] = {{"step_time_s", times},
                        {"peak_rss_bytes", r.resources.peak_rss_bytes},
                        {"peak_cuda_bytes", r.resources.peak_cuda_bytes}};
    if (!r.resources.runner_class.empty()) out["resources"]["runner_class"] = r.resources.runner_class;
    if (r.resources.load_per_core >= 0) out["resources"]["load_per_core"] = r.resources.load_per_core;
    if (r.resources.steal_fraction >= 0) out["resources"]["steal_fraction"] = r.resources.steal_fraction;
  }
  return out;
}

namespace {

// Keys of a record; a golden adds its own (see golden.cpp).
void check_schema(const JsonView& node) {
  std::string schema = node.at("schema").as_string();
  if (schema != kRunSchema)
    node.at("schema").fail(std::string("\"") + kRunSchema + "\" (this lockstep reads only that), got \"" +
                           input_excerpt(schema) + "\"");
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

namespace {

// The "resources" section: step times (inline or in the sidecar `b`),
// one per step of a record of `steps` steps, each in [0, 1e9] s; peaks and
// the runner's load.
Resources resources_from_json(const JsonView& res, SeriesBlob* b, TakenArrays* taken, int64_t steps) {
  Resources out;
  res.allow_keys({"step_time_s", "peak_rss_bytes", "peak_cuda_bytes", "runner_class", "load_per_core",
                  "steal_fraction"});
  if (res.has("runner_class")) out.runner_class = res.at("runner_class").as_string();
  if (res.has("load_per_core")) out.load_per_core = res.at("load_per_core").as_finite(0, 1e6);
  if (res.has("steal_fraction")) out.steal_fraction = res.at("steal_fraction").as_finite(0, 1);
  JsonView t = res.at("step_time_s");
  out.step_time_s = number_array(t, b, taken);
  for (size_t i = 0; i < out.step_time_s.size(); ++i) {
    double x = out.step_time_s[i];
    if (!(x >= 0 && x <= 1e9)) {  // NaN fails too
      fail_number(t, i, "a number in [0, 1e9] (seconds), got " + format_double(x));
    }
  }
  if (static_cast<int64_t>(out.step_time_s.size()) != steps)
    t.fail(std::to_string(steps) + " step times (one per step), got " +
           std::to_string(out.step_time_s.size()));
  out.peak_rss_bytes = res.at("peak_rss_bytes").as_int(-1);
  out.peak_cuda_bytes = res.at("peak_cuda_bytes").as_int(-1);
  return out;
}

}  // namespace

RunRecord run_record_from_json(const JsonView& n, const std::optional<std::string>& sidecar_dir,
                               TakenArrays* taken) {
  n.expect_object();
  check_schema(n);
  std::optional<SeriesBlob> blob;
  if (n.has("series_data")) {
    if (!sidecar_dir)
      n.at("series_data").fail("no sidecar: goldens, and records not read from a file, keep their series "
                               "inline (docs/record.schema.json)");
    blob = SeriesBlob::open(n.at("series_data"), *sidecar_dir);
    want_record_references(n, *blob);
    blob->read();
  }
  SeriesBlob* b = blob ? &*blob : nullptr;
  RunRecord r;
  r.smoke = n.at("smoke").as_string();
  r.config_hash = n.at("config_hash").as_string();
  JsonView seed = n.at("seed");
  seed.allow_keys({"base", "overridden"});
  r.seed = seed.at("base").as_uint();
  r.seed_overridden = seed.at("overridden").as_bool();
  r.device = n.at("device").as_string();
  r.platform = n.at("platform").as_string();
  if (n.has("stack")) {
    r.stack = n.at("stack").as_string();
    if (!is_stack_label(r.stack))
      n.at("stack").fail("a stack label (1..40 letters, digits, '.', '_' and '-', starting with a letter or digit), got \"" +
                         input_excerpt(r.stack) + "\"");
  }
  r.steps = n.at("steps").as_int(0);
  JsonView contract = n.at("contract");
  for (const auto& k : contract.keys()) r.contract[k] = contract.at(k).as_string();
  if (n.has("config")) {
    JsonView config = n.at("config");
    for (const auto& k : config.keys()) r.config[k] = config.at(k).as_string();
  }
  r.fingerprint = fingerprint_from_json(n.at("fingerprint"));
  JsonView series = n.at("series");
  for (const auto& k : series.keys()) {
    if (!is_series_name(k)) series.at(k).fail("a series name (1 to 200 printable characters, no spaces or quotes)");
    Series s = series_from_json(series.at(k), b, taken);
    if (!s.steps.empty()) {
      // Logged at some steps only (a trainer's metric every k steps): each
      // step number must be one of the run's steps.
      if (s.steps.front() < 0 || s.steps.back() >= r.steps)
        series.at(k).at("steps").fail("step numbers in [0, " + std::to_string(r.steps) + ") (the run's steps), got " +
                                      std::to_string(s.steps.front() < 0 ? s.steps.front() : s.steps.back()));
    } else if (static_cast<int64_t>(s.values.size()) != r.steps) {
      series.at(k).at("values").fail(std::to_string(r.steps) + " values (one per step), got " +
                                     std::to_string(s.values.size()));
    }
    r.series[k] = std::move(s);
  }
  JsonView hashes = n.at("hashes");
  hashes.expect_object();
  for (const auto& k : hashes.keys()) {
    if (!is_series_name(k)) hashes.at(k).fail("a hash name such as \"params\" (printable, no spaces or quotes)");
    r.hashes[k] = hashes.at(k).as_string();
    if (!is_hex_digest(r.hashes[k], 32))
      hashes.at(k).fail("an XXH3-128 digest (32 lowercase hex digits), got \"" + input_excerpt(r.hashes[k]) + "\"");
  }
  if (n.has("init")) {
    JsonView init = n.at("init");
    for (const auto& k : init.keys()) r.init[k] = init_stats_from_json(init.at(k));
  }
  if (n.has("resources")) r.resources = resources_from_json(n.at("resources"), b, taken, r.steps);
  r.probes = probes_from_json(n.at("probes"));
  r.train_probes = probes_from_json(n.at("train_probes"));
  if (n.has("module_trace")) {
    r.module_trace = module_trace_from_json(n.at("module_trace"));
    if (r.module_trace.steps > r.steps)
      n.at("module_trace").at("steps").fail("at most the record's steps (" + std::to_string(r.steps) + "), got " +
                                            std::to_string(r.module_trace.steps));
  }
  if (n.has("digests")) r.digests = step_digests_from_json(n.at("digests"), r.steps);
  return r;
}

bool is_series_name(const std::string& name) {
  if (name.empty() || name.size() > 200) return false;
  for (unsigned char ch : name)
    if (ch <= ' ' || ch == '"' || ch == 0x7f) return false;
  return true;
}

const std::vector<std::string_view>& run_record_keys() {
  static const std::vector<std::string_view> keys = {
      "schema", "smoke",  "config_hash", "seed",   "device", "platform", "stack", "steps",
      "contract", "config", "fingerprint", "series", "series_data", "hashes", "init", "resources", "probes",
      "train_probes", "module_trace", "digests"};
  return keys;
}

void refuse_replacing_other_than_a_record(const std::string& path, const std::string& flag) {
  namespace fs = std::filesystem;
  // A path ending in "/" names a folder; refused before anything is made.
  const std::string name = fs::path(path).filename().string();
  if (!path.empty() && (path.back() == '/' || name == "." || name == ".."))
    throw BadUsage(flag + " " + path + ": a file path for the record, not a folder" +
                   (path.back() == '/' ? " (drop the trailing /)" : ""));
  refuse_path_through_a_file(path, flag);
  std::error_code ec;
  fs::file_status status = fs::symlink_status(path, ec);
  if (!ec && fs::exists(status) && !fs::is_regular_file(status) && !fs::is_symlink(status))
    throw BadUsage(flag + " " + path + ": refusing to write a run record over something that is not a regular file" +
                   (fs::is_directory(status) ? " (name the record's file, e.g. " +
                                                   (fs::path(path) / "<smoke>.run.json").string() + ")"
                                             : std::string()));
  fs::path target = fs::weakly_canonical(fs::absolute(path), ec);  // through links: what the write replaces
  if (ec || !fs::is_regular_file(target, ec)) return;
  std::string why;
  // Series past 4,096 steps go to a sidecar: a record is far below this.
  std::optional<std::string> existing = existing_text(path, uint64_t{256} << 20);
  if (!existing) {
    why = "larger than any record";
  } else {
    const std::string& text = *existing;
    // Records are written pretty (a top-level key indented by 2) or, by
    // other tools, compact; a scan, not a parse: this runs before each run.
    size_t first = text.find_first_not_of(" \t\r\n");
    bool record = first != std::string::npos && text[first] == '{' &&
                  (text.find("\n  \"schema\": \"lockstep.run/") != std::string::npos ||
                   text.find("\"schema\":\"lockstep.run/") != std::string::npos);
    if (!record) why = "not a lockstep run record";
  }
  if (!why.empty())
    throw BadUsage(flag + " " + path + ": refusing to write a run record over a file that is " + why +
                   " (a record replaces only an earlier record; name a new file, e.g. lockstep-out/<smoke>.run.json)");
}

RunRecord read_run_record(const std::string& path) {
  TakenArrays taken;  // long series inline: numbers, not a tree node each
  nlohmann::json doc = parse_json_file(path, take_record_arrays, taken);
  JsonView view(doc, path);
  view.expect_object();
  // Another JSON file (a report, a config, a ledger line) is named as
  // such, before its keys are taken for a record's misspelt ones.
  if (!doc.contains("schema") && !doc.contains("series") && !doc.contains("probes"))
    view.fail(std::string("a lockstep run record (\"schema\": \"") + kRunSchema +
              "\", from lockstep run or import --record); this JSON has none of its keys (a report? a config?)");
  view.allow_keys(run_record_keys());
  return run_record_from_json(view, sidecar_dir_of(path), &taken);
}

void write_run_record(const std::string& path, const RunRecord& record) {
  size_t longest = record.resources.step_time_s.size();
  for (const auto& [name, s] : record.series) longest = std::max(longest, s.values.size());
  if (static_cast<int64_t>(longest) <= kInlineSeriesSteps) {
    write_file_atomically(path, pretty_dump(to_json(record)));
    return;
  }
  // Sidecar first, under a name of its own; then the JSON that points at it
  // (record/series_file.h). A crash in between leaves the old pair intact.
  const std::filesystem::path json_path(path);
  const std::string json_name = json_path.filename().string();
  SeriesPacker packer;
  nlohmann::json doc = to_json(record, &packer);
  doc["series_data"] = packer.descriptor(json_name);
  const std::string sidecar = doc["series_data"]["file"];
  write_file_atomically((json_path.parent_path() / sidecar).string(), packer.parts());
  write_file_atomically(path, pretty_dump(doc));
  // The sidecars of earlier versions of this record are unreferenced now,
  // unless a record "X" and "X.json" sit side by side: their sidecars share
  // one name pattern, and one record's must never go with the other's.
  std::error_code ec;
  const std::filesystem::path dir = json_path.parent_path().empty() ? "." : json_path.parent_path();
  if (std::filesystem::exists(std::filesystem::symlink_status(dir / sidecar_twin_of(json_name), ec))) return;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    std::string name = entry.path().filename().string();
    if (name != sidecar && is_sidecar_of(name, json_name)) std::filesystem::remove(entry.path(), ec);
  }
}

std::optional<NonFinite> first_nonfinite(const RunRecord& r) {
  for (const auto& [name, s] : r.series)
    for (size_t i = 0; i < s.values.size(); ++i)
      if (!std::isfinite(s.values[i])) return NonFinite{"series." + name + ".values[" + std::to_string(i) + "]", s.values[i]};
  for (const auto* list : {&r.probes, &r.train_probes})
    for (const auto& p : *list)
      for (int part = 0; part < 2; ++part)
        for (const auto& stat : tensor_stat_names()) {
          double v = tensor_stat(part ? p.labels : p.inputs, stat);
          if (std::isfinite(v)) continue;
          return NonFinite{std::string(list == &r.probes ? "probes[" : "train_probes[") + std::to_string(p.batch) +
                               "]." + (part ? "labels." : "inputs.") + stat,
                           v};
        }
  return std::nullopt;
}

std::vector<std::string> differing_config_fields(const std::map<std::string, std::string>& a,
                                                 const std::map<std::string, std::string>& b) {
  std::vector<std::string> out;
  for (const auto& [k, v] : a) {
    auto it = b.find(k);
    if (it == b.end() || it->second != v) out.push_back(k);
  }
  for (const auto& [k, v] : b)
    if (!a.count(k)) out.push_back(k);
  std::sort(out.begin(), out.end());
  return out;
}

bool is_location_field(const std::string& path) { return path == "data.path"; }

}  // namespace lockstep
