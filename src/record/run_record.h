// The run record: everything one smoke run produced, in the versioned JSON
// format documented in docs/record.schema.json (schema "lockstep.run/1").
//
//   RunRecord rec = read_run_record("out/digits-cnn.run.json");  // exit 2 on bad input
//   rec.series.at("loss").values[3];
//   write_run_record("out/copy.json", rec);                      // atomic
//
// Other trainers may write records in the same schema and compare them with
// `lockstep compare`; nothing here depends on LibTorch.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "record/batch_probe.h"
#include "record/fingerprint.h"
#include "record/module_trace.h"
#include "record/series.h"
#include "record/step_digests.h"

namespace lockstep {

class JsonView;

/// Schema identifier written into every record and golden.
inline constexpr const char* kRunSchema = "lockstep.run/1";

/// Statistics of one parameter right after initialisation (before step 0):
/// float64 mean and population std, XXH3-128 of its bytes.
struct InitStats {
  double mean = 0, std = 0;
  std::string xxh3_128;
};

/// {"mean": ..., "std": ..., "xxh3_128": "..."}.
nlohmann::json to_json(const InitStats& stats);
/// Parses one init entry; throws exit-2 Error naming the JSON path.
InitStats init_stats_from_json(const JsonView& node);

/// What a run cost. Informational: never part of the bit-for-bit repeat
/// check; compared against a golden only on the same platform, as a median
/// ratio with a loose tolerance (docs/comparison.md).
struct Resources {
  std::vector<double> step_time_s;  ///< wall seconds of each optimiser step
  int64_t peak_rss_bytes = -1;      ///< getrusage ru_maxrss of the run; -1 unknown
  int64_t peak_cuda_bytes = -1;     ///< peak CUDA caching-allocator bytes; -1 no CUDA
  /// Resources are compared only within one runner class
  /// ($LOCKSTEP_RUNNER_CLASS, else "<cpu model> x<cores>"); "" unknown.
  std::string runner_class;
  double load_per_core = -1;   ///< 1-minute load average / logical cores at the end; -1 unknown
  double steal_fraction = -1;  ///< CPU steal time / all CPU time during training; -1 unknown
  bool empty() const { return step_time_s.empty() && peak_rss_bytes < 0 && peak_cuda_bytes < 0; }
};

/// The config_hash of a record no smoke config made (`lockstep import`
/// without --golden).
inline constexpr const char* kNoConfigHash = "0000000000000000";

/// One smoke run: data probes, per-step series, final hashes, and the stack.
struct RunRecord {
  std::string smoke;        ///< smoke name, e.g. "digits-cnn"
  std::string config_hash;  ///< XXH3-64 of the canonical smoke config, 16 hex digits (kNoConfigHash: none)
  uint64_t seed = 0;        ///< base seed actually used
  bool seed_overridden = false;  ///< true when LOCKSTEP_SEED replaced the config's seed
  std::string device;       ///< "cpu" or "cuda"
  std::string platform;     ///< golden platform key, e.g. "cpu-x86_64-avx2"
  /// Stack label ($LOCKSTEP_STACK, record/platform_key.h): a golden made
  /// under one is filed as "<platform>@<stack>"; "" for none ("stack"
  /// absent in the JSON).
  std::string stack;
  int64_t steps = 0;        ///< optimiser steps configured
  /// The determinism contract as applied and read back ("mode", "intra_op_threads",
  /// "deterministic_algorithms", ...). A run is never accepted against a
  /// golden whose contract differs.
  std::map<std::string, std::string> contract;
  /// The smoke config's value-determining fields, flattened to JSON paths
  /// with their values as JSON text ({"optimizer.lr": "0.01", "seed":
  /// "7"}): what config.values_xxh3 hashes, kept so a changed input names
  /// its field. Optional ("config" absent when empty: records made before it).
  std::map<std::string, std::string> config;
  Fingerprint fingerprint;
  /// "loss" (float32), "grad_norm", "grad_norm/<parameter>", "param_norm", "lr".
  std::map<std::string, Series> series;
  /// Final hashes: "params" (all parameters and buffers), ... (XXH3-128 hex).
  std::map<std::string, std::string> hashes;
  std::map<std::string, InitStats> init;  ///< per parameter, after initialisation
  Resources resources;                   ///< optional ("resources" absent when empty)
  std::vector<BatchProbe> probes;        ///< data-only pass, one per batch
  std::vector<BatchProbe> train_probes;  ///< batches the trainer consumed, in order
  /// Per-module fingerprints of the first steps (record/module_trace.h);
  /// optional ("module_trace" absent when empty: records made before it).
  ModuleTrace module_trace;
  /// XXH3-128 of the parameters and gradients at each step
  /// (record/step_digests.h); optional ("digests" absent when empty:
  /// records made before it, a trainer that writes none).
  StepDigests digests;
};

/// The record's JSON; with `packer` the per-step arrays go to a sidecar and
/// the JSON holds references (the caller adds "series_data").
nlohmann::json to_json(const RunRecord& record, SeriesPacker* packer = nullptr);

/// Parses a record. Throws exit-2 Error on wrong types, unknown keys (with a
/// did-you-mean hint), an unknown schema, or series whose length differs
/// from `steps`. A "series_data" sidecar is read from `sidecar_dir` (the
/// JSON file's folder); without one it is an error. `taken` holds the
/// per-step arrays taken out while parsing, when they were
/// (take_record_arrays in core/json_io.h).
RunRecord run_record_from_json(const JsonView& node,
                               const std::optional<std::string>& sidecar_dir = std::nullopt,
                               TakenArrays* taken = nullptr);

/// Throws BadUsage (exit 2) when `path` holds a regular file that is not a
/// lockstep run record (a JSON object whose "schema" is "lockstep.run/..."):
/// a record written with `--record` replaces only an earlier record, never a
/// README, a script or a data file. `flag` names the option in the message
/// ("--record"). Also refused: a path naming a folder ("out/", "out/x/..")
/// or through a file ("notes.txt/r.json"), and a folder or other non-file
/// at `path`. Nothing there, or an earlier record: returns.
void refuse_replacing_other_than_a_record(const std::string& path, const std::string& flag);

/// The top-level keys of a run record (a golden adds "provenance" and
/// "content_hash").
const std::vector<std::string_view>& run_record_keys();

/// Reads and parses `path`.
RunRecord read_run_record(const std::string& path);

/// Writes `record` to `path` atomically (pretty JSON). When a series is
/// longer than kInlineSeriesSteps the per-step arrays go to a sidecar beside
/// it, written first (record/series_file.h), and older sidecars of the same
/// record are removed after the JSON lands.
void write_run_record(const std::string& path, const RunRecord& record);

/// A NaN or +-Inf found in a record.
struct NonFinite {
  std::string field;  ///< JSON path: "series.loss.values[3]", "probes[2].inputs.std", ...
  double value = 0;   ///< the value itself
};

/// The first NaN or +-Inf in `record`: series values (by name, then step),
/// then the statistics of the data-only probes, then those of the batches
/// the trainer consumed (by batch, inputs before labels, in
/// tensor_stat_names() order); nullopt when every value is finite. The one
/// definition bless, accept, verify-goldens and compare's golden check use.
std::optional<NonFinite> first_nonfinite(const RunRecord& record);

/// The JSON paths whose values differ between two records' `config` maps
/// (RunRecord::config), sorted; a path present on one side only counts.
std::vector<std::string> differing_config_fields(const std::map<std::string, std::string>& reference,
                                                 const std::map<std::string, std::string>& other);

/// Whether config field `path` only says where an input lives, its content
/// being an input field of its own: "data.path" (the file's content is
/// data.file_xxh3). Moving a byte-identical data file is no changed input.
bool is_location_field(const std::string& path);

/// Whether `name` may name a series (or a final hash) in a record: 1 to
/// 200 bytes, none of them a space, control character or double quote
/// (the rule of a trainer's trainer.metrics.series keys too).
bool is_series_name(const std::string& name);

}  // namespace lockstep
