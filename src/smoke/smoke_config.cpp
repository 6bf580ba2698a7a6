#include "smoke/smoke_config.h"

#include <algorithm>
#include <charconv>
#include <cctype>
#include <cstdlib>
#include <filesystem>

#include "core/error.h"
#include "core/hash.h"
#include "core/json_io.h"
#include "machine/driver_version.h"
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

// data.path: "{data}/<name>" is a dataset lockstep fetches (data_dir());
// any other relative path is the team's own file, beside the config.
std::string resolve_data_path(const JsonView& node, const std::string& path, const fs::path& config_dir) {
  const std::string kData = "{data}";
  for (char ch : path)
    if (static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f)
      node.fail("a path without control characters (a NUL or a line break would name another file)");
  if (path.rfind(kData, 0) == 0 && (path.size() == kData.size() || path[kData.size()] == '/')) {
    // A name inside the data folder: "{data}//etc/x" or "{data}/../x" would leave it.
    fs::path rest = fs::path(path.substr(std::min(path.size(), kData.size() + 1))).lexically_normal();
    if (rest.empty() || rest.is_absolute() || rest.native().rfind("..", 0) == 0 || rest == ".")
      node.fail("\"{data}/<name>\" with a name inside lockstep's data folder, got \"" + input_excerpt(path) + "\"");
    return (fs::path(data_dir()) / rest).lexically_normal().string();
  }
  if (path.find('{') != std::string::npos || path.find('}') != std::string::npos)
    node.fail("a path relative to the config's folder, an absolute path, or \"{data}/<name>\" for a dataset "
              "lockstep fetches; got \"" + input_excerpt(path) + "\"");
  fs::path p(path);
  return (p.is_absolute() ? p : config_dir / p).lexically_normal().string();
}

}  // namespace

std::string missing_data_message(const DataConfig& d, const std::string& config_file) {
  std::string what = d.source == "images" ? "an existing image folder; " : "an existing data file; ";
  std::string msg = what + d.resolved_path + " does not exist";
  if (d.path.rfind("{data}", 0) == 0)
    return msg + " ({data} is $LOCKSTEP_DATA_DIR, else ~/.cache/lockstep/data: fetch lockstep's datasets with "
                 "ci/fetch-data.sh, or set LOCKSTEP_DATA_DIR)";
  msg += " (a relative path is read from the config's folder, " +
         fs::absolute(config_file).parent_path().lexically_normal().string() +
         "; commit the file there, or write \"{data}/<name>\" for a dataset lockstep fetches";
  std::error_code ec;
  if (!fs::path(d.path).is_absolute() && fs::exists(fs::path(data_dir()) / d.path, ec))
    msg += "; " + (fs::path(data_dir()) / d.path).string() + " exists: did you mean \"{data}/" + d.path + "\"?";
  return msg + ")";
}

namespace {

void read_data(const JsonView& d, DataConfig& c, const fs::path& config_dir) {
  d.allow_keys({"source", "path", "skip_rows", "label_column", "scale", "sample_shape", "batch_size",
                "workers", "shuffle", "drop_last", "augment", "probe_epochs", "synthetic", "image", "max_bytes",
                "max_line_bytes", "max_batches"});
  if (d.has("max_batches")) c.max_batches = d.at("max_batches").as_int(1, 10000000);
  for (const char* k : {"max_bytes", "max_line_bytes"})
    if (d.has(k) && d.at("source").raw() != "csv") d.at(k).fail(std::string("no ") + k + " for a source other than csv");
  // A smoke reads small data: the caps bound memory and time (data/csv_source.h).
  if (d.has("max_bytes")) c.max_bytes = static_cast<uint64_t>(d.at("max_bytes").as_int(1, int64_t{16} << 30));
  if (d.has("max_line_bytes"))
    c.max_line_bytes = static_cast<uint64_t>(d.at("max_line_bytes").as_int(16, int64_t{1} << 30));
  c.source = d.at("source").as_enum({"csv", "images", "synthetic"});
  if (c.source != "images" && d.has("image")) d.at("image").fail("no image section for source " + c.source);
  if (c.source == "synthetic") {
    for (const char* k : {"path", "skip_rows", "label_column", "scale"})
      if (d.has(k)) d.at(k).fail(std::string("no ") + k + " for a synthetic source (it reads no file)");
    JsonView s = d.at("synthetic");
    s.allow_keys({"kind", "rows", "vocab"});
    c.synthetic_kind = s.at("kind").as_enum({"tokens", "images", "tabular"});
    if (s.has("rows")) c.synthetic_rows = s.at("rows").as_int(1, 10000000);
    if (s.has("vocab")) {
      if (c.synthetic_kind != "tokens") s.at("vocab").fail("no vocab for kind " + c.synthetic_kind + " (tokens only)");
      c.synthetic_vocab = s.at("vocab").as_int(2, 1 << 24);
    }
  } else {
    if (d.has("synthetic")) d.at("synthetic").fail("no synthetic section for source " + c.source);
    if (c.source == "images") {
      for (const char* k : {"skip_rows", "label_column", "scale"})
        if (d.has(k)) d.at(k).fail(std::string("no ") + k + " for an image folder");
      JsonView im = d.at("image");
      im.allow_keys({"interpolation", "to_float", "manifest_sample"});
      c.interpolation =
          im.at("interpolation").as_enum({"nearest", "nearest_exact", "linear", "linear_exact", "area", "cubic"});
      if (im.has("to_float")) c.to_float = im.at("to_float").as_enum({"div", "mul"});
      if (im.has("manifest_sample")) c.manifest_sample = im.at("manifest_sample").as_int(0, 1 << 30);
    }
    c.path = d.at("path").as_string();
    if (c.path.empty()) d.at("path").fail("a file or folder");
    c.resolved_path = resolve_data_path(d.at("path"), c.path, config_dir);
  }
  if (d.has("skip_rows")) c.skip_rows = static_cast<int>(d.at("skip_rows").as_int(0, 1000000));
  if (d.has("label_column")) c.label_column = static_cast<int>(d.at("label_column").as_int(-100000, 100000));
  if (d.has("scale")) c.scale = d.at("scale").as_finite(-1e30, 1e30);
  JsonView shape = d.at("sample_shape");
  if (shape.size() == 0 || shape.size() > 4) shape.fail("1 to 4 dimensions");
  int64_t elements = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    c.loader.sample_shape.push_back(shape.at(i).as_int(1, 1 << 20));
    elements *= c.loader.sample_shape.back();
    // A smoke sample, not a dataset: at most 2^24 elements (64 MiB float32).
    if (elements > (int64_t{1} << 24))
      shape.fail("a sample of at most 2^24 elements (a smoke trains small samples)");
  }
  if (c.source == "synthetic") {
    size_t dims = c.synthetic_kind == "images" ? 3 : 1;
    if (c.loader.sample_shape.size() != dims)
      shape.fail(c.synthetic_kind == "tokens"   ? "[L] for synthetic tokens"
                 : c.synthetic_kind == "images" ? "[C, H, W] for synthetic images"
                                                : "[F] for synthetic tabular rows");
    if (c.synthetic_rows * elements > (int64_t{1} << 28))
      d.at("synthetic").at("rows").fail("a table of at most 2^28 values (1 GiB of float32); rows x sample "
                                        "elements is " + std::to_string(c.synthetic_rows * elements));
  }
  if (c.source == "images" && (c.loader.sample_shape.size() != 3 || (c.loader.sample_shape[0] != 1 && c.loader.sample_shape[0] != 3)))
    shape.fail("[C, H, W] with C = 1 (grey) or 3 (RGB) for an image folder");
  c.loader.batch_size = d.at("batch_size").as_int(1, 1 << 20);
  if (d.has("workers")) c.loader.workers = static_cast<int>(d.at("workers").as_int(0, 64));
  if (d.has("shuffle")) c.loader.shuffle = d.at("shuffle").as_bool();
  if (d.has("drop_last")) c.loader.drop_last = d.at("drop_last").as_bool();
  if (d.has("probe_epochs")) c.probe_epochs = d.at("probe_epochs").as_int(1, 1000);
  if (d.has("augment")) {
    JsonView a = d.at("augment");
    a.allow_keys({"shift", "flip", "noise_std", "normalize"});
    if (a.has("shift")) c.loader.augment.max_shift = static_cast<int>(a.at("shift").as_int(0, 64));
    if (a.has("flip")) c.loader.augment.flip = a.at("flip").as_bool();
    if (a.has("noise_std")) c.loader.augment.noise_std = a.at("noise_std").as_finite(0, 1e6);
    if (a.has("normalize")) {
      JsonView n = a.at("normalize");
      n.allow_keys({"mean", "std"});
      size_t channels = c.loader.sample_shape.size() == 3 ? static_cast<size_t>(c.loader.sample_shape[0]) : 0;
      for (const char* k : {"mean", "std"}) {
        JsonView list = n.at(k);
        if (list.size() != channels)
          list.fail("one value per channel (" + std::to_string(channels) + "), got " + std::to_string(list.size()));
        for (size_t i = 0; i < list.size(); ++i)
          (std::string(k) == "mean" ? c.loader.augment.mean : c.loader.augment.std)
              .push_back(std::string(k) == "mean" ? list.at(i).as_finite(-1e6, 1e6) : list.at(i).as_finite(1e-12, 1e6));
      }
    }
    if (c.loader.augment.enabled() && c.loader.sample_shape.size() != 3)
      a.fail("augmentation only for image samples: data.sample_shape must be [C, H, W]");
    if (c.synthetic_kind == "tokens") a.fail("no augmentation for token sequences");
  }
}

void read_model(const JsonView& m, SmokeConfig& c) {
  m.allow_keys({"name", "channels", "hidden", "dropout", "d_model", "heads", "ff", "path", "classes"});
  c.model.name = m.at("name").as_enum({"cnn", "mlp", "transformer", "torchscript"});
  // Each key belongs to some models; elsewhere it is a mistake, not a no-op.
  const std::map<std::string, std::vector<std::string>> owners = {
      {"channels", {"cnn"}}, {"hidden", {"mlp"}}, {"dropout", {"mlp", "transformer"}},
      {"d_model", {"transformer"}}, {"heads", {"transformer"}}, {"ff", {"transformer"}},
      {"path", {"torchscript"}}};
  for (const auto& [key, models] : owners)
    if (m.has(key) && std::find(models.begin(), models.end(), c.model.name) == models.end())
      m.at(key).fail("no " + key + " for model " + c.model.name);
  if (m.has("channels")) c.model.channels = m.at("channels").as_int(1, 4096);
  if (m.has("hidden")) c.model.hidden = m.at("hidden").as_int(1, 1 << 16);
  if (m.has("d_model")) c.model.d_model = m.at("d_model").as_int(1, 1 << 14);
  if (m.has("heads")) c.model.heads = m.at("heads").as_int(1, 256);
  if (m.has("ff")) c.model.ff = m.at("ff").as_int(1, 1 << 16);
  if (c.model.name == "cnn" &&
      (c.data.loader.sample_shape.size() != 3 || c.data.loader.sample_shape[1] < 2 || c.data.loader.sample_shape[2] < 2))
    m.at("name").fail("a model for the samples: cnn needs data.sample_shape [C, H, W] with H, W >= 2");
  if (c.model.name == "transformer") {
    if (c.data.loader.sample_shape.size() == 1 && c.data.loader.sample_shape[0] > 4096)
      m.at("name").fail("sequences of at most 4096 tokens for transformer (attention is quadratic in L)");
    if (c.model.d_model % c.model.heads != 0)
      m.at("heads").fail("a divisor of d_model (" + std::to_string(c.model.d_model) + ")");
    if (c.data.synthetic_kind != "tokens")
      m.at("name").fail("a model for the data: transformer needs data.source synthetic with kind \"tokens\"");
    c.model.vocab = c.data.synthetic_vocab;
  }
  if (c.data.synthetic_kind == "tokens" && c.model.name != "transformer" && c.model.name != "torchscript")
    m.at("name").fail("transformer (or torchscript) for token sequences");
  if (c.model.name == "torchscript") {
    std::string path = m.at("path").as_string();
    fs::path p(path);
    // Relative to the smoke config: the module is versioned with the smoke.
    c.model.path = p.is_absolute() ? path : (fs::absolute(c.file).parent_path() / p).lexically_normal().string();
  }
  if (m.has("dropout")) {
    c.model.dropout = m.at("dropout").as_finite(0, 1);
    if (c.model.dropout >= 1) m.at("dropout").fail("a probability in [0, 1)");
  }
  c.classes = m.at("classes").as_int(2, 100000);
}

void read_optimizer(const JsonView& o, OptimizerSpec& spec) {
  o.allow_keys({"name", "lr", "momentum", "nesterov", "weight_decay", "betas", "eps", "schedule"});
  spec.name = o.at("name").as_enum({"sgd", "adam", "adamw"});
  spec.schedule.base_lr = o.at("lr").as_finite(0, 1e3);
  bool sgd = spec.name == "sgd";
  for (const char* k : {"momentum", "nesterov"})
    if (!sgd && o.has(k)) o.at(k).fail(std::string("no ") + k + " for " + spec.name + " (sgd only)");
  for (const char* k : {"betas", "eps"})
    if (sgd && o.has(k)) o.at(k).fail(std::string("no ") + k + " for sgd (adam and adamw only)");
  spec.momentum = sgd ? 0.9 : 0.0;
  if (o.has("momentum")) spec.momentum = o.at("momentum").as_finite(0, 1);
  if (o.has("nesterov")) {
    spec.nesterov = o.at("nesterov").as_bool();
    if (spec.nesterov && spec.momentum <= 0) o.at("nesterov").fail("false unless momentum > 0 (torch.optim.SGD)");
  }
  if (o.has("weight_decay")) spec.weight_decay = o.at("weight_decay").as_finite(0, 1);
  if (o.has("betas")) {
    JsonView b = o.at("betas");
    if (b.size() != 2) b.fail("two coefficients [beta1, beta2]");
    spec.beta1 = b.at(0).as_finite(0, 1);
    spec.beta2 = b.at(1).as_finite(0, 1);
    if (spec.beta1 >= 1) b.at(0).fail("a value in [0, 1)");
    if (spec.beta2 >= 1) b.at(1).fail("a value in [0, 1)");
  }
  if (o.has("eps")) spec.eps = o.at("eps").as_finite(0, 1);
  if (o.has("schedule")) {
    JsonView s = o.at("schedule");
    s.allow_keys({"name", "warmup_steps", "step_size", "gamma"});
    std::string name = s.at("name").as_enum({"constant", "warmup", "step"});
    LrSchedule& l = spec.schedule;
    l.kind = name == "warmup" ? LrSchedule::Kind::kWarmup
             : name == "step" ? LrSchedule::Kind::kStep : LrSchedule::Kind::kConstant;
    auto only = [&](const char* key, LrSchedule::Kind kind) {
      if (s.has(key) && l.kind != kind) s.at(key).fail(std::string("no ") + key + " for schedule " + name);
    };
    only("warmup_steps", LrSchedule::Kind::kWarmup);
    only("step_size", LrSchedule::Kind::kStep);
    only("gamma", LrSchedule::Kind::kStep);
    if (l.kind == LrSchedule::Kind::kWarmup) l.warmup_steps = s.at("warmup_steps").as_int(1, 1000000);
    if (l.kind == LrSchedule::Kind::kStep) {
      l.step_size = s.at("step_size").as_int(1, 1000000);
      l.gamma = s.at("gamma").as_finite(0, 1);
    }
  }
}

// A list of command-line arguments: strings, at most 4096 of them.
std::vector<std::string> read_args(const JsonView& list, bool nonempty) {
  list.expect_array();
  if (nonempty && list.size() == 0) list.fail("a non-empty list of arguments");
  if (list.size() > 4096) list.fail("at most 4096 arguments");
  std::vector<std::string> out;
  for (size_t i = 0; i < list.size(); ++i) {
    out.push_back(list.at(i).as_string());
    if (out.back().find('\0') != std::string::npos) list.at(i).fail("an argument without NUL bytes");
  }
  return out;
}

// Placeholders an argument may hold; anything else in braces is a typo.
// {resume_at} and {checkpoint} belong to trainer.resume, {workers} to a
// trainer with a `workers` list.
void check_placeholders(const JsonView& node, const std::string& text, bool resume, bool workers) {
  static const std::vector<std::string> names = {"steps", "seed", "out", "data", "config_dir", "rank"};
  for (size_t open = text.find('{'); open != std::string::npos; open = text.find('{', open + 1)) {
    size_t close = text.find('}', open);
    if (close == std::string::npos) node.fail("a closed placeholder such as {out}, got \"" + input_excerpt(text) + "\"");
    std::string name = text.substr(open + 1, close - open - 1);
    if (name == "workers" && !workers)
      node.fail("{workers} only with a trainer.workers list (the DataLoader worker counts to run the data-only "
                "pass at), got \"" + input_excerpt(text) + "\"");
    bool known = std::find(names.begin(), names.end(), name) != names.end() || (workers && name == "workers") ||
                 (resume && (name == "resume_at" || name == "checkpoint"));
    if (!known)
      node.fail("placeholders {steps}, {seed}, {out}, {data}, {config_dir}, {rank}" +
                std::string(workers ? ", {workers}" : "") +
                std::string(resume ? ", {resume_at}, {checkpoint}" : "") + ", got {" + name + "}");
  }
}

// A distribution name as PEP 503 normalises it: lower case, runs of -_. as "-".
std::string normalized_distribution(const std::string& name) {
  std::string out;
  for (char ch : name) {
    if (ch == '-' || ch == '_' || ch == '.') {
      if (out.empty() || out.back() != '-') out += '-';
    } else {
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    }
  }
  return out;
}

// trainer.workers: 1 to 8 distinct DataLoader worker counts, 0 to 64 each.
std::vector<int> read_worker_counts(const JsonView& list) {
  list.expect_array();
  if (list.size() == 0 || list.size() > 8) list.fail("1 to 8 DataLoader worker counts, e.g. [2, 0]");
  std::vector<int> out;
  for (size_t i = 0; i < list.size(); ++i) {
    int w = static_cast<int>(list.at(i).as_int(0, 64));
    if (std::find(out.begin(), out.end(), w) != out.end())
      list.at(i).fail("a worker count not already in the list (" + std::to_string(w) + " is)");
    out.push_back(w);
  }
  return out;
}

// trainer.packages: {"relevant": [names], "informational": [names]}.
void read_packages(const JsonView& p, TrainerConfig& tc) {
  p.allow_keys({"relevant", "informational"});
  for (const char* kind : {"relevant", "informational"}) {
    if (!p.has(kind)) continue;
    JsonView list = p.at(kind);
    list.expect_array();
    if (list.size() > 4096) list.fail("at most 4096 distribution names");
    auto& into = std::string(kind) == "relevant" ? tc.packages_relevant : tc.packages_informational;
    for (size_t i = 0; i < list.size(); ++i) {
      std::string name = list.at(i).as_string();
      // PEP 508: letters, digits, '-', '_' and '.', starting and ending with a letter or digit.
      bool ok = !name.empty() && name.size() <= 200 && std::isalnum(static_cast<unsigned char>(name.front())) &&
                std::isalnum(static_cast<unsigned char>(name.back()));
      for (char ch : name) ok = ok && (std::isalnum(static_cast<unsigned char>(ch)) || ch == '-' || ch == '_' || ch == '.');
      if (!ok) list.at(i).fail("a Python distribution name such as \"scikit-learn\", got \"" + input_excerpt(name) + "\"");
      std::string normal = normalized_distribution(name);
      if (std::find(into.begin(), into.end(), normal) != into.end())
        list.at(i).fail("a distribution named once; \"" + normal + "\" is already listed");
      into.push_back(normal);
    }
  }
  for (const auto& n : tc.packages_relevant)
    if (std::find(tc.packages_informational.begin(), tc.packages_informational.end(), n) !=
        tc.packages_informational.end())
      p.fail("a distribution in one list only; \"" + n + "\" is both relevant and informational");
}

// A path the trainer writes into its {out}: no NUL byte, and not a file
// of lockstep's own there (the process's logs, the helper's report, the
// module trace), which the trainer would overwrite or lockstep misread.
void require_own_output_path(const JsonView& node, const std::string& path) {
  if (path.find('\0') != std::string::npos) node.fail("a path without NUL bytes");
  static const std::vector<std::string> own = {"stdout.log", "stderr.log", "lockstep-trainer.json",
                                               "module_trace.jsonl"};
  for (const auto& name : own)
    if (path == "{out}/" + name)
      node.fail("a file of the trainer's own under {out}; " + name + " there is lockstep's (the process's log, "
                "the helper's report or module trace)");
}

void read_trainer(const JsonView& t, SmokeConfig& c) {
  TrainerConfig& tc = c.trainer;
  t.allow_keys({"command", "cwd", "timeout_s", "metrics", "probes", "data_only", "workers", "resume", "env",
                "packages"});
  if (t.has("workers")) tc.workers = read_worker_counts(t.at("workers"));
  const bool workers = !tc.workers.empty();
  JsonView cmd = t.at("command");
  tc.command = read_args(cmd, true);
  for (size_t i = 0; i < tc.command.size(); ++i) check_placeholders(cmd.at(i), tc.command[i], false, workers);
  if (tc.command.front().empty()) cmd.at(0).fail("a program name or path");
  fs::path config_dir = fs::absolute(c.file).parent_path();
  if (t.has("cwd")) {
    tc.cwd = t.at("cwd").as_string();
    if (tc.cwd.find('\0') != std::string::npos || tc.cwd.find_first_of("{}") != std::string::npos)
      t.at("cwd").fail("a folder without NUL bytes or placeholders (relative to the config's folder), got \"" +
                       input_excerpt(tc.cwd) + "\"");
  }
  fs::path cwd(tc.cwd);
  tc.resolved_cwd = (cwd.is_absolute() ? cwd : config_dir / cwd).lexically_normal().string();
  if (t.has("timeout_s")) tc.timeout_s = t.at("timeout_s").as_int(1, 7 * 24 * 3600);
  JsonView m = t.at("metrics");
  m.allow_keys({"format", "path", "series", "step", "mllog_step"});
  tc.metrics_format = m.at("format").as_enum({"tensorboard", "jsonl", "mllog", "csv"});
  tc.metrics_path = m.at("path").as_string();
  if (tc.metrics_path.empty()) m.at("path").fail("a file or folder");
  check_placeholders(m.at("path"), tc.metrics_path, false, workers);
  require_own_output_path(m.at("path"), tc.metrics_path);
  // Each process writes into its own folder: a fixed path would be shared
  // by the data-only and training passes, and by the runs of one check.
  if (tc.metrics_path.find("{out}") == std::string::npos)
    m.at("path").fail("a path under {out} (each trainer process's own output folder), e.g. \"{out}/metrics.jsonl\"");
  JsonView series = m.at("series");
  series.expect_object();
  if (series.keys().empty()) series.fail("at least one series, e.g. {\"loss\": \"train/loss\"}");
  for (const auto& k : series.keys()) {
    if (k.empty() || k.size() > 200 || k.find_first_of(" \t\n\"") != std::string::npos)
      series.at(k).fail("a series name without spaces or quotes (1 to 200 characters)");
    tc.series[k] = series.at(k).as_string();
    if (tc.series[k].empty() || tc.series[k].find('\0') != std::string::npos)
      series.at(k).fail("the tag, key or column to read (no NUL bytes)");
  }
  if (m.has("step")) {
    if (tc.metrics_format != "jsonl" && tc.metrics_format != "csv")
      m.at("step").fail("no step key for format " + tc.metrics_format + " (jsonl and csv only)");
    tc.step_key = m.at("step").as_string();
    if (tc.step_key.find('\0') != std::string::npos) m.at("step").fail("a step field name without NUL bytes");
  }
  if (m.has("mllog_step")) {
    if (tc.metrics_format != "mllog") m.at("mllog_step").fail("no mllog_step for format " + tc.metrics_format);
    tc.mllog_step = m.at("mllog_step").as_enum({"epoch_num", "samples_count", "step"});
  }
  if (t.has("probes")) {
    tc.probes = t.at("probes").as_string();
    check_placeholders(t.at("probes"), tc.probes, false, workers);
    require_own_output_path(t.at("probes"), tc.probes);
    if (tc.probes == tc.metrics_path)
      t.at("probes").fail("a file other than trainer.metrics.path (" + input_excerpt(tc.metrics_path) + ")");
    if (tc.probes.find("{out}") == std::string::npos)
      t.at("probes").fail("a path under {out} (each trainer process's own output folder), e.g. \"{out}/probes.jsonl\"");
  }
  // The data-only pass runs whenever the trainer writes probes; its own
  // arguments may be none ([]: the trainer reads LOCKSTEP_PASS=data).
  if (t.has("data_only")) {
    tc.data_only = read_args(t.at("data_only"), false);
    if (tc.probes.empty()) t.at("data_only").fail("a \"probes\" file beside it (the data-only pass writes probes)");
    for (size_t i = 0; i < tc.data_only.size(); ++i)
      check_placeholders(t.at("data_only").at(i), tc.data_only[i], false, workers);
  }
  if (workers) {
    if (tc.probes.empty())
      t.at("workers").fail("a \"probes\" file beside it (the data-only passes at each worker count compare "
                           "their batches)");
    bool used = false;
    for (const auto* args : {&tc.command, &tc.data_only})
      for (const auto& a : *args) used = used || a.find("{workers}") != std::string::npos;
    if (!used)
      t.at("workers").fail("{workers} in command or data_only (how the trainer is told its DataLoader's "
                           "num_workers; without it every pass would run the same count)");
  }
  if (t.has("resume")) {
    JsonView r = t.at("resume");
    r.allow_keys({"stop", "continue"});
    tc.resume_stop = read_args(r.at("stop"), true);
    tc.resume_continue = read_args(r.at("continue"), true);
    for (size_t i = 0; i < tc.resume_stop.size(); ++i)
      check_placeholders(r.at("stop").at(i), tc.resume_stop[i], true, workers);
    for (size_t i = 0; i < tc.resume_continue.size(); ++i)
      check_placeholders(r.at("continue").at(i), tc.resume_continue[i], true, workers);
  }
  if (t.has("packages")) read_packages(t.at("packages"), tc);
  if (t.has("env")) {
    JsonView e = t.at("env");
    e.expect_object();
    for (const auto& k : e.keys()) {
      if (k.empty() || k.find('=') != std::string::npos || k.find('\0') != std::string::npos)
        e.at(k).fail("an environment variable name (no '=', no NUL)");
      static const std::vector<std::string> contract_vars = {"OMP_NUM_THREADS", "MKL_NUM_THREADS", "PYTHONHASHSEED",
                                                             "TZ", "LC_ALL", "CUBLAS_WORKSPACE_CONFIG"};
      if (k.rfind("LOCKSTEP_", 0) == 0 ||
          std::find(contract_vars.begin(), contract_vars.end(), k) != contract_vars.end())
        e.at(k).fail("a variable lockstep does not set itself (LOCKSTEP_*, OMP_NUM_THREADS, MKL_NUM_THREADS, "
                     "PYTHONHASHSEED, TZ, LC_ALL and CUBLAS_WORKSPACE_CONFIG carry the contract)");
      tc.env[k] = e.at(k).as_string();
      if (tc.env[k].find('\0') != std::string::npos) e.at(k).fail("a value without NUL bytes");
    }
  }
}

// Tolerance keys must name a series the trainer records or a probe
// statistic: a typo would otherwise silently leave the default in force.
void check_tolerance_names(const JsonView& t, const SmokeConfig& c) {
  std::vector<std::string> series = {"default", "loss", "grad_norm", "grad_norm/*", "param_norm", "lr"};
  if (c.has_trainer()) {
    series = {"default"};
    for (const auto& [name, tag] : c.trainer.series) series.push_back(name);
  }
  static const std::vector<std::string> stats = {"sum", "mean", "std", "min", "max"};
  if (t.has("series")) {
    for (const auto& k : t.at("series").keys()) {
      if (c.has_trainer()) {
        if (std::find(series.begin(), series.end(), k) != series.end()) continue;
        std::string hint = closest_spelling(k, series);
        std::string names;
        for (const auto& n : series) names += (names.empty() ? "" : ", ") + n;
        t.at("series").at(k).fail("a series of trainer.metrics.series: " + names +
                                  (hint.empty() ? std::string() : " (did you mean '" + hint + "'?)"));
      }
      if (std::find(series.begin(), series.end(), k) != series.end() || k.rfind("grad_norm/", 0) == 0) continue;
      std::string hint = closest_spelling(k, series);
      t.at("series").at(k).fail("a recorded series: default, loss, grad_norm, grad_norm/<parameter>, grad_norm/*, "
                                "param_norm or lr" + (hint.empty() ? std::string() : " (did you mean '" + hint + "'?)"));
    }
  }
  if (t.has("probes")) {
    std::vector<std::string> fields = {"default"};
    for (const char* part : {"inputs", "labels", "module"})  // module.<stat>: module traces (docs/module-trace.md)
      for (const auto& s : stats) fields.push_back(std::string(part) + "." + s);
    for (const auto& k : t.at("probes").keys()) {
      if (std::find(fields.begin(), fields.end(), k) != fields.end()) continue;
      std::string hint = closest_spelling(k, fields);
      t.at("probes").at(k).fail("default or inputs|labels|module.sum|mean|std|min|max" +
                                (hint.empty() ? std::string() : " (did you mean '" + hint + "'?)"));
    }
  }
}

// The "distributed" section (spec/distributed_spec.h).
void read_distributed(const JsonView& d, SmokeConfig& c) {
  d.allow_keys({"world_size", "backend", "timeout_s", "self_test"});
  DistributedSpec& s = c.distributed;
  s.configured = true;
  s.world_size = static_cast<int>(d.at("world_size").as_int(1, 64));
  if (d.has("backend")) s.backend = d.at("backend").as_enum({"gloo", "nccl"});
  else s.backend = c.device == "cuda" ? "nccl" : "gloo";
  if (s.backend == "nccl" && c.device != "cuda")
    d.at("backend").fail("\"gloo\" with device \"cpu\" (NCCL runs on CUDA devices only)");
  if (s.backend == "gloo" && c.device == "cuda")
    d.at("backend").fail("\"nccl\" with device \"cuda\" (lockstep runs Gloo on the CPU only)");
  if (d.has("timeout_s")) s.timeout_s = d.at("timeout_s").as_int(1, 86400);
  if (d.has("self_test")) {
    JsonView t = d.at("self_test");
    t.allow_keys({"fault", "rank", "step"});
    s.self_test.fault = t.at("fault").as_enum({"skip_allreduce", "nan_loss", "kill", "hang"});
    s.self_test.rank = static_cast<int>(t.at("rank").as_int(0, s.world_size - 1));
    s.self_test.step = t.at("step").as_int(0, c.steps - 1);
    if (c.has_trainer())
      t.fail("no self_test beside \"trainer\": the faults are injected by lockstep's built-in trainer "
             "(a team trainer proves its own checks, e.g. with a bug switch)");
  }
}

// The "trace" section (spec/train_specs.h TraceSpec, docs/module-trace.md).
void read_trace(const JsonView& t, SmokeConfig& c) {
  t.allow_keys({"steps", "self_test"});
  TraceSpec& s = c.trace;
  if (t.has("steps")) s.steps = t.at("steps").as_int(0, std::min<int64_t>(kMaxTraceSteps, c.steps));
  if (t.has("self_test")) {
    JsonView st = t.at("self_test");
    st.allow_keys({"module", "step", "phase"});
    s.self_test_module = st.at("module").as_string();
    if (s.self_test_module.empty() || s.self_test_module.size() > 256)
      st.at("module").fail("a module path of 1 to 256 characters (e.g. \"conv\")");
    if (s.steps == 0) t.at("steps").fail("at least 1 with a self_test (it perturbs a traced step)");
    s.self_test_step = st.at("step").as_int(0, s.steps - 1);
    if (st.has("phase"))
      s.self_test_phase = st.at("phase").as_enum({"forward", "backward"}) == "forward" ? TracePhase::kForward
                                                                                      : TracePhase::kBackward;
    if (c.has_trainer())
      st.fail("no self_test beside \"trainer\": the one-ULP perturbation is made by lockstep's built-in trainer");
  }
}

// values_json() leaves by JSON path, for SmokeConfig::values_fields.
void flatten_into(const nlohmann::json& node, const std::string& path, std::map<std::string, std::string>& out) {
  if (!node.is_object()) {
    out[path] = canonical_dump(node);
    return;
  }
  for (const auto& [key, value] : node.items()) flatten_into(value, path.empty() ? key : path + "." + key, out);
}

}  // namespace

SmokeConfig load_smoke_config(const std::string& path) {
  nlohmann::json doc = parse_json_file(path);
  JsonView v(doc, path);
  v.expect_object();
  v.allow_keys({"schema", "name", "device", "min_driver", "seed", "steps", "determinism", "repeat", "platforms",
                "data", "model", "optimizer", "trainer", "tolerance", "resume_at", "inject_nondeterminism", "distributed", "trace"});
  if (v.has("schema") && v.at("schema").as_int() != 1) v.at("schema").fail("1 (the only config schema)");

  SmokeConfig c;
  c.file = path;
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
  if (v.has("platforms")) {
    JsonView p = v.at("platforms");
    for (size_t i = 0; i < p.size(); ++i) {
      std::string key = p.at(i).as_string();
      if (key.empty() || key.find_first_of("/\\") != std::string::npos || key.front() == '.')
        p.at(i).fail("a platform key such as \"cpu-x86_64-avx2\" (docs/platforms.md)");
      c.platforms.push_back(key);
    }
  }

  if (v.has("determinism")) {
    JsonView d = v.at("determinism");
    d.allow_keys({"mode", "intra_op_threads", "inter_op_threads"});
    if (d.has("mode")) c.mode = d.at("mode").as_enum({"strict", "default"});
    if (d.has("intra_op_threads")) c.intra_op_threads = static_cast<int>(d.at("intra_op_threads").as_int(1, 1024));
    if (d.has("inter_op_threads")) c.inter_op_threads = static_cast<int>(d.at("inter_op_threads").as_int(1, 1024));
  }

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
        v.at("inject_nondeterminism").as_enum({"index_put_accumulate", "worker_seeded_augment"});

  if (v.has("distributed")) read_distributed(v.at("distributed"), c);
  // Each rank of a team trainer stops and resumes its own state (its
  // generators, its sampler position): one shared checkpoint path would
  // have the ranks overwrite one file, or resume from another's.
  if (c.distributed.configured && c.has_trainer() && !c.trainer.resume_stop.empty())
    for (const char* part : {"stop", "continue"}) {
      JsonView args = v.at("trainer").at("resume").at(part);
      bool has_rank = false;
      for (size_t i = 0; i < args.size(); ++i) {
        std::string a = args.at(i).as_string();
        has_rank = has_rank || a.find("{rank}") != std::string::npos;
        if (a.find("{checkpoint}") != std::string::npos && a.find("{rank}") == std::string::npos)
          args.at(i).fail("{rank} beside {checkpoint} in a multi-rank smoke (each rank saves and resumes its own "
                          "file, e.g. \"{checkpoint}.rank-{rank}\"), got \"" + input_excerpt(a) + "\"");
      }
      if (!has_rank)
        args.fail("an argument with {rank} in a multi-rank smoke, the path of each rank's own checkpoint (e.g. "
                  "\"{checkpoint}.rank-{rank}\"): one path shared by the ranks would have them overwrite one file");
    }
  if (v.has("trace")) read_trace(v.at("trace"), c);

  if (v.has("tolerance")) {
    c.tolerance = tolerance_policy_from_json(v.at("tolerance"));
    check_tolerance_names(v.at("tolerance"), c);
  }
  c.data.loader.augment.worker_seeded = c.inject_nondeterminism == "worker_seeded_augment";
  c.config_hash = hex64(xxh3_64(canonical_dump(doc)));
  nlohmann::json values = values_json(c);
  c.values_hash = hex64(xxh3_64(canonical_dump(values)));
  flatten_into(values, "", c.values_fields);
  return c;
}

namespace {

// The trainer section as an input of the run: everything but the timeout.
nlohmann::json trainer_values(const TrainerConfig& t) {
  return {{"command", t.command},
          {"cwd", t.cwd},
          {"metrics", {{"format", t.metrics_format}, {"path", t.metrics_path}, {"series", t.series},
                       {"step", t.step_key}, {"mllog_step", t.mllog_step}}},
          {"probes", t.probes},
          {"data_only", t.data_only},
          {"resume", {{"stop", t.resume_stop}, {"continue", t.resume_continue}}},
          {"env", t.env}};
}

}  // namespace

nlohmann::json values_json(const SmokeConfig& c) {
  if (c.has_trainer())
    return {{"device", c.device}, {"seed", c.seed}, {"steps", c.steps}, {"mode", c.mode},
            {"intra_op_threads", c.intra_op_threads}, {"inter_op_threads", c.inter_op_threads},
            {"trainer", trainer_values(c.trainer)}};
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
  nlohmann::json out = {{"device", c.device}, {"seed", c.seed}, {"steps", c.steps}, {"mode", c.mode},
                        {"intra_op_threads", c.intra_op_threads}, {"inter_op_threads", c.inter_op_threads},
                        {"data", data}, {"model", model}, {"optimizer", optimizer},
                        {"inject_nondeterminism", c.inject_nondeterminism}};
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

int processes_per_run(const SmokeConfig& c) {
  const int ranks = c.distributed.configured ? std::max(1, c.distributed.world_size) : 1;
  if (!c.has_trainer()) return ranks;
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
  return config;
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
