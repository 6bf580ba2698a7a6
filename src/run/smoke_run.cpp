#include "run/smoke_run.h"

#include <torch/torch.h>

#include <malloc.h>

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <limits>
#include <future>
#include <memory>

#include "core/atomic_file.h"
#include "core/error.h"
#include "core/hash.h"
#include "core/json_io.h"
#include "data/image_folder.h"
#include "data/loader.h"
#include "data/probe.h"
#include "data/synthetic_source.h"
#include "determinism/contract.h"
#include "determinism/seed_streams.h"
#include "distributed/nccl_env.h"
#include "distributed/rank_group.h"
#include "distributed/rank_progress.h"
#include "env/cuda_preflight.h"
#include "machine/driver_version.h"
#include "env/fingerprint_capture.h"
#include "machine/machine_load.h"
#include "smoke/finish_record.h"
#include "train/torchscript_model.h"

namespace lockstep {
namespace fs = std::filesystem;

namespace {

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

std::shared_ptr<const CsvTable> load_table(const SmokeConfig& cfg, uint64_t seed) {
  const DataConfig& d = cfg.data;
  if (d.source == "synthetic") {
    SyntheticOptions o;
    o.kind = d.synthetic_kind == "tokens"   ? SyntheticOptions::Kind::kTokens
             : d.synthetic_kind == "images" ? SyntheticOptions::Kind::kImages
                                            : SyntheticOptions::Kind::kTabular;
    o.rows = d.synthetic_rows;
    o.vocab = d.synthetic_vocab;
    return std::make_shared<CsvTable>(make_synthetic(o, d.loader.sample_shape, cfg.classes, seed));
  }
  if (d.source == "images") {
    std::error_code missing;
    if (!fs::exists(d.resolved_path, missing)) throw BadInput(cfg.file, "data.path", missing_data_message(d, cfg.file));
    ImageFolder f = read_image_folder({d.resolved_path, d.loader.sample_shape, d.interpolation, d.to_float,
                                       d.manifest_sample});
    if (f.table.num_classes > cfg.classes)
      throw BadInput(cfg.file, "model.classes",
                     "at least " + std::to_string(f.table.num_classes) + " (the class folders in " + d.path + ")");
    return std::make_shared<CsvTable>(std::move(f.table));
  }
  std::error_code ec;
  if (!fs::exists(d.resolved_path, ec))
    throw BadInput(cfg.file, "data.path", missing_data_message(d, cfg.file));
  auto table = std::make_shared<CsvTable>(
      read_csv({d.resolved_path, d.skip_rows, d.label_column, d.scale, d.max_bytes, d.max_line_bytes}));
  int64_t per_sample = 1;
  for (int64_t n : d.loader.sample_shape) per_sample *= n;
  if (per_sample != table->features)
    throw BadInput(cfg.file, "data.sample_shape",
                   "a shape of " + std::to_string(table->features) + " elements (the CSV has " +
                       std::to_string(table->features) + " features), got " + std::to_string(per_sample));
  if (table->num_classes > cfg.classes)
    throw BadInput(cfg.file, "model.classes",
                   "at least " + std::to_string(table->num_classes) + " (the largest label in " + d.path +
                       " is " + std::to_string(table->num_classes - 1) + ")");
  return table;
}

// The data as the config names it: the path as written, or the generator.
std::string data_label(const SmokeConfig& cfg) {
  return cfg.data.source == "synthetic" ? "synthetic " + cfg.data.synthetic_kind : cfg.data.path;
}

// Before any work: a cuda run's driver (min_driver) and CUDA itself.
void preflight(const SmokeConfig& cfg) {
  preflight_driver(cfg);
  if (cfg.device == "cuda")
    if (std::string why = cuda_unusable_reason(); !why.empty())
      throw EnvironmentError(cfg.file + ": device is \"cuda\" but CUDA is not usable: " + why +
                             " (lockstep never falls back to the CPU)");
}

// A rank process's place in its run: its progress file and its group.
struct RankSetup {
  std::unique_ptr<RankProgress> progress;
  std::unique_ptr<RankGroup> group;
};

// A rank joins its group before any data work, so a rank that cannot
// start shows as a failed rendezvous, not a hang. On several machines the
// data is read first (`table`): its hash is one of the facts every node
// must agree on before the ranks join (rank_group.h).
RankSetup join_rank_group(const SmokeConfig& cfg, const SmokeRunOptions& o, uint64_t seed,
                          const std::map<std::string, std::string>& contract,
                          std::shared_ptr<const CsvTable>& table) {
  const DistributedSpec& dist = cfg.distributed;
  if (dist.backend == "nccl") {
    // The contract first (a refused NCCL_ALGO is the finding on any build).
    std::map<std::string, std::string> env;
    for (const char* k : {"NCCL_ALGO", "NCCL_PROTO"})
      if (const char* v = std::getenv(k)) env[k] = v;
    nccl_contract(cfg.mode, env);
    throw EnvironmentError(cfg.file + ": distributed.backend \"nccl\": this lockstep runs multi-rank smokes on "
                           "Gloo (CPU) only; NCCL is not built in");
  }
  RankSetup r;
  r.progress = std::make_unique<RankProgress>(o.rank.rendezvous, o.rank.rank);
  r.progress->mark(-1, RankPhase::kConnecting);
  NodeFacts facts;
  if (o.rank.nnodes > 1) {
    table = load_table(cfg, seed);
    facts.file = cfg.file;
    facts.facts = {{"smoke", cfg.name},
                   {"world_size", std::to_string(o.rank.world_size)},
                   {"nnodes", std::to_string(o.rank.nnodes)},
                   {"config_hash", cfg.config_hash},
                   {"seed", std::to_string(seed)},
                   {"data.file_xxh3", table->file_xxh3},
                   {"intra_op_threads", contract.count("intra_op_threads") ? contract.at("intra_op_threads") : ""},
                   {"lockstep.version", LOCKSTEP_VERSION}};
  }
  // The coordinator's timeout (distributed.timeout_s) comes first; this
  // one only keeps a rank from waiting forever if the coordinator is gone.
  r.group = std::make_unique<RankGroup>(o.rank, std::chrono::seconds(dist.timeout_s + 30), r.progress.get(), facts);
  r.progress->mark(-1, RankPhase::kDataPass);
  return r;
}

// `run --perturb data` (selftest's data-pass control): the first sample of
// `b` moved as the helper moves a trainer's (python/lockstep/data_perturb.py):
// its first finite input one ULP towards +inf, or a token id's lowest bit
// flipped. Returns what moved, for fingerprint field perturb.data.
std::string perturb_first_sample(SmokeBatch& b) {
  const std::string which = "dataset index " + std::to_string(b.indices.at(0)) +
                            " (the first sample of the data-only pass's first batch): ";
  torch::Tensor sample = b.inputs[0].view(-1);
  if (sample.scalar_type() == torch::kInt64) {
    sample[0].bitwise_xor_(1);
    return which + "its first token id's lowest bit flipped";
  }
  float* v = sample.data_ptr<float>();
  for (int64_t i = 0; i < sample.numel(); ++i)
    if (std::isfinite(v[i])) {
      v[i] = std::nextafter(v[i], std::numeric_limits<float>::infinity());
      return which + "its input value " + std::to_string(i) + " one ULP towards +inf";
    }
  return "nothing: the first sample's inputs are all NaN or infinite";
}

// The data-only pass: every batch of data.probe_epochs epochs, probed.
// Exit 2 when no batch would remain, or more than data.max_batches would
// be probed (each probe costs a few KB in memory and in the record).
// `perturbed`: what `--perturb data` moved ("" when not asked, or not rank 0).
std::vector<BatchProbe> data_only_pass(const SmokeConfig& cfg, const SmokeRunOptions& o,
                                       std::shared_ptr<const CsvTable> table, const LoaderSpec& spec, uint64_t seed,
                                       std::string& perturbed) {
  SmokeLoader probe_loader(table, spec, seed);
  if (probe_loader.batches_per_epoch() == 0)
    throw BadInput(cfg.file, "data.batch_size",
                   "at most the dataset's " + std::to_string(table->rows / spec.world_size) + " samples" +
                       (spec.world_size > 1 ? " per rank (" + std::to_string(table->rows) + " over " +
                                                  std::to_string(spec.world_size) + " ranks)"
                                            : std::string()) +
                       " (data.drop_last drops a partial batch, so no batch would remain), got " +
                       std::to_string(spec.batch_size));
  int64_t total = cfg.data.probe_epochs * probe_loader.batches_per_epoch();
  if (total > cfg.data.max_batches)
    throw BadInput(cfg.file, "data.max_batches",
                   "at most " + std::to_string(cfg.data.max_batches) + " batches in the data-only pass; " +
                       std::to_string(table->rows) + " samples in batches of " + std::to_string(spec.batch_size) +
                       " x " + std::to_string(cfg.data.probe_epochs) + " epoch(s) make " + std::to_string(total) +
                       " (raise data.max_batches or data.batch_size, or use a smaller dataset)");
  std::vector<BatchProbe> probes;
  const bool perturb = cfg.perturb == "data" && (!o.rank.active() || o.rank.rank == 0);
  for (int64_t e = 0; e < cfg.data.probe_epochs; ++e)
    probe_loader.run_epoch(static_cast<uint64_t>(e), [&](int64_t, SmokeBatch& b) {
      if (perturb && probes.empty()) perturbed = perturb_first_sample(b);
      probes.push_back(probe_batch(static_cast<int64_t>(probes.size()), b.inputs, b.labels, b.indices));
      if (o.rank.active()) probes.back().rank = o.rank.rank;
      if (o.on_probe) o.on_probe(static_cast<int64_t>(probes.size()), total);
      return true;
    });
  return probes;
}

// `run --vary`'s share made in this process (each rank's own), before the
// run allocates anything of its own and after the contract sized the
// thread pools: a hole in the heap (a malloc of that size with a guard
// above it, the first freed; the guard is kept so the hole cannot merge
// back into the top of the heap), then the thread pools started,
// inter-op first (training would start the intra-op pool first, and the
// inter-op pool perhaps never). The CPUs and MALLOC_PERTURB_ were set by
// the process that started this one (cli/run_command.cpp).
void* volatile variation_sink = nullptr;
void* volatile hole_guard = nullptr;  // reachable for the run's life: no leak report

void apply_in_process_variation(const RunVariation& v) {
  if (v.allocator_bytes > 0) {
    void* hole = std::malloc(static_cast<size_t>(v.allocator_bytes));
    variation_sink = hole;  // escapes: the compiler cannot drop the pair
    // The guard must be the chunk right above the hole: a hole carved from
    // a larger free chunk would otherwise merge back into it when freed,
    // and one at the top of the heap into the top (glibc: the next chunk's
    // memory starts malloc_usable_size + 8 bytes on). Free chunks elsewhere
    // may serve the first tries; they are given back.
    void* tries[64] = {};
    const uintptr_t above = reinterpret_cast<uintptr_t>(hole) + ::malloc_usable_size(hole) + sizeof(size_t);
    for (int i = 0; i < 64 && hole; ++i) {
      tries[i] = std::malloc(4096);
      if (reinterpret_cast<uintptr_t>(tries[i]) == above) {
        hole_guard = tries[i];
        tries[i] = nullptr;
        break;
      }
    }
    for (void* t : tries) std::free(t);
    std::free(hole);
    variation_sink = nullptr;
  }
  if (v.thread_warmup) {
    std::promise<void> done;
    at::launch([&done] { done.set_value(); });
    done.get_future().wait();
    at::parallel_for(0, int64_t{1} << 16, 1, [](int64_t, int64_t) {});
  }
}

// The training pass (train/trainer.h) with the machine's load beside it; a
// failure a distributed self-test asked for says so in a CI log.
TrainResult training_pass(const SmokeConfig& cfg, const SmokeRunOptions& o, std::shared_ptr<const CsvTable> table,
                          const LoaderSpec& spec, uint64_t seed, const std::map<std::string, std::string>& contract,
                          RankSetup& ranks, double loss_factor) {
  SmokeLoader train_loader(table, spec, seed);
  TrainSpec ts;
  ts.steps = cfg.steps;
  ts.device = cfg.device;
  ts.model = cfg.model;
  ts.optimizer = cfg.optimizer;
  ts.sample_shape = spec.sample_shape;
  ts.classes = cfg.classes;
  ts.inject_nondeterminism = cfg.inject_nondeterminism;
  ts.loss_factor = loss_factor;
  ts.perturb_parameter = cfg.perturb == "parameter";
  ts.config_hash = cfg.config_hash;
  ts.values_hash = cfg.values_hash;
  ts.config_file = cfg.file;
  ts.contract = contract;
  ts.resume = o.resume;
  ts.group = ranks.group.get();
  ts.progress = ranks.progress.get();
  ts.fault = cfg.distributed.self_test;
  ts.trace = cfg.trace;
  CpuTimes before = read_cpu_times();
  TrainResult tr;
  try {
    tr = train_smoke(ts, train_loader, seed);
  } catch (const Error& e) {
    const RankFault& f = cfg.distributed.self_test;
    if (e.code() != ExitCode::kRegression || f.fault.empty()) throw;
    throw Error(e.code(), std::string(e.what()) + " [self-test: distributed.self_test injects " + f.fault +
                              " on rank " + std::to_string(f.rank) + " at step " + std::to_string(f.step) + "]");
  }
  tr.resources.steal_fraction = steal_fraction(before, read_cpu_times());
  tr.resources.load_per_core = load_per_core();
  return tr;
}

// "rank 1: 0.01 s of 0.2 s of training steps in collectives (5.0%)".
std::string collective_note(int rank, const TrainResult& tr) {
  double total = 0;
  for (double t : tr.resources.step_time_s) total += t;
  char line[160];
  std::snprintf(line, sizeof line, "rank %d: %.6f s of %.6f s of training steps in collectives (%.1f%%)", rank,
                tr.collective_s, total, total > 0 ? 100.0 * tr.collective_s / total : 0.0);
  return line;
}

// The record's identity, contract and stack: the fingerprint of this
// process, the smoke's inputs (data, TorchScript module, config values;
// never part of the stack, a change always fails), the platform key.
void stamp_smoke_record(const SmokeConfig& cfg, const SmokeRunOptions& o, std::pair<uint64_t, bool> seed,
                        const std::map<std::string, std::string>& contract, const CsvTable& table, SmokeRun& out) {
  RunRecord& rec = out.record;
  const DistributedSpec& dist = cfg.distributed;
  rec.contract = contract;
  if (dist.configured) {
    // The multi-rank contract (spec/distributed_spec.h): a golden of
    // another world size, backend or bucketing is a contract mismatch.
    rec.contract["distributed.world_size"] = std::to_string(dist.world_size);
    rec.contract["distributed.backend"] = dist.backend;
    rec.contract["distributed.gradient_buckets"] = "1 float32 bucket, parameter registration order, sum / world_size";
    rec.contract["distributed.buffers"] = "rank 0's broadcast before each forward and after the last step";
    rec.contract["distributed.sampler"] = "one global permutation per epoch, rank r takes every world_size-th "
                                          "entry from r, drop_last";
  }
  rec.fingerprint = capture_fingerprint({cfg.device, contract, fs::absolute(cfg.file).parent_path().string()});
  rec.fingerprint["data.file_xxh3"] = {table.file_xxh3, false, true};  // images: the manifest hash
  rec.fingerprint["data.path"] = {data_label(cfg), false, false};
  rec.fingerprint["data.bytes"] = {std::to_string(table.bytes), false, false};
  rec.fingerprint["data.rows"] = {std::to_string(table.rows), false, false};
  if (!table.skipped.empty()) {
    std::string list;
    for (size_t i = 0; i < table.skipped.size() && i < 10; ++i) list += (i ? ", " : "") + table.skipped[i];
    if (table.skipped.size() > 10) list += ", ... (" + std::to_string(table.skipped.size() - 10) + " more)";
    std::string line = std::to_string(table.skipped.size()) + " file(s) not loaded: " + list;
    rec.fingerprint["data.skipped_files"] = {line, false, false};
    // A file name may hold a newline or bytes that are not UTF-8: escaped.
    out.notes.push_back(printable_message(cfg.data.path + ": skipped " + line, /*keep_line_breaks=*/false));
  }
  if (table.decoder_lines > 0) {
    std::string distinct;
    for (const auto& m : table.decoder_messages) distinct += (distinct.empty() ? "" : "; ") + m;
    out.notes.push_back(cfg.data.path + ": the image decoder wrote " + std::to_string(table.decoder_lines) +
                        " warning line(s), not shown: " + distinct);
  }
  if (dist.configured) rec.fingerprint["distributed.gloo"] = {RankGroup::gloo_version(), true, false};
  if (cfg.model.name == "torchscript") {
    rec.fingerprint["model.torchscript_xxh3"] = {torchscript_content_xxh3(cfg.model.path), false, true};
    rec.fingerprint["model.path"] = {cfg.model.path, false, false};
  }
  finish_record(cfg, {seed, o.train ? cfg.steps : 0}, rec);
  if (o.train) {
    auto fact = [&](const char* key) {
      auto it = rec.fingerprint.find(key);
      return it == rec.fingerprint.end() ? std::string("?") : it->second.value;
    };
    rec.resources.runner_class = runner_class(fact("cpu.model"), fact("cpu.logical_cores"));
  }
}

}  // namespace

std::map<std::string, std::string> prepare_smoke(const SmokeConfig& cfg, uint64_t seed,
                                                 std::shared_ptr<const CsvTable>& table) {
  preflight(cfg);
  auto contract = apply_determinism_contract({cfg.mode, cfg.intra_op_threads, cfg.inter_op_threads});
  torch::manual_seed(derive_seed(seed, "global"));
  table = load_table(cfg, seed);
  return contract;
}

SmokeRun run_smoke(const SmokeConfig& cfg, const SmokeRunOptions& o) {
  const std::pair<uint64_t, bool> seed = base_seed(cfg);
  preflight(cfg);
  auto contract = apply_determinism_contract({cfg.mode, cfg.intra_op_threads, cfg.inter_op_threads});
  apply_in_process_variation(cfg.vary);
  // The test-only model's planted dependence, measured before any other
  // thread allocates (a rank group's and the loader's do).
  const double loss_factor = cfg.inject_nondeterminism == "allocation_order" ? allocation_order_factor() : 1.0;
  // Safety net: anything that still draws from the global generator gets a
  // seeded one. lockstep's own code never does.
  torch::manual_seed(derive_seed(seed.first, "global"));
  std::shared_ptr<const CsvTable> table;
  RankSetup ranks;
  if (o.rank.active()) ranks = join_rank_group(cfg, o, seed.first, contract, table);
  if (!table) table = load_table(cfg, seed.first);
  LoaderSpec spec = cfg.data.loader;
  if (o.rank.active()) {
    spec.rank = o.rank.rank;
    spec.world_size = o.rank.world_size;
    spec.augment.rank = o.rank.rank;
  }

  SmokeRun out;
  RunRecord& rec = out.record;
  std::string perturbed;  // `--perturb data`: what moved
  rec.probes = data_only_pass(cfg, o, table, spec, seed.first, perturbed);
  if (o.train) {
    TrainResult tr = training_pass(cfg, o, table, spec, seed.first, contract, ranks, loss_factor);
    out.steps_done = tr.steps_done;
    if (ranks.group) out.notes.push_back(collective_note(o.rank.rank, tr));
    if (o.resume.stop_after > 0) {
      out.stopped_at_checkpoint = true;
      return out;
    }
    rec.series = std::move(tr.series);
    rec.hashes = std::move(tr.hashes);
    rec.init = std::move(tr.init);
    rec.resources = std::move(tr.resources);
    rec.train_probes = std::move(tr.train_probes);
    rec.module_trace = std::move(tr.module_trace);
    rec.digests = std::move(tr.digests);
    if (o.rank.active()) {
      for (auto& p : rec.train_probes) p.rank = o.rank.rank;
      for (auto& e : rec.module_trace.entries) e.rank = o.rank.rank;  // the merge keeps rank 0's
    }
  }
  if (ranks.progress) ranks.progress->mark(cfg.steps, RankPhase::kDone);
  stamp_smoke_record(cfg, o, seed, contract, *table, out);
  if (!perturbed.empty()) rec.fingerprint["perturb.data"] = {perturbed, false};
  // On several machines the coordinator of node 0 reads every rank's record
  // from its own folder: rank 0 gathers the other nodes' through the store.
  if (ranks.group && o.rank.nnodes > 1)
    out.rank_records = ranks.group->gather_to_rank0("record", canonical_dump(to_json(rec)), o.rank.local_ranks());
  return out;
}

}  // namespace lockstep
