#include "smoke/smoke_config.h"

#include "smoke/config_keys.h"
#include "smoke/config_sections.h"

#include <algorithm>
#include <charconv>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <regex>

#include "core/error.h"
#include "core/process.h"
#include "core/float_bits.h"
#include "core/hash.h"
#include "core/json_io.h"
#include "machine/driver_version.h"
#include "record/platform_key.h"
#include "smoke/golden_store.h"

namespace lockstep {
namespace fs = std::filesystem;

std::string data_dir() {
  if (const char* d = std::getenv("LOCKSTEP_DATA_DIR"); d && *d) return d;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::string(x) + "/lockstep/data";
  const char* home = std::getenv("HOME");
  return std::string(home && *home ? home : ".") + "/.cache/lockstep/data";
}

std::pair<uint64_t, bool> base_seed(const SmokeConfig& cfg, const char* seed) {
  const char* env = seed ? seed : std::getenv("LOCKSTEP_SEED");
  if (!env || !*env) return {cfg.seed, false};
  uint64_t v = 0;
  std::string s = env;
  auto res = std::from_chars(s.data(), s.data() + s.size(), v);
  if (res.ec != std::errc() || res.ptr != s.data() + s.size())
    throw BadUsage("LOCKSTEP_SEED=" + s + ": expected an unsigned 64-bit integer");
  return {v, v != cfg.seed};  // the config's own seed is no override
}

namespace {

// values_json() leaves by JSON path, for SmokeConfig::values_fields.
void flatten_into(const nlohmann::json& node, const std::string& path, std::map<std::string, std::string>& out) {
  if (!node.is_object()) {
    out[path] = canonical_dump(node);
    return;
  }
  for (const auto& [key, value] : node.items()) flatten_into(value, path.empty() ? key : path + "." + key, out);
}

// The smoke's identity and how it runs: name, device, min_driver, seed,
// steps, repeat, platforms and the determinism section.
void read_identity(const JsonView& v, SmokeConfig& c) {
  c.name = v.at("name").as_string();
  if (!is_golden_name(c.name))
    v.at("name").fail("a name of letters, digits, '.', '_' and '-' not starting with '.' "
                      "(it names the golden folder), got \"" + input_excerpt(c.name) + "\"");
  if (v.has("device")) {
    // "gpu", "CUDA", "cuda:0" mean CUDA: the nearest spelling ("cpu" for
    // "gpu") would point at the one value that drops GPU coverage.
    std::string d = v.at("device").raw().is_string() ? v.at("device").as_string() : "";
    std::string lower = d;
    std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char ch) { return std::tolower(ch); });
    if (d != "cuda" && (lower == "gpu" || lower == "cuda" || lower.rfind("cuda:", 0) == 0))
      v.at("device").fail("one of \"cpu\", \"cuda\", got \"" + input_excerpt(d) + "\" (did you mean \"cuda\"?)");
    c.device = v.at("device").as_enum({"cpu", "cuda"});
  }
  if (v.has("min_driver")) {
    c.min_driver = v.at("min_driver").as_string();
    if (!is_dotted_version(c.min_driver) || std::count(c.min_driver.begin(), c.min_driver.end(), '.') > 2)
      v.at("min_driver").fail("a dotted driver version such as \"535.104\", got \"" + input_excerpt(c.min_driver) + "\"");
  }
  c.seed = v.at("seed").as_uint();
  c.steps = v.at("steps").as_int(1, 1000000);
  if (v.has("repeat")) c.repeat = static_cast<int>(v.at("repeat").as_int(1, 100));
  if (v.has("repeat_varies")) {
    JsonView r = v.at("repeat_varies");
    c.repeat_varies.clear();
    for (size_t i = 0; i < r.size(); ++i) {
      std::string kind = r.at(i).as_enum({"allocator", "malloc-perturb", "affinity", "env-order", "thread-warmup"});
      if (std::find(c.repeat_varies.begin(), c.repeat_varies.end(), kind) != c.repeat_varies.end())
        r.at(i).fail("each kind once, got \"" + kind + "\" twice");
      c.repeat_varies.push_back(kind);
    }
  }
  if (v.has("platforms")) {
    JsonView p = v.at("platforms");
    for (size_t i = 0; i < p.size(); ++i) {
      std::string key = p.at(i).as_string();
      if (!is_platform_key(key))
        p.at(i).fail("a platform key such as \"cpu-x86_64-avx2\" or \"cuda-sm90\" (docs/platforms.md), got \"" +
                     input_excerpt(key) + "\"");
      if (key.substr(0, key.find('-')) != c.device)
        p.at(i).fail("a " + c.device + " platform key: the smoke runs on device " + c.device + ", so no run of it "
                     "makes a golden for " + key);
      // A CPU key ends in ATen's CPU capability (record/platform_key.h).
      // One a typo away from a known capability is that typo; another
      // word may be a capability newer than this list, and is taken.
      if (key.rfind("cpu-", 0) == 0) {
        static const std::vector<std::string> kCapabilities = {"default", "avx2", "avx512", "sve256", "zvector", "vsx"};
        const std::string isa = key.substr(key.find('-', 4) + 1);
        const std::string close = closest_spelling(isa, kCapabilities);
        if (!close.empty() && close != isa)
          p.at(i).fail("a platform key whose last part is an ATen CPU capability, got \"" + input_excerpt(key) +
                       "\" (did you mean \"" + key.substr(0, key.size() - isa.size()) + close + "\"?)");
      }
      if (std::find(c.platforms.begin(), c.platforms.end(), key) != c.platforms.end())
        p.at(i).fail("each platform once, got \"" + key + "\" twice");
      c.platforms.push_back(key);
    }
  }
  if (v.has("determinism")) {
    JsonView d = v.at("determinism");
    d.allow_keys(keys_under("determinism"));
    if (d.has("mode")) c.mode = d.at("mode").as_enum({"strict", "default"});
    if (d.has("intra_op_threads")) c.intra_op_threads = static_cast<int>(d.at("intra_op_threads").as_int(1, 1024));
    if (d.has("inter_op_threads")) c.inter_op_threads = static_cast<int>(d.at("inter_op_threads").as_int(1, 1024));
  }
}

}  // namespace

namespace {

// The "calibration" block `lockstep calibrate --write` leaves: recorded,
// not read by the gate, but held to its shape like every other section
// (what --write writes: date, axes, repeats, runs, runners, multiplier,
// floors, false_alarm, detection).
void check_calibration_block(const JsonView& b) {
  b.expect_object();
  b.allow_keys(keys_under("calibration"));
  for (const char* k : {"date", "axes", "runs", "multiplier"})
    if (!b.has(k)) b.fail(std::string("a \"") + k + "\" field (the block lockstep calibrate --write writes)");
  std::string date = b.at("date").as_string();
  static const std::regex kUtc(R"((\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})Z)");
  std::smatch m;
  bool valid = std::regex_match(date, m, kUtc);
  if (valid) {
    int y = std::stoi(m[1]), mo = std::stoi(m[2]), d = std::stoi(m[3]);
    static const int kDays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    valid = y >= 1970 && mo >= 1 && mo <= 12 && d >= 1 && d <= (mo == 2 && !leap ? 28 : kDays[mo - 1]) &&
            std::stoi(m[4]) < 24 && std::stoi(m[5]) < 60 && std::stoi(m[6]) < 60;
  }
  if (!valid) b.at("date").fail("a UTC time such as \"2026-12-03T10:00:00Z\"");
  int64_t runs = b.at("runs").as_int(2, 1000000);
  if (b.has("repeats")) b.at("repeats").as_int(1, 100);
  b.at("multiplier").as_finite(1, 1000);
  if (b.has("runners")) {
    JsonView r = b.at("runners");
    r.expect_array();
    if (r.size() == 0) r.fail("at least one runner");
    for (size_t i = 0; i < r.size(); ++i)
      if (r.at(i).as_string().empty()) r.at(i).fail("a runner's name, not empty");
  }
  JsonView a = b.at("axes");
  a.expect_object();
  a.allow_keys({"threads", "capability", "workers", "seed"});
  static const std::regex kDecimal("(0|[1-9][0-9]{0,19})");
  for (const auto& k : a.keys()) {
    JsonView vs = a.at(k);
    vs.expect_array();
    if (vs.size() == 0) vs.fail("at least one value");
    for (size_t i = 0; i < vs.size(); ++i) {
      std::string v = vs.at(i).as_string();
      bool ok = k == "capability" ? (v == "default" || v == "avx2" || v == "avx512") : std::regex_match(v, kDecimal);
      if (ok && k == "threads") ok = v != "0" && v.size() <= 4 && std::stoi(v) <= 1024;
      if (ok && k == "workers") ok = v.size() <= 2 && std::stoi(v) <= 64;
      if (!ok) vs.at(i).fail(k == "capability" ? "default, avx2 or avx512" : "a " + k + " value as calibrate --axis takes it");
    }
  }
  if (b.has("floors")) {
    JsonView f = b.at("floors");
    f.expect_object();
    f.allow_keys({"atol", "rtol", "sigma"});
    for (const auto& k : f.keys()) f.at(k).as_finite(0, 1e6);
  }
  if (b.has("false_alarm")) {
    JsonView f = b.at("false_alarm");
    f.expect_object();
    f.allow_keys({"failed_runs", "runs", "upper95"});
    int64_t held = f.has("runs") ? f.at("runs").as_int(0, runs) : runs;
    if (f.has("failed_runs")) f.at("failed_runs").as_int(0, held);
    if (f.has("upper95")) f.at("upper95").as_finite(0, 1);
  }
  if (b.has("detection")) {
    JsonView d = b.at("detection");
    d.expect_object();
    d.allow_keys({"catches_lr_factor", "misses_lr_factor", "not_measured"});
    if (d.has("not_measured")) {
      if (d.has("catches_lr_factor") || d.has("misses_lr_factor"))
        d.at("not_measured").fail("no catches_lr_factor or misses_lr_factor beside it");
      if (d.at("not_measured").as_string().empty()) d.at("not_measured").fail("why, not empty");
    } else {
      if (!d.has("catches_lr_factor")) d.fail("catches_lr_factor (or not_measured)");
      double catches = d.at("catches_lr_factor").as_finite(1e-12, 1);
      if (d.has("misses_lr_factor") && d.at("misses_lr_factor").as_finite(0, 1) >= catches)
        d.at("misses_lr_factor").fail("a factor below catches_lr_factor (a change missed is smaller than one caught)");
    }
  }
}

}  // namespace

namespace {

SmokeConfig load_smoke_doc(const nlohmann::json& doc, const std::string& path);

// The keys a lane's "set" may not patch: what names the smoke, what makes
// the two runs comparable at all, and how the check judges (a lane changes
// how the run is made).
constexpr const char* kFixedByTheBaseRun[] = {"schema",    "name",          "seed",      "steps",
                                              "equivalence", "tolerance",   "repeat",    "repeat_varies",
                                              "platforms", "resume_at",     "calibration"};

// `doc` with lane `lane` applied: the merge patch, then args appended to
// trainer.command and env added to trainer.env; no equivalence section.
nlohmann::json variant_doc(nlohmann::json doc, const EquivalenceVariant& lane) {
  doc.erase("equivalence");
  doc.merge_patch(lane.set);
  if (!lane.args.empty())
    for (const auto& a : lane.args) doc["trainer"]["command"].push_back(a);
  for (const auto& [k, val] : lane.env) doc["trainer"]["env"][k] = val;
  return doc;
}

// The "equivalence" section: each lane parsed, then loaded as a config of
// its own, so a lane that cannot run is exit 2 now, not in check's child.
void read_equivalence(const JsonView& e, const nlohmann::json& doc, SmokeConfig& c) {
  e.expect_object();
  if (e.keys().size() > 16) e.fail("at most 16 lanes (each costs a run), got " + std::to_string(e.keys().size()));
  for (const std::string& name : e.keys()) {
    JsonView l = e.at(name);
    if (!is_golden_name(name) || name.size() > 64)
      l.fail("a lane name of letters, digits, '.', '_' and '-' not starting with '.' (it names the record "
             "variant-<name>.json), at most 64 characters");
    l.expect_object();
    l.allow_keys({"set", "args", "env", "rule", "same_batches"});
    EquivalenceVariant lane;
    lane.name = name;
    if (l.has("set")) {
      l.at("set").expect_object();
      for (const char* k : kFixedByTheBaseRun)
        if (l.at("set").has(k))
          l.at("set").at(k).fail(std::string("no \"") + k + "\" in a lane: a lane varies how the run is made, and " + k +
                                 " is what makes it comparable with the base run or how the check judges");
      // The platform key of the goldens and of both runs' records is the
      // device's; a lane on another device is another platform, not a lane.
      if (l.at("set").has("device"))
        l.at("set").at("device").fail("no \"device\" in a lane: both runs of a lane run on the smoke's device (a "
                                      "run on another device is another platform, with goldens of its own)");
      if (l.at("set").keys().empty() && !l.has("args") && !l.has("env"))
        l.at("set").fail("at least one field to change (an empty lane is the base run again)");
      lane.set = l.at("set").raw();
    }
    if (l.has("args")) {
      if (!c.has_trainer()) l.at("args").fail("no \"args\" for a built-in smoke (they go to trainer.command; use \"set\")");
      JsonView a = l.at("args");
      a.expect_array();
      if (a.size() == 0) a.fail("at least one argument (an empty lane is the base run again)");
      for (size_t i = 0; i < a.size(); ++i) lane.args.push_back(a.at(i).as_string());
    }
    if (l.has("env")) {
      if (!c.has_trainer()) l.at("env").fail("no \"env\" for a built-in smoke (it goes to trainer.env)");
      JsonView en = l.at("env");
      en.expect_object();
      if (en.keys().empty()) en.fail("at least one variable (an empty lane is the base run again)");
      for (const std::string& k : en.keys()) lane.env[k] = en.at(k).as_string();
    }
    if (!l.has("set") && !l.has("args") && !l.has("env"))
      l.fail("\"set\", \"args\" or \"env\": what this lane changes");
    if (l.has("rule")) {
      lane.rule = tolerance_from_json(l.at("rule"));
      if (lane.rule.rule == Tolerance::Rule::kSigma)
        l.at("rule").fail("{\"exact\": true}, {\"ulp\": N} or {\"atol\": A, \"rtol\": R} (a sigma rule needs a "
                          "golden's spread; a lane has one base run)");
    }
    if (l.has("same_batches")) lane.same_batches = l.at("same_batches").as_bool();
    nlohmann::json changed;
    try {
      changed = variant_doc(doc, lane);
    } catch (const nlohmann::json::exception&) {  // args/env onto a patched trainer of another shape
      l.fail("a lane whose args go onto trainer.command (an array) and env into trainer.env (an object), "
             "as its \"set\" leaves them");
    }
    nlohmann::json unchanged = doc;
    unchanged.erase("equivalence");
    if (canonical_dump(changed) == canonical_dump(unchanged))
      l.fail("a lane that changes the config; with it applied the config is the base run's (a merge patch "
             "sets a key to a value, null deletes it, and an object is merged key by key)");
    try {
      load_smoke_doc(changed, c.file);
    } catch (const Error& err) {
      l.fail("a lane whose config loads; with it applied: " + std::string(err.what()));
    }
    c.equivalence.push_back(std::move(lane));
  }
}

}  // namespace

std::string EquivalenceVariant::describe() const {
  std::string out;
  auto add = [&out](const std::string& part) { out += (out.empty() ? "" : ", ") + part; };
  if (!set.empty()) add("set " + canonical_dump(set));
  if (!args.empty()) {
    std::string a;
    for (const auto& x : args) a += " " + x;
    add("trainer args" + a);
  }
  for (const auto& [k, val] : env) add("env " + k + "=" + val);
  return out;
}

SmokeConfig load_smoke_config(const std::string& path, const std::string& variant) {
  nlohmann::json doc = parse_json_file(path);
  if (variant.empty()) return load_smoke_doc(doc, path);
  SmokeConfig base = load_smoke_doc(doc, path);
  std::string names;
  for (const auto& lane : base.equivalence) {
    if (lane.name == variant) {
      SmokeConfig c = load_smoke_doc(variant_doc(doc, lane), path);
      c.variant = variant;
      nlohmann::json values = values_json(c);
      c.values_hash = hex64(xxh3_64(canonical_dump(values)));
      c.values_fields.clear();
      flatten_into(values, "", c.values_fields);
      return c;
    }
    names += (names.empty() ? "" : ", ") + lane.name;
  }
  throw BadInput(path, "equivalence", "a lane named \"" + input_excerpt(variant) + "\" (" +
                 (names.empty() ? std::string("the config has no equivalence section") : "its lanes: " + names) + ")");
}

namespace {

SmokeConfig load_smoke_doc(const nlohmann::json& doc, const std::string& path) {
  JsonView v(doc, path);
  v.expect_object();
  v.allow_keys(keys_under(""));
  if (v.has("schema") && v.at("schema").as_int() != 1) v.at("schema").fail("1 (the only config schema)");

  SmokeConfig c;
  c.file = path;
  read_identity(v, c);

  if (v.has("trainer")) {
    // The team's own trainer replaces lockstep's data, model and optimiser.
    for (const char* k : {"data", "model", "optimizer", "inject_nondeterminism"})
      if (v.has(k)) v.at(k).fail(std::string("no ") + k + " beside \"trainer\" (the command trains; "
                                 "lockstep's built-in data, model and optimiser are not used)");
    read_trainer(v.at("trainer"), c);
  } else {
    read_data(v.at("data"), c.data, fs::absolute(c.file).parent_path());
    read_model(v.at("model"), c);
    read_optimizer(v.at("optimizer"), c.optimizer);
    if (c.data.loader.batch_size % c.optimizer.micro_batches != 0)
      v.at("optimizer").at("micro_batches")
          .fail("a divisor of data.batch_size " + std::to_string(c.data.loader.batch_size) +
                " (micro-batches of equal size), got " + std::to_string(c.optimizer.micro_batches));
    if (c.optimizer.micro_batches > 1 && !c.data.loader.drop_last)
      v.at("optimizer").at("micro_batches")
          .fail("1 unless data.drop_last is true (a short last batch would not split evenly)");
  }
  if (v.has("resume_at") && c.has_trainer() && c.trainer.resume_stop.empty())
    v.at("resume_at").fail("a trainer.resume section (how the command stops at a checkpoint and continues)");
  if (v.has("resume_at")) {
    c.resume_at = v.at("resume_at").as_int(1, 1000000);
    if (c.resume_at >= c.steps)
      v.at("resume_at").fail("a step between 1 and steps - 1 (" + std::to_string(c.steps - 1) + "), got " +
                             std::to_string(c.resume_at));
  }
  if (v.has("inject_nondeterminism"))
    c.inject_nondeterminism =
        v.at("inject_nondeterminism").as_enum({"index_put_accumulate", "worker_seeded_augment", "allocation_order"});

  if (v.has("distributed")) read_distributed(v.at("distributed"), c);
  check_rank_checkpoints(v, c);
  // The default (2) is at most the smoke's steps: a 1-step smoke traces 1.
  c.trace.steps = std::min<int64_t>(c.trace.steps, c.steps);
  if (v.has("trace")) read_trace(v.at("trace"), c);

  if (v.has("tolerance")) {
    c.tolerance = tolerance_policy_from_json(v.at("tolerance"));
    check_tolerance_names(v.at("tolerance"), c);
  }
  if (v.has("calibration")) check_calibration_block(v.at("calibration"));
  c.data.loader.augment.worker_seeded = c.inject_nondeterminism == "worker_seeded_augment";
  // The lanes are runs of their own, held to the base run: adding one
  // changes nothing of the base run nor of how its golden is judged.
  nlohmann::json hashed = doc;
  hashed.erase("equivalence");
  c.config_hash = hex64(xxh3_64(canonical_dump(hashed)));
  nlohmann::json values = values_json(c);
  c.values_hash = hex64(xxh3_64(canonical_dump(values)));
  flatten_into(values, "", c.values_fields);
  if (v.has("equivalence")) read_equivalence(v.at("equivalence"), doc, c);
  return c;
}

}  // namespace

namespace {

// The trainer section as an input of the run: everything but the timeout
// (and the worker counts and packages, how the run is judged). "inputs" only
// when set: goldens made before it keep their value hash.
nlohmann::json trainer_values(const TrainerConfig& t) {
  nlohmann::json v = {{"command", t.command},
          {"cwd", t.cwd},
          {"metrics", {{"format", t.metrics_format}, {"path", t.metrics_path}, {"series", t.series},
                       {"step", t.step_key}, {"mllog_step", t.mllog_step}}},
          {"probes", t.probes},
          {"data_only", t.data_only},
          {"resume", {{"stop", t.resume_stop}, {"continue", t.resume_continue}}},
          {"env", t.env}};
  if (!t.inputs.empty()) v["inputs"] = t.inputs;
  return v;
}

}  // namespace

nlohmann::json values_json(const SmokeConfig& c) {
  if (c.has_trainer()) {
    nlohmann::json out = {{"device", c.device}, {"seed", c.seed}, {"steps", c.steps}, {"mode", c.mode},
                          {"intra_op_threads", c.intra_op_threads}, {"inter_op_threads", c.inter_op_threads},
                          {"trainer", trainer_values(c.trainer)}};
    if (!c.variant.empty()) out["variant"] = c.variant;
    return out;
  }
  const DataConfig& d = c.data;
  const LoaderSpec& l = d.loader;
  const OptimizerSpec& o = c.optimizer;
  nlohmann::json data = {{"source", d.source},
                         {"sample_shape", l.sample_shape},
                         {"batch_size", l.batch_size},
                         {"shuffle", l.shuffle},
                         {"drop_last", l.drop_last},
                         {"probe_epochs", d.probe_epochs},
                         {"augment", {{"shift", l.augment.max_shift},
                                      {"flip", l.augment.flip},
                                      {"noise_std", l.augment.noise_std},
                                      {"mean", l.augment.mean},
                                      {"std", l.augment.std}}}};
  if (d.source == "synthetic")
    data["synthetic"] = {{"kind", d.synthetic_kind}, {"rows", d.synthetic_rows}, {"vocab", d.synthetic_vocab}};
  else
    data["path"] = d.path;
  if (d.source == "csv")
    data["csv"] = {{"skip_rows", d.skip_rows}, {"label_column", d.label_column}, {"scale", d.scale}};
  if (d.source == "images")
    data["image"] = {{"interpolation", d.interpolation}, {"to_float", d.to_float}, {"manifest_sample", d.manifest_sample}};
  nlohmann::json model = {{"name", c.model.name}, {"classes", c.classes}};
  if (c.model.name == "cnn") model["channels"] = c.model.channels;
  if (c.model.name == "mlp") model["hidden"] = c.model.hidden;
  if (c.model.name == "mlp" || c.model.name == "transformer") model["dropout"] = c.model.dropout;
  if (c.model.name == "transformer")
    model.update({{"d_model", c.model.d_model}, {"heads", c.model.heads}, {"ff", c.model.ff}, {"vocab", c.model.vocab}});
  const LrSchedule& s = o.schedule;
  nlohmann::json optimizer = {{"name", o.name},
                              {"lr", s.base_lr},
                              {"weight_decay", o.weight_decay},
                              {"schedule", {{"kind", static_cast<int>(s.kind)},
                                            {"warmup_steps", s.kind == LrSchedule::Kind::kWarmup ? s.warmup_steps : 0},
                                            {"step_size", s.kind == LrSchedule::Kind::kStep ? s.step_size : 0},
                                            {"gamma", s.kind == LrSchedule::Kind::kStep ? s.gamma : 0.0}}}};
  if (o.name == "sgd") optimizer.update({{"momentum", o.momentum}, {"nesterov", o.nesterov}});
  else optimizer.update({{"beta1", o.beta1}, {"beta2", o.beta2}, {"eps", o.eps}});
  // Only when used: the goldens made before the key keep their values hash.
  if (o.micro_batches != 1) optimizer["micro_batches"] = o.micro_batches;
  nlohmann::json out = {{"device", c.device}, {"seed", c.seed}, {"steps", c.steps}, {"mode", c.mode},
                        {"intra_op_threads", c.intra_op_threads}, {"inter_op_threads", c.inter_op_threads},
                        {"data", data}, {"model", model}, {"optimizer", optimizer},
                        {"inject_nondeterminism", c.inject_nondeterminism}};
  if (!c.variant.empty()) out["variant"] = c.variant;
  // Only when present: a single-process smoke keeps the values (and the
  // config.values_xxh3 of its goldens) it always had.
  if (c.distributed.configured) {
    const DistributedSpec& d = c.distributed;
    out["distributed"] = {{"world_size", d.world_size}, {"backend", d.backend},
                          {"self_test", {{"fault", d.self_test.fault}, {"rank", d.self_test.rank},
                                         {"step", d.self_test.step}}}};
  }
  // Neither trace.steps nor its self-test is an input: the self-test's
  // one-ULP perturbation is the change the gate must find in the values
  // (named by module), not a changed config.
  return out;
}

std::string missing_data_pass_note(const SmokeConfig& c) {
  if (!c.has_trainer() || c.trainer.has_data_pass()) return "";
  return "no data-only pass: " + c.file + " sets no trainer.probes, so the batches the trainer consumed are not "
         "checked (worker seeding, sampler order, augmentation); write them with the helper's ProbeWriter "
         "(docs/trainers.md)";
}

bool is_smoke_config_file(const std::string& path) {
  try {
    load_smoke_config(path);
    return true;
  } catch (const Error&) {
    return false;
  }
}

int processes_per_run(const SmokeConfig& c, bool with_data_pass) {
  const int ranks = c.distributed.configured ? std::max(1, c.distributed.world_size) : 1;
  if (!c.has_trainer() || !with_data_pass) return ranks;
  const int data_passes = c.trainer.has_data_pass() ? std::max<int>(1, static_cast<int>(c.trainer.workers.size())) : 0;
  return (1 + data_passes) * ranks;
}

void apply_package_relevance(const TrainerConfig& t, Fingerprint& fp) {
  for (const auto& name : t.packages_relevant) {
    auto it = fp.try_emplace("python.packages." + name, FingerprintField{"(absent: not installed)", true, false}).first;
    it->second.relevant = true;
  }
  for (const auto& name : t.packages_informational) {
    auto it = fp.find("python.packages." + name);
    if (it != fp.end()) it->second.relevant = false;
  }
}

SmokeConfig with_overrides(SmokeConfig config, const RunOverrides& overrides) {
  if (overrides.intra_op_threads > 0) config.intra_op_threads = overrides.intra_op_threads;
  if (overrides.workers >= 0) config.data.loader.workers = overrides.workers;
  if (overrides.world_size > 0) {
    if (!config.distributed.configured)
      throw BadUsage("--world-size: " + config.file + " has no \"distributed\" section (a single-process smoke)");
    const RankFault& f = config.distributed.self_test;
    if (!f.fault.empty() && f.rank >= overrides.world_size)
      throw BadUsage("--world-size " + std::to_string(overrides.world_size) + ": " + config.file +
                     ": distributed.self_test.rank is " + std::to_string(f.rank) +
                     ", which would not exist (the self-test would never fire)");
    config.distributed.world_size = overrides.world_size;
  }
  if (overrides.lr_scale != 1) {
    if (!(overrides.lr_scale > 0) || !std::isfinite(overrides.lr_scale))
      throw BadUsage("--lr-scale: a finite factor above 0, got " + format_double(overrides.lr_scale));
    config.lr_scale = overrides.lr_scale;
    config.optimizer.schedule.base_lr *= overrides.lr_scale;
    // A planted change is an input: the record names it and a golden fails it.
    std::string scale = format_double(overrides.lr_scale);
    config.values_fields["lr_scale"] = scale;
    config.values_hash = hex64(xxh3_64(config.values_hash + " lr_scale=" + scale));
  }
  if (!overrides.mode.empty()) {
    if (overrides.mode != "strict" && overrides.mode != "default")
      throw BadUsage("--determinism: strict or default, got \"" + input_excerpt(overrides.mode) + "\"");
    config.mode = overrides.mode;
  }
  config.vary = overrides.vary;  // not an input: the values hash stays
  if (!overrides.perturb.empty()) {
    if (overrides.perturb != "parameter" && overrides.perturb != "data")
      throw BadUsage("--perturb: \"parameter\" (one ULP of the model's first parameter before step 0) or \"data\" "
                     "(one ULP of the data-only pass's first sample), got \"" + input_excerpt(overrides.perturb) + "\"");
    config.perturb = overrides.perturb;
    config.values_fields["perturb"] = "\"" + overrides.perturb + "\"";
    config.values_hash = hex64(xxh3_64(config.values_hash + " perturb=" + overrides.perturb));
  }
  return config;
}

RunVariation repeat_variation(const SmokeConfig& config) {
  if (config.repeat_varies.empty()) return {};
  std::mt19937_64 rng(xxh3_64("repeat_varies " + config.name + " " + std::to_string(config.seed)));
  return random_variation(config.repeat_varies, rng, allowed_cpus_mask());
}

std::map<std::string, SmokeConfig> load_smoke_folder(const std::string& dir) {
  std::map<std::string, SmokeConfig> out;
  for (const auto& file : expand_smoke_args({dir})) {
    SmokeConfig c = load_smoke_config(file);
    std::string name = c.name;
    auto [it, fresh] = out.emplace(name, std::move(c));
    if (!fresh)
      throw BadInput(file, "name", "a smoke name unique in " + dir + "; \"" + name + "\" is also in " + it->second.file);
  }
  return out;
}

std::vector<std::string> suite_smoke_names(const std::vector<std::string>& files) {
  std::map<std::string, std::string> seen;
  std::vector<std::string> names;
  for (const auto& file : files) {
    std::string name;
    try {
      name = load_smoke_config(file).name;
    } catch (const Error&) {
      names.push_back(fs::path(file).stem().string());
      continue;
    }
    auto [it, fresh] = seen.emplace(name, file);
    std::error_code ec;
    if (!fresh && fs::equivalent(file, it->second, ec))
      throw BadUsage(file + ": given twice (also as " + it->second + "); name each smoke config once");
    if (!fresh)
      throw BadInput(file, "name", "a smoke name unique in the suite; \"" + name + "\" is also the name in " + it->second);
    names.push_back(name);
  }
  return names;
}

std::string select_smoke_kind(const std::string& kind, const std::string& command, std::vector<std::string>& files,
                              std::vector<std::string>& names) {
  const std::string other_kind = kind == "trainer" ? "built-in" : "trainer";
  std::vector<std::string> kept_files, kept_names;
  for (size_t i = 0; i < files.size(); ++i) {
    bool keep = true;
    try {
      keep = load_smoke_config(files[i]).has_trainer() == (kind == "trainer");
    } catch (const Error&) {
    }
    if (!keep) continue;
    kept_files.push_back(files[i]);
    kept_names.push_back(names[i]);
  }
  const size_t given = files.size(), other = given - kept_files.size();
  files = std::move(kept_files);
  names = std::move(kept_names);
  if (files.empty())
    return command + ": no " + kind + " smoke among the " + std::to_string(given) + " given (" + other_kind +
           " smokes only: `" + command + " --kind " + other_kind + "` takes them); nothing to " + command + ", exit 0";
  if (other == 0) return "";
  return command + ": " + std::to_string(files.size()) + " " + kind + " smoke" + (files.size() == 1 ? "" : "s") + "; " +
         std::to_string(other) + " of the other kind left to `" + command + " --kind " + other_kind + "`";
}

std::vector<std::string> expand_smoke_args(const std::vector<std::string>& args) {
  std::vector<std::string> out;
  for (const auto& a : args) {
    std::error_code ec;
    if (fs::is_directory(a, ec)) {
      std::vector<std::string> found;
      for (const auto& e : fs::directory_iterator(a, ec)) {
        if (e.path().extension() != ".json") continue;
        if (!e.is_regular_file())
          throw BadUsage(e.path().string() + ": not a readable smoke config (dangling link or not a file)");
        found.push_back(e.path().string());
      }
      if (found.empty()) throw BadUsage(a + ": no smoke configs (*.json) in this folder");
      // Byte-wise order, independent of locale and directory order.
      std::sort(found.begin(), found.end());
      out.insert(out.end(), found.begin(), found.end());
    } else if (fs::exists(a, ec)) {
      out.push_back(a);
    } else {
      throw BadUsage(a + ": no such smoke config or folder");
    }
  }
  return out;
}

}  // namespace lockstep