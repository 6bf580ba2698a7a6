// A built-in smoke's sections: "data", "model", "optimizer"
// (smoke/config_sections.h).
#include "smoke/config_sections.h"

#include <algorithm>
#include <charconv>
#include <cctype>
#include <cstdlib>
#include <filesystem>

#include "core/error.h"
#include "core/hash.h"
#include "core/json_io.h"
#include "machine/driver_version.h"
#include "smoke/config_keys.h"
#include "smoke/golden_store.h"

namespace lockstep {
namespace fs = std::filesystem;

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

// data.source and what it reads: the synthetic section, or the file or
// image folder (data.path, resolved) and the image section.
void read_source(const JsonView& d, DataConfig& c, const fs::path& config_dir) {
  c.source = d.at("source").as_enum({"csv", "images", "synthetic"});
  if (c.source != "images" && d.has("image")) d.at("image").fail("no image section for source " + c.source);
  if (c.source == "synthetic") {
    for (const char* k : {"path", "skip_rows", "label_column", "scale"})
      if (d.has(k)) d.at(k).fail(std::string("no ") + k + " for a synthetic source (it reads no file)");
    JsonView s = d.at("synthetic");
    s.allow_keys(keys_under("data.synthetic"));
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
      im.allow_keys(keys_under("data.image"));
      c.interpolation =
          im.at("interpolation").as_enum({"nearest", "nearest_exact", "linear", "linear_exact", "area", "cubic"});
      if (im.has("to_float")) c.to_float = im.at("to_float").as_enum({"div", "mul"});
      if (im.has("manifest_sample")) c.manifest_sample = im.at("manifest_sample").as_int(0, 1 << 30);
    }
    c.path = d.at("path").as_string();
    if (c.path.empty()) d.at("path").fail("a file or folder");
    c.resolved_path = resolve_data_path(d.at("path"), c.path, config_dir);
  }
}

}  // namespace

void read_data(const JsonView& d, DataConfig& c, const fs::path& config_dir) {
  d.allow_keys(keys_under("data"));
  if (d.has("max_batches")) c.max_batches = d.at("max_batches").as_int(1, 10000000);
  for (const char* k : {"max_bytes", "max_line_bytes"})
    if (d.has(k) && d.at("source").raw() != "csv") d.at(k).fail(std::string("no ") + k + " for a source other than csv");
  // A smoke reads small data: the caps bound memory and time (data/csv_source.h).
  if (d.has("max_bytes")) c.max_bytes = static_cast<uint64_t>(d.at("max_bytes").as_int(1, int64_t{16} << 30));
  if (d.has("max_line_bytes"))
    c.max_line_bytes = static_cast<uint64_t>(d.at("max_line_bytes").as_int(16, int64_t{1} << 30));
  read_source(d, c, config_dir);
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
    a.allow_keys(keys_under("data.augment"));
    if (a.has("shift")) c.loader.augment.max_shift = static_cast<int>(a.at("shift").as_int(0, 64));
    if (a.has("flip")) c.loader.augment.flip = a.at("flip").as_bool();
    if (a.has("noise_std")) c.loader.augment.noise_std = a.at("noise_std").as_finite(0, 1e6);
    if (a.has("normalize")) {
      JsonView n = a.at("normalize");
      n.allow_keys(keys_under("data.augment.normalize"));
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
  m.allow_keys(keys_under("model"));
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
  o.allow_keys(keys_under("optimizer"));
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
  if (o.has("micro_batches")) spec.micro_batches = o.at("micro_batches").as_int(1, 4096);
  if (o.has("schedule")) {
    JsonView s = o.at("schedule");
    s.allow_keys(keys_under("optimizer.schedule"));
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

}  // namespace lockstep
