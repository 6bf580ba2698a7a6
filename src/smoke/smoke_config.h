// Smoke configs: one JSON file per smoke, in smoke/ (docs/smoke-config.md).
// Torch-free: `compare`, `verify-goldens` and the LibTorch-free build read
// them too, and the run layer (src/run/) consumes the plain specs they hold
// (spec/loader_spec.h, spec/train_specs.h) without copying fields.
//
//   SmokeConfig c = load_smoke_config("smoke/digits-cnn.json");  // exit 2 on any bad field
//   c = with_overrides(c, {/*intra_op_threads=*/2, /*workers=*/-1});
//   std::vector<std::string> files = expand_smoke_args({"smoke/"});  // sorted *.json
//
// Unknown keys are rejected with a did-you-mean hint; every numeric field
// is range-checked. The config hash (XXH3-64 of the canonical JSON) goes
// into every record so a golden made from another version of the config is
// recognised.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "compare/tolerance_policy.h"
#include "spec/loader_spec.h"
#include "spec/distributed_spec.h"
#include "spec/run_variation.h"
#include "record/fingerprint.h"
#include "spec/train_specs.h"

namespace lockstep {

/// "data" section.
struct DataConfig {
  std::string source = "csv";     ///< "csv", "images" or "synthetic"
  std::string interpolation;      ///< images: OpenCV resize interpolation (required)
  std::string to_float = "div";   ///< images: uint -> float, "div" or "mul"
  int64_t manifest_sample = 0;    ///< images: content-hash only every (n/N)-th file; 0 = all
  std::string synthetic_kind;     ///< synthetic: "tokens", "images" or "tabular"
  int64_t synthetic_rows = 512;   ///< synthetic: samples
  int64_t synthetic_vocab = 64;   ///< synthetic tokens: ids in [0, vocab)
  /// csv file or image folder, as written in the config: relative to the
  /// config's folder, absolute, or "{data}/<name>" for a dataset lockstep
  /// fetches into data_dir() (ci/fetch-data.sh).
  std::string path;
  std::string resolved_path;      ///< absolute, {data} and the config's folder resolved
  int skip_rows = 0;
  int label_column = -1;
  double scale = 1.0;
  /// Batching and augmentation (data.sample_shape, batch_size, workers,
  /// shuffle, drop_last, augment), exactly as the loader consumes it.
  LoaderSpec loader;
  int64_t probe_epochs = 1;
  uint64_t max_bytes = uint64_t{256} << 20;      ///< csv: text after decompression (data.max_bytes)
  uint64_t max_line_bytes = uint64_t{16} << 20;  ///< csv: one line (data.max_line_bytes)
  /// Batches the data-only pass may probe (epochs x batches per epoch;
  /// data.max_batches): each probe costs a few KB in memory and record.
  int64_t max_batches = 20000;       ///< epochs the data-only pass covers
};

/// "trainer" section: the team's own trainer, run as a command instead of
/// lockstep's built-in one (docs/trainers.md). Arguments may hold the
/// placeholders {steps}, {seed}, {out} (the run's output folder), {data}
/// (the data cache folder), {config_dir}, {rank}, {workers} (with
/// `workers`), and in `resume` {resume_at} and {checkpoint}.
struct TrainerConfig {
  std::vector<std::string> command;  ///< argv; argv[0] found on PATH or relative to `cwd`
  std::string cwd;                   ///< as written (relative to the config's folder); "" = that folder
  std::string resolved_cwd;          ///< absolute
  int64_t timeout_s = 600;           ///< per process; exceeded = killed, exit 1
  /// "metrics": how the trainer's metrics are read (ingest/metrics.h).
  std::string metrics_format;        ///< "tensorboard", "jsonl", "mllog" or "csv"
  std::string metrics_path;          ///< file or folder; {out} allowed; relative to the config's folder
  std::map<std::string, std::string> series;  ///< lockstep series name -> tag / key / column
  std::string step_key = "step";     ///< jsonl, csv: the step field
  std::string mllog_step = "step";   ///< mllog: metadata field giving the step
  std::string probes;                ///< batch probes JSONL ({out}/probes.jsonl); "" = none
  /// Arguments added for the data-only pass (iterate the data, write
  /// probes, no training); may be empty: the trainer reads LOCKSTEP_PASS.
  /// The pass runs whenever `probes` is set (has_data_pass()).
  std::vector<std::string> data_only;
  /// DataLoader worker counts ({workers}): the training pass runs with the
  /// first, the data-only pass with each, and every data-only pass must
  /// give the same batches bit for bit (exit 4 naming the batch). Empty:
  /// no {workers} placeholder, one data-only pass.
  std::vector<int> workers;
  /// Python distributions whose version is determinism-relevant
  /// whether or not the trainer imported them (trainer.packages.relevant),
  /// and ones that are informational although imported (.informational);
  /// names normalised as PEP 503 ("scikit-learn"). The helper marks the
  /// distributions the trainer imported as relevant, the rest informational.
  std::vector<std::string> packages_relevant;
  std::vector<std::string> packages_informational;
  std::vector<std::string> resume_stop;      ///< added to stop after {resume_at} steps at {checkpoint}
  std::vector<std::string> resume_continue;  ///< added to continue from {checkpoint}
  /// Extra environment variables for the trainer, recorded in the
  /// fingerprint (trainer.env.<NAME>, determinism-relevant).
  std::map<std::string, std::string> env;
  /// The data files the trainer reads (trainer.inputs): glob(3) patterns
  /// relative to `resolved_cwd` ({data}, {config_dir} allowed), each file hashed into the fingerprint as
  /// an input (external/trainer_inputs.h). At most 64 patterns.
  std::vector<std::string> inputs;

  /// Whether the data-only pass runs: whenever the trainer writes probes.
  bool has_data_pass() const { return !probes.empty(); }
};

/// One equivalence lane (config "equivalence": {"<name>": {...}}; docs/equivalence.md):
/// a variant of the base run that must agree with it under `rule`, with no
/// golden. `check` runs it once beside the smoke's runs and compares it
/// with run 1 (compare/compare.h, compare_variant):
///
///   "equivalence": {"accum2":  {"args": ["--accum", "2"], "rule": {"ulp": 8}},
///                   "workers0": {"set": {"data": {"workers": 0}}},
///                   "ranks2":  {"set": {"distributed": {"world_size": 2}}, "same_batches": false}}
struct EquivalenceVariant {
  std::string name;   ///< letters, digits, '.', '_', '-' (names <out>/<smoke>/variant-<name>.json)
  /// A JSON merge patch (RFC 7386) of the config; never name, schema,
  /// seed, steps, equivalence nor how the check judges (tolerance, repeat,
  /// platforms, resume_at, calibration).
  nlohmann::json set = nlohmann::json::object();
  std::vector<std::string> args;              ///< appended to trainer.command (a trainer smoke)
  std::map<std::string, std::string> env;     ///< added to trainer.env (a trainer smoke)
  /// How every series (and, across steps, the module traces) is held to the
  /// base run's: exact by default, else ulp / atol-rtol (compare/tolerance.h).
  Tolerance rule = Tolerance::exact();
  /// true: the batches trained on (train probes) must be the base run's bit
  /// for bit; false for a variant that batches otherwise (micro-batches,
  /// ranks that each take a share).
  bool same_batches = true;
  /// How it differs, for a person: "trainer args --accum 2", "set
  /// {"data":{"workers":0}}".
  std::string describe() const;
  /// Whether `set` patches key `key` of section `section` ("data",
  /// "workers").
  bool sets(const char* section, const char* key) const {
    return set.contains(section) && set[section].is_object() && set[section].contains(key);
  }
};

/// Command-line overrides of a smoke's config (`--intra-op-threads`,
/// `--workers`); recorded in the run's contract and fingerprint.
struct RunOverrides {
  int intra_op_threads = 0;  ///< 0: from the config
  int workers = -1;          ///< -1: from the config
  /// 0: from the config; else distributed.world_size (a distributed smoke
  /// only; recorded in the contract, so a golden of another size fails it).
  int world_size = 0;
  /// 1: the config's learning rate; else a planted change of it (`run
  /// --lr-scale`, calibrate's detection search): the built-in optimiser's
  /// lr times this, a trainer's LOCKSTEP_LR_SCALE. An input: the record's
  /// config gains "lr_scale" and config.values_xxh3 moves, so a golden
  /// fails it as "input changed".
  double lr_scale = 1;
  /// "": none; "parameter": a planted one-ULP change (`run --perturb
  /// parameter`, `lockstep selftest`): the first element of the model's
  /// first parameter (named_parameters() order) moved one ULP towards +inf
  /// before step 0's forward; a trainer gets LOCKSTEP_PERTURB=parameter
  /// (python/lockstep's ModuleTracer makes it). "data": the first sample
  /// of rank 0's data-only pass's first batch moved (its first float one
  /// ULP towards +inf, else its first integer's lowest bit flipped); the
  /// training pass is untouched; a trainer's helper makes it in
  /// ctx.register_loader (python/lockstep/data_perturb.py), and the record
  /// says what moved in fingerprint field "perturb.data". An input, as
  /// lr_scale.
  std::string perturb;
  /// "": the config's determinism.mode; "default" or "strict" instead
  /// (`run --determinism`; selftest relaxes the contract to see whether
  /// the smoke can observe the stack's nondeterminism). In the contract, so
  /// a golden of the other mode fails it.
  std::string mode;
  /// Conditions the values must not depend on, varied for this run (`run
  /// --vary`, check's perturbed repeat: spec/run_variation.h). Not an
  /// input: the values hash is unchanged, and the record names it in
  /// fingerprint fields vary.* only.
  RunVariation vary;
};

/// A parsed, validated smoke config.
struct SmokeConfig {
  std::string file;         ///< path it was read from
  std::string name;
  std::string device = "cpu";
  std::string min_driver;   ///< minimum NVIDIA driver ("535.104"), checked on cuda runs; "" = none
  uint64_t seed = 0;
  int64_t steps = 10;
  std::string mode = "strict";
  int intra_op_threads = 1;
  int inter_op_threads = 1;
  int repeat = 2;           ///< runs `check` makes and compares bit for bit
  /// What check's second repeat varies (config "repeat_varies",
  /// variation_kinds() names; default all of them, [] none): a difference
  /// that shows only then is exit 4 naming the kind.
  std::vector<std::string> repeat_varies = variation_kinds();
  std::vector<std::string> platforms;  ///< platform keys that must have a golden (verify-goldens)
  /// The team's own trainer; when set (has_trainer()), data, model and
  /// optimizer are absent and the run is the command's.
  TrainerConfig trainer;
  bool has_trainer() const { return !trainer.command.empty(); }
  DataConfig data;
  ModelSpec model;
  int64_t classes = 10;
  OptimizerSpec optimizer;
  /// Resume check: > 0 makes `check` also run resume_at steps, checkpoint,
  /// resume in a fresh process, and require the uninterrupted run's bits.
  int64_t resume_at = 0;
  /// Self-tests that prove the gate catches a known failure: ""
  /// (none), "index_put_accumulate" (a nondeterministic kernel, trainer.h),
  /// "worker_seeded_augment" (augmentation seeded per worker with a
  /// constant, data/augment.h) or "allocation_order" (a loss that depends
  /// on where heap buffers lie: allocation_order_factor(), trainer.h; only
  /// a perturbed repeat sees it).
  std::string inject_nondeterminism;
  /// Multi-rank runs over c10d (spec/distributed_spec.h); built-in
  /// smokes only for now.
  DistributedSpec distributed;
  /// Per-module fingerprints of the first steps (built-in trainer; a team
  /// trainer writes its own with the Python helper).
  TraceSpec trace;
  TolerancePolicy tolerance;
  /// RunOverrides::lr_scale applied (1: none); a trainer gets it as
  /// LOCKSTEP_LR_SCALE.
  double lr_scale = 1;
  /// RunOverrides::perturb applied ("": none); a trainer gets it as
  /// LOCKSTEP_PERTURB.
  std::string perturb;
  /// RunOverrides::vary applied (empty: a plain run).
  RunVariation vary;
  /// Equivalence lanes, in the config's key order (sorted by name).
  std::vector<EquivalenceVariant> equivalence;
  /// Non-empty: this config is variant `variant` of the file's
  /// (load_smoke_config's second argument): its set/args/env applied, no
  /// equivalence section; values_json() names it, so its record is never a
  /// base run's.
  std::string variant;
  std::string config_hash;  ///< XXH3-64 of the canonical JSON but "equivalence", 16 hex digits
  /// XXH3-64 of values_json(): the config as an input of the run
  /// (fingerprint field config.values_xxh3). Loosening a tolerance, or
  /// writing a default out, changes config_hash but not this.
  std::string values_hash;
  /// values_json() as values_hash hashed it, flattened for a run record's
  /// "config": each leaf by its JSON path ("optimizer.lr",
  /// "data.sample_shape") with its canonical JSON text ("0.01", "[1,8,8]");
  /// an array is one leaf. A changed input then names its field:
  /// "optimizer.lr 0.01 → 0.011".
  std::map<std::string, std::string> values_fields;
};

/// The fields of `config` that determine a run's values, as parsed (defaults
/// filled in, so writing a default out changes nothing): device, seed,
/// steps, the determinism mode and thread counts, data (source, path, CSV
/// and image options, shape, batching, augmentation, probe epochs), model,
/// optimiser, inject_nondeterminism, a multi-rank smoke's distributed
/// section; a trainer's section but its timeout, workers and packages. Not:
/// tolerance, platforms, repeat, min_driver, resume_at, data.workers
/// (batches never depend on it), the reader caps max_bytes /
/// max_line_bytes, and trace (its self-test is the change the gate must
/// find in the values, by module). data.path is a value, but a comparison
/// whose only changed field is data.path, with the file's content hash
/// (data.file_xxh3) unchanged, is no changed input (compare.h).
nlohmann::json values_json(const SmokeConfig& config);

/// What the second of `config`'s repeats varies in check and bless: the
/// kinds of `repeat_varies` with values drawn from the smoke's name and
/// seed (so every check of one commit varies the same way and its verdict
/// repeats), affinity only where this process may use two CPUs or more.
/// Empty when repeat_varies is [].
RunVariation repeat_variation(const SmokeConfig& config);

/// `config` with `overrides` applied (determinism threads, data workers).
/// The config hash is unchanged: it names the file, not the run.
SmokeConfig with_overrides(SmokeConfig config, const RunOverrides& overrides);

/// "no data-only pass: ..." for a trainer smoke that writes no batch probes
/// (so its batches are never checked), for the verdict, the reports and
/// the console; "" when the smoke has a data-only pass (every built-in
/// smoke has one).
std::string missing_data_pass_note(const SmokeConfig& config);

/// Whether `path` is a valid smoke config: a record or report must never
/// be written over one, nor one be given where a record belongs. Never
/// throws.
bool is_smoke_config_file(const std::string& path);

/// The processes one run of the smoke keeps busy at once, what `check -j`
/// counts against its job slots: a built-in smoke 1 per rank; a trainer
/// smoke its training pass plus, with a data-only pass, one pass per
/// trainer.workers count (they run at the same time), each per rank.
/// `with_data_pass` false: the training pass's alone (check's runs of a
/// trainer smoke, which leave the data-only pass out: gate/check.h).
int processes_per_run(const SmokeConfig& config, bool with_data_pass = true);

/// Applies the smoke's trainer.packages to python.packages.<name> fields:
/// a name in packages_relevant becomes determinism-relevant (a field
/// "(absent: not installed)" is added when the interpreter has none, so
/// installing it later moves the lane), one in packages_informational
/// informational. check applies it to the run and the golden alike, so an
/// edit of the lists takes effect without a re-bless.
void apply_package_relevance(const TrainerConfig& trainer, Fingerprint& fingerprint);

/// Reads and validates a smoke config. Throws exit-2 Error naming the file
/// and field. With `variant`, the config of that equivalence lane (the
/// file's "equivalence.<variant>" applied); exit 2 naming the lanes there
/// are when it has none of that name. Each lane is validated as a config
/// of its own when the file is read.
SmokeConfig load_smoke_config(const std::string& path, const std::string& variant = "");

/// Expands SMOKE arguments: files as given, folders to their *.json files
/// sorted by name. Throws exit-2 Error for a missing path or an empty folder.
std::vector<std::string> expand_smoke_args(const std::vector<std::string>& args);

/// The smoke names of a suite (expand_smoke_args' files), in file order.
/// Two files with one name are exit 2 naming both: their goldens and
/// output folders would collide (check and bless refuse the suite). A
/// config that does not load is named after its file stem; loading it is
/// reported where it is checked or blessed.
std::vector<std::string> suite_smoke_names(const std::vector<std::string>& files);

/// `check --kind` / `bless --kind`: keeps in `files` (and `names`, the
/// same length) the smokes of `kind`, "trainer" (a trainer section) or
/// "built-in" (none: run by lockstep-torch), so one suite folder can be
/// split between a job in the team's trainer image (the wheel) and one in
/// lockstep's image. A config that does not load is kept: its error is
/// reported where it is checked. Returns what to say ("" when every smoke
/// was of the kind), e.g. "check: 1 trainer smoke; 2 of the other kind
/// left to `check --kind built-in`", or, with none left, "check: no
/// trainer smoke among the 3 given (...); nothing to check, exit 0".
std::string select_smoke_kind(const std::string& kind, const std::string& command, std::vector<std::string>& files,
                              std::vector<std::string>& names);

/// Every smoke config in folder `dir` by name. Throws exit-2 Error for a
/// malformed config or two configs with one name.
std::map<std::string, SmokeConfig> load_smoke_folder(const std::string& dir);

/// The base seed: the config's, or `seed` when given, else $LOCKSTEP_SEED;
/// `.second` is true when it replaced the config's seed. Throws exit 2 for
/// a value that is not a decimal unsigned 64-bit integer.
std::pair<uint64_t, bool> base_seed(const SmokeConfig& config, const char* seed = nullptr);

/// The message for a data.path that does not exist: where it looked, the
/// rule it followed ({data} or the config's folder) and what to do; names a
/// same-named dataset in data_dir() when there is one.
std::string missing_data_message(const DataConfig& data, const std::string& config_file);

/// The folder of the datasets lockstep fetches, "{data}" in a config:
/// $LOCKSTEP_DATA_DIR, else ${XDG_CACHE_HOME:-$HOME/.cache}/lockstep/data
/// (ci/fetch-data.sh uses the same rule).
std::string data_dir();

}  // namespace lockstep
