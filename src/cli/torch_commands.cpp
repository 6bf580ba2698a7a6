// The subcommands that run LibTorch in this process: run, probe, env.
// (check and bless start `lockstep run` children; see child_runs.h.)
#include <torch/torch.h>

#include <charconv>
#include <cstdlib>
#include <filesystem>
#include <iostream>

#include "cli/child_runs.h"
#include "cli/commands.h"
#include "cli/golden_store.h"
#include "cli/progress_bar.h"
#include "cli/smoke_config.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "core/float_bits.h"
#include "core/hash.h"
#include "core/json_io.h"
#include "data/loader.h"
#include "data/image_folder.h"
#include "data/probe.h"
#include "data/synthetic_source.h"
#include "determinism/contract.h"
#include "determinism/seed_streams.h"
#include "env/cuda_preflight.h"
#include "env/driver_version.h"
#include "env/fingerprint_capture.h"
#include "record/golden.h"
#include "record/platform_key.h"
#include "train/trainer.h"

namespace lockstep {
namespace fs = std::filesystem;

namespace {

// The base seed: the config's, or LOCKSTEP_SEED (recorded as an override).
std::pair<uint64_t, bool> base_seed(const SmokeConfig& cfg) {
  const char* env = std::getenv("LOCKSTEP_SEED");
  if (!env || !*env) return {cfg.seed, false};
  uint64_t v = 0;
  std::string s = env;
  auto res = std::from_chars(s.data(), s.data() + s.size(), v);
  if (res.ec != std::errc() || res.ptr != s.data() + s.size())
    throw BadUsage("LOCKSTEP_SEED=" + s + ": expected an unsigned 64-bit integer");
  return {v, v != cfg.seed};  // the config's own seed is no override
}

// `min_driver` (cuda runs only): the NVIDIA driver must be at least that.
void preflight_driver(const SmokeConfig& cfg) {
  if (cfg.device != "cuda" || cfg.min_driver.empty()) return;
  std::string why;
  std::string have = nvidia_driver_version(&why);
  if (have.empty()) have = kernel_module_driver_version();  // no NVML in the container
  if (have.empty())
    throw EnvironmentError(cfg.file + ": min_driver is " + cfg.min_driver +
                           " but the NVIDIA driver version cannot be read: " + why +
                           ", and /proc/driver/nvidia/version is unreadable (a container needs "
                           "NVIDIA_DRIVER_CAPABILITIES with `utility` for NVML)");
  if (!is_dotted_version(have))
    throw EnvironmentError(cfg.file + ": the NVIDIA driver reports version \"" + have +
                           "\", which cannot be compared with min_driver " + cfg.min_driver);
  if (!version_at_least(have, cfg.min_driver))
    throw EnvironmentError(cfg.file + ": the NVIDIA driver is " + have + ", older than min_driver " +
                           cfg.min_driver);
}

LoaderSpec loader_spec(const SmokeConfig& cfg, const RunOverrides& o) {
  LoaderSpec spec;
  spec.sample_shape = cfg.data.sample_shape;
  spec.batch_size = cfg.data.batch_size;
  spec.workers = o.workers >= 0 ? o.workers : cfg.data.workers;
  spec.shuffle = cfg.data.shuffle;
  spec.drop_last = cfg.data.drop_last;
  spec.augment.max_shift = cfg.data.augment_shift;
  spec.augment.noise_std = cfg.data.augment_noise_std;
  spec.augment.flip = cfg.data.augment_flip;
  spec.augment.mean = cfg.data.normalize_mean;
  spec.augment.std = cfg.data.normalize_std;
  spec.augment.worker_seeded = cfg.inject_nondeterminism == "worker_seeded_augment";
  return spec;
}

std::shared_ptr<const CsvTable> load_table(const SmokeConfig& cfg, uint64_t seed) {
  if (cfg.data.source == "synthetic") {
    SyntheticOptions o;
    o.kind = cfg.data.synthetic_kind == "tokens"   ? SyntheticOptions::Kind::kTokens
             : cfg.data.synthetic_kind == "images" ? SyntheticOptions::Kind::kImages
                                                   : SyntheticOptions::Kind::kTabular;
    o.rows = cfg.data.synthetic_rows;
    o.vocab = cfg.data.synthetic_vocab;
    return std::make_shared<CsvTable>(make_synthetic(o, cfg.data.sample_shape, cfg.classes, seed));
  }
  if (cfg.data.source == "images") {
    ImageFolder f = read_image_folder({cfg.data.resolved_path, cfg.data.sample_shape, cfg.data.interpolation,
                                       cfg.data.to_float, cfg.data.manifest_sample});
    if (f.table.num_classes > cfg.classes)
      throw BadInput(cfg.file, "model.classes",
                     "at least " + std::to_string(f.table.num_classes) + " (the class folders in " + cfg.data.path + ")");
    return std::make_shared<CsvTable>(std::move(f.table));
  }
  std::error_code ec;
  if (!fs::exists(cfg.data.resolved_path, ec))
    throw BadInput(cfg.file, "data.path",
                   "an existing data file; " + cfg.data.resolved_path +
                       " does not exist (run ci/fetch-data.sh, or set LOCKSTEP_DATA_DIR)");
  auto table = std::make_shared<CsvTable>(read_csv(
      {cfg.data.resolved_path, cfg.data.skip_rows, cfg.data.label_column, cfg.data.scale}));
  int64_t per_sample = 1;
  for (int64_t d : cfg.data.sample_shape) per_sample *= d;
  if (per_sample != table->features)
    throw BadInput(cfg.file, "data.sample_shape",
                   "a shape of " + std::to_string(table->features) + " elements (the CSV has " +
                       std::to_string(table->features) + " features), got " + std::to_string(per_sample));
  if (table->num_classes > cfg.classes)
    throw BadInput(cfg.file, "model.classes",
                   "at least " + std::to_string(table->num_classes) + " (the largest label in " +
                       cfg.data.path + " is " + std::to_string(table->num_classes - 1) + ")");
  return table;
}

// Shared by run and probe: contract, data pass, optional training, record.
int run_smoke(const RunOptions& o, bool train) {
  SmokeConfig cfg = load_smoke_config(o.smoke);
  refuse_overwriting_inputs(o.out, {o.smoke, cfg.data.resolved_path, o.resume});
  refuse_overwriting_inputs(o.checkpoint, {o.smoke, cfg.data.resolved_path});
  if (o.stop_after >= cfg.steps)
    throw BadUsage("--stop-after " + std::to_string(o.stop_after) + ": must be below the " +
                   std::to_string(cfg.steps) + " steps of " + o.smoke);
  // Only bless writes goldens: a record must not land in the goldens folder.
  std::string goldens = fs::weakly_canonical(goldens_root(o.smoke, "")).string() + "/";
  if (!o.out.empty() && fs::weakly_canonical(fs::absolute(o.out)).string().rfind(goldens, 0) == 0)
    throw BadUsage(o.out + ": refusing to write a run record into the goldens folder " + goldens +
                   " (goldens are written only by `lockstep bless`)");
  auto [seed, overridden] = base_seed(cfg);
  preflight_driver(cfg);
  if (cfg.device == "cuda")
    if (std::string why = cuda_unusable_reason(); !why.empty())
      throw EnvironmentError(cfg.file + ": device is \"cuda\" but CUDA is not usable: " + why +
                             " (lockstep never falls back to the CPU)");

  DeterminismSettings settings{cfg.mode,
                               o.overrides.intra_op_threads > 0 ? o.overrides.intra_op_threads
                                                                : cfg.intra_op_threads,
                               cfg.inter_op_threads};
  auto contract = apply_determinism_contract(settings);
  // Safety net: anything that still draws from the global generator gets a
  // seeded one. lockstep's own code never does.
  torch::manual_seed(derive_seed(seed, "global"));

  auto table = load_table(cfg, seed);
  LoaderSpec spec = loader_spec(cfg, o.overrides);

  RunRecord rec;
  SmokeLoader probe_loader(table, spec, seed);
  if (probe_loader.batches_per_epoch() == 0)
    throw BadInput(cfg.file, "data.batch_size",
                   "at most the dataset's " + std::to_string(table->rows) +
                       " samples (data.drop_last drops a partial batch, so no batch would remain), got " +
                       std::to_string(spec.batch_size));
  ProgressBar bar("probe " + cfg.name, cfg.data.probe_epochs * probe_loader.batches_per_epoch());
  for (int64_t e = 0; e < cfg.data.probe_epochs; ++e)
    probe_loader.run_epoch(static_cast<uint64_t>(e), [&](int64_t, SmokeBatch& b) {
      rec.probes.push_back(probe_batch(static_cast<int64_t>(rec.probes.size()), b.inputs, b.labels, b.indices));
      bar.update(static_cast<int64_t>(rec.probes.size()));
      return true;
    });
  bar.finish();

  if (train) {
    SmokeLoader train_loader(table, spec, seed);
    TrainSpec ts;
    ts.steps = cfg.steps;
    ts.device = cfg.device;
    ts.model = cfg.model;
    ts.optimizer = cfg.optimizer;
    ts.sample_shape = cfg.data.sample_shape;
    ts.classes = cfg.classes;
    ts.inject_nondeterminism = cfg.inject_nondeterminism;
    ts.config_hash = cfg.config_hash;
    ts.resume = {o.stop_after, o.checkpoint, o.resume, !o.skip_generator_restore};
    TrainResult tr = train_smoke(ts, train_loader, seed);
    if (o.stop_after > 0) {
      if (!o.quiet)
        std::cout << "run " << cfg.name << ": stopped after " << tr.steps_done << " steps, checkpoint "
                  << o.checkpoint << " (continue with --resume)\n";
      return 0;
    }
    rec.series = std::move(tr.series);
    rec.hashes = std::move(tr.hashes);
    rec.init = std::move(tr.init);
    rec.resources = std::move(tr.resources);
    rec.train_probes = std::move(tr.train_probes);
  }

  rec.smoke = cfg.name;
  rec.config_hash = cfg.config_hash;
  rec.seed = seed;
  rec.seed_overridden = overridden;
  rec.device = cfg.device;
  rec.steps = train ? cfg.steps : 0;
  rec.contract = contract;
  rec.fingerprint = capture_fingerprint({cfg.device, contract, fs::absolute(cfg.file).parent_path().string()});
  rec.fingerprint["data.file_xxh3"] = {table->file_xxh3, true};  // images: the manifest hash
  rec.fingerprint["data.bytes"] = {std::to_string(table->bytes), false};
  rec.fingerprint["data.rows"] = {std::to_string(table->rows), false};
  if (cfg.model.name == "torchscript") {
    std::string bytes = read_file(cfg.model.path);
    rec.fingerprint["model.file_xxh3"] = {xxh3_128_hex(bytes.data(), bytes.size()), true};
  }
  rec.platform = platform_key(rec.fingerprint);

  std::string out = o.out.empty() ? "lockstep-out/" + cfg.name + (train ? ".run.json" : ".probe.json") : o.out;
  write_run_record(out, rec);
  if (!o.quiet && train && rec.train_probes.size() < static_cast<size_t>(cfg.steps))
    std::cout << "note: " << rec.train_probes.size() << " batches trained\n";
  if (!o.quiet) {
    std::cout << (train ? "run " : "probe ") << cfg.name << ": " << rec.probes.size() << " batches probed";
    if (train)
      std::cout << ", " << cfg.steps << " steps, loss " << format_double(rec.series["loss"].values.front())
                << " -> " << format_double(rec.series["loss"].values.back());
    std::cout << "\n  platform " << rec.platform << ", record " << out << "\n";
  }
  return 0;
}

void print_fingerprint(const Fingerprint& fp) {
  size_t width = 0;
  for (const auto& [k, _] : fp) width = std::max(width, k.size());
  for (int relevant = 1; relevant >= 0; --relevant) {
    std::cout << (relevant ? "determinism-relevant:\n" : "informational:\n");
    for (const auto& [k, f] : fp)
      if (f.relevant == static_cast<bool>(relevant))
        std::cout << "  " << k << std::string(width + 2 - k.size(), ' ') << f.value << "\n";
  }
}

// `run --repeat N`: N fresh processes, the first record kept as --out.
int run_repeated(const RunOptions& o) {
  SmokeConfig cfg = load_smoke_config(o.smoke);
  fs::path out = o.out.empty() ? fs::path("lockstep-out") / (cfg.name + ".run.json") : fs::path(o.out);
  std::string prefix = out.stem().string() + ".repeat";
  std::string dir = out.parent_path().empty() ? "." : out.parent_path().string();
  std::vector<RunRecord> runs = run_children(o.smoke, dir, prefix, o.repeat, override_args(o.overrides));
  auto [index, diff] = first_repeat_difference(runs);
  if (!diff.empty()) {
    std::cout << "run " << cfg.name << ": NONDETERMINISTIC (exit 4): run " << index + 1
              << " differs from run 1; first difference: " << diff << "\n  records: " << dir << "/" << prefix
              << "-1.json, " << dir << "/" << prefix << "-" << index + 1 << ".json\n";
    return to_int(ExitCode::kNondeterministic);
  }
  write_run_record(out.string(), runs.front());
  if (!o.quiet)
    std::cout << "run " << cfg.name << ": " << o.repeat << " runs in fresh processes are bit-identical\n  record "
              << out.string() << "\n";
  return 0;
}

}  // namespace

int run_command(const RunOptions& o) {
  if (o.repeat > 1) {
    if (o.stop_after > 0 || !o.resume.empty()) throw BadUsage("--repeat does not combine with --stop-after or --resume");
    return run_repeated(o);
  }
  return run_smoke(o, /*train=*/true);
}

int probe_command(const RunOptions& o) { return run_smoke(o, /*train=*/false); }

int env_command(const EnvOptions& o) {
  std::map<std::string, std::string> contract;
  Golden other;
  if (!o.diff_record.empty()) {
    other = read_golden_or_record(o.diff_record);
    // Apply the record's contract so the two fingerprints are comparable.
    auto get = [&](const char* k, const std::string& d) {
      auto it = other.record.contract.find(k);
      return it == other.record.contract.end() ? d : it->second;
    };
    // The record's own fields, checked before they are applied (a thread
    // count of 100000 would take minutes to refuse).
    std::string mode = get("mode", "strict");
    if (mode != "strict" && mode != "default")
      throw BadInput(o.diff_record, "contract.mode", "\"strict\" or \"default\", got \"" + mode + "\"");
    auto threads = [&](const char* key) {
      std::string text = get(key, "1");
      int n = 0;
      auto res = std::from_chars(text.data(), text.data() + text.size(), n);
      if (res.ec != std::errc() || res.ptr != text.data() + text.size() || n < 1 || n > 1024)
        throw BadInput(o.diff_record, std::string("contract.") + key, "an integer in [1, 1024], got \"" + text + "\"");
      return n;
    };
    int intra = threads("intra_op_threads"), inter = threads("inter_op_threads");
    if (other.record.device != "cpu" && other.record.device != "cuda")
      throw BadInput(o.diff_record, "device", "\"cpu\" or \"cuda\", got \"" + other.record.device + "\"");
    if (o.device_given && o.device != other.record.device)
      throw BadUsage("env --device " + o.device + " --diff " + o.diff_record + ": the record is a " +
                     other.record.device + " run, and the diff uses the record's device; drop --device");
    contract = apply_determinism_contract({mode, intra, inter});
  } else {
    contract = read_determinism_state();
  }
  std::string device = o.diff_record.empty() ? o.device : other.record.device;
  Fingerprint fp = capture_fingerprint({device, contract, fs::current_path().string()});
  std::string platform = platform_key(fp);
  // `--device cuda` where CUDA is unusable still prints what was found, and
  // says why, with the preflight's exit code.
  std::string unusable = device == "cuda" ? cuda_unusable_reason() : "";

  if (o.diff_record.empty()) {
    if (o.json) {
      nlohmann::json out = {{"platform", platform}, {"fingerprint", to_json(fp)}};
      if (!unusable.empty()) out["cuda_unusable"] = unusable;
      std::cout << pretty_dump(out);
    } else {
      std::cout << "platform: " << platform << "\n";
      print_fingerprint(fp);
    }
    if (!unusable.empty()) throw EnvironmentError("env --device cuda: CUDA is not usable: " + unusable);
    return 0;
  }
  // data.file_xxh3 and model.file_xxh3 belong to a smoke run, not to the machine.
  other.record.fingerprint.erase("data.file_xxh3");
  for (const char* k : {"model.file_xxh3", "data.bytes", "data.rows"}) other.record.fingerprint.erase(k);
  auto diffs = diff_fingerprints(other.record.fingerprint, fp);
  if (o.json) {
    nlohmann::json arr = nlohmann::json::array();
    for (const auto& d : diffs)
      arr.push_back({{"field", d.name}, {"record", d.golden}, {"here", d.run}, {"relevant", d.relevant}});
    nlohmann::json out = {{"platform", platform}, {"record_platform", other.record.platform}, {"differences", arr}};
    if (!unusable.empty()) out["cuda_unusable"] = unusable;
    std::cout << pretty_dump(out);
    if (!unusable.empty())
      throw EnvironmentError("env --diff " + o.diff_record + ": a CUDA record, but CUDA is not usable here: " + unusable);
    return 0;
  }
  std::cout << "platform here: " << platform << ", in " << o.diff_record << ": " << other.record.platform << "\n";
  if (diffs.empty()) std::cout << "no differences\n";
  for (const auto& d : diffs)
    std::cout << (d.relevant ? "* " : "  ") << d.name << "\n      record: " << d.golden << "\n      here:   " << d.run << "\n";
  if (!unusable.empty())
    throw EnvironmentError("env --diff " + o.diff_record + ": a CUDA record, but CUDA is not usable here: " + unusable);
  return 0;
}

}  // namespace lockstep
