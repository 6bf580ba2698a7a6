#include "gate/bless.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>

#include "compare/change_summary.h"
#include "compare/tolerance_policy.h"
#include "core/error.h"
#include "core/float_bits.h"
#include "machine/git_state.h"
#include "gate/check.h"
#include "gate/provenance.h"
#include "gate/smoke_outputs.h"
#include "record/platform_key.h"
#include "smoke/golden_store.h"
#include "smoke/smoke_config.h"

namespace lockstep {
namespace fs = std::filesystem;

namespace {

bool under(const std::string& file, const std::string& dir) {
  auto rel = fs::path(file).lexically_relative(dir);
  return !rel.empty() && rel.native().rfind("..", 0) != 0;
}

// "" unless `cfg` declares platforms and `platform` is not one of them.
std::string undeclared_platform_note(const SmokeConfig& cfg, const std::string& platform) {
  if (cfg.platforms.empty() ||
      std::find(cfg.platforms.begin(), cfg.platforms.end(), platform) != cfg.platforms.end())
    return "";
  std::string declared;
  for (const auto& p : cfg.platforms) declared += (declared.empty() ? "" : ", ") + p;
  return "platform " + platform + " is not among the platforms " + cfg.file + " declares (" + declared +
         "): this stack picks another CPU capability or GPU; add it to \"platforms\" so verify-goldens requires "
         "its golden, or run with ATEN_CPU_CAPABILITY to keep the declared one";
}

// "" unless `made` (filed under a stack label) was made on the stack of
// `unlabeled` (its stand-in): no determinism-relevant fingerprint field
// and no contract setting differs, the inputs aside.
std::string same_stack_label_note(const RunRecord& unlabeled, const RunRecord& made, const std::string& path) {
  if (made.stack.empty() || !unlabeled.stack.empty() || unlabeled.contract != made.contract) return "";
  for (const FieldDiff& d : diff_fingerprints(unlabeled.fingerprint, made.fingerprint))
    if (d.relevant) return "";
  return "stack label " + made.stack + " (LOCKSTEP_STACK) on the stack the unlabeled " + path +
         " was made on (no determinism-relevant field or contract setting differs): this files a second golden "
         "for one stack; a label is for a stack that differs (docs/platforms.md): bless without it";
}

}  // namespace

std::vector<std::string> outside_folders(const GitState& git, const std::vector<std::string>& files,
                                         const std::vector<std::string>& own_folders) {
  std::vector<std::string> out;
  for (const auto& f : files) {
    std::string path = (fs::path(git.workdir) / f).lexically_normal().string();
    bool own = false;
    for (const auto& folder : own_folders)
      own = own || under(path, fs::absolute(folder).lexically_normal().string());
    if (!own) out.push_back(f);
  }
  return out;
}

void refuse_dirty_tree(const GitState& git, const std::vector<std::string>& own_folders, bool allow_dirty,
                       const std::string& command) {
  if (!git.in_repo || allow_dirty) return;
  std::vector<std::string> dirty = outside_folders(git, git.dirty_files, own_folders);
  if (dirty.empty()) return;
  std::string list;
  for (size_t i = 0; i < dirty.size() && i < 10; ++i) list += "\n  " + dirty[i];
  if (dirty.size() > 10) list += "\n  ... and " + std::to_string(dirty.size() - 10) + " more";
  throw BadUsage("refusing to " + command + " from a dirty work tree (commit first, or pass --allow-dirty, "
                 "which is recorded):" + list);
}

void validate_contract(const RunRecord& record, const SmokeConfig& config, const std::string& action) {
  std::map<std::string, std::string> expected = {{"mode", config.mode},
                                                 {"intra_op_threads", std::to_string(config.intra_op_threads)},
                                                 {"inter_op_threads", std::to_string(config.inter_op_threads)}};
  const DistributedSpec& d = config.distributed;
  expected["distributed.world_size"] = d.configured ? std::to_string(d.world_size) : "(none: a single process)";
  expected["distributed.backend"] = d.configured ? d.backend : "(none: a single process)";
  for (const auto& [key, want] : expected) {
    auto it = record.contract.find(key);
    bool multi_key = key.rfind("distributed.", 0) == 0;
    std::string have = it != record.contract.end() ? it->second : multi_key ? "(none: a single process)" : want;
    if (have != want)
      throw BadUsage("refusing to " + action + ": it was made with contract." + key + " " + have + ", but " +
                     config.file + " sets " + want + " (a run with an override, such as --intra-op-threads or "
                     "--world-size, is no golden for the smoke)");
  }
}

void validate_golden_candidate(const RunRecord& record, int runs, bool allow_nonfinite, const std::string& action) {
  if (runs < 2)
    throw BadUsage("refusing to " + action + ": it was made from " + std::to_string(runs) +
                   " run; a golden needs at least 2 bit-identical runs in fresh processes (run `lockstep check` "
                   "with --repeat 2 or more, or `lockstep bless`)");
  if (allow_nonfinite) return;
  if (auto bad = first_nonfinite(record))
    throw BadUsage("refusing to " + action + ": " + bad->field + " is non-finite (" + format_double(bad->value) +
                   "); a golden holds finite values unless the smoke sets tolerance.allow_nonfinite_golden");
}

void validate_kept_golden(const Golden& golden, const SmokeConfig& config, const std::string& action) {
  // An imported golden has no reruns and no contract to hold it to; its
  // contract differs from any run's, which puts its comparisons in the
  // cross-stack lane.
  bool imported = !golden.provenance.imported_from.empty();
  if (!imported) validate_contract(golden.record, config, action);
  validate_golden_candidate(golden.record, imported ? 2 /* no reruns to require */ : golden.provenance.runs,
                            config.tolerance.allow_nonfinite_golden, action);
  refuse_rounded_series(golden.record, config, action);
  // A trainer smoke records the series its config names and no other: a
  // golden holding another was not made from this config.
  if (std::string why = foreign_series(golden.record, config); !why.empty())
    throw BadUsage("refusing to " + action + ": " + why);
}

void refuse_rounded_series(const RunRecord& record, const SmokeConfig& config, const std::string& action) {
  for (const auto& [name, series] : record.series)
    if (std::string why = rounded_series_problem(config.tolerance, name, series); !why.empty())
      throw BadUsage("refusing to " + action + ": series " + name + ": " + why + " (in " + config.file + ")");
}

void add_seed_statistics(const std::vector<RunRecord>& runs, RunRecord& golden) {
  for (auto& [name, series] : golden.series) {
    // Statistics per step: every seed must log the same steps (a trainer
    // logging a metric at other steps for another seed has no per-step mean).
    for (size_t k = 1; k < runs.size(); ++k) {
      auto other = runs[k].series.find(name);
      if (other == runs[k].series.end() || other->second.steps != series.steps ||
          other->second.values.size() != series.values.size())
        throw BadUsage("refusing a multi-seed golden: series " + name + " is logged at other steps with seed " +
                       std::to_string(runs[k].seed) + " than with seed " + std::to_string(runs[0].seed));
    }
    size_t n = series.values.size();
    series.mean.assign(n, 0.0);
    series.std.assign(n, 0.0);
    for (size_t i = 0; i < n; ++i) {
      double sum = 0;
      for (const auto& r : runs) sum += r.series.at(name).values.at(i);
      double mean = sum / static_cast<double>(runs.size());
      double sq = 0;
      for (const auto& r : runs) {
        double d = r.series.at(name).values.at(i) - mean;
        sq += d * d;
      }
      series.mean[i] = mean;
      series.std[i] = std::sqrt(sq / static_cast<double>(runs.size()));
    }
  }
}

BlessedGolden bless_smoke(const std::string& file, const BlessSmokeOptions& o, Launcher& launcher) {
  SmokeConfig cfg = load_smoke_config(file);
  std::string root = goldens_root(file, o.goldens_dir);
  GitState git = read_git_state(fs::absolute(file).parent_path().string());
  refuse_dirty_tree(git, {root, o.out_dir}, o.allow_dirty, "bless");

  std::string dir = (fs::path(o.out_dir) / cfg.name).string();
  clear_smoke_outputs(dir);
  // The config's seed first (its run is the golden's record), then the extra seeds.
  std::vector<uint64_t> seeds = {cfg.seed};
  for (uint64_t s : o.seeds)
    if (std::find(seeds.begin(), seeds.end(), s) == seeds.end()) seeds.push_back(s);
  if (!o.seeds.empty() && seeds.size() < 2)
    throw BadUsage("--seeds must name a seed other than the config's " + std::to_string(cfg.seed));
  std::vector<RunRecord> per_seed;
  for (uint64_t seed : seeds) {
    ChildRun base;
    base.smoke = file;
    base.share_data_pass = shares_data_pass(cfg);
    if (seed != cfg.seed) base.seed = std::to_string(seed);
    // Run 2 varies what must not matter, as check's does: a golden check
    // would call nondeterministic is never blessed.
    base.variation = o.runs >= 2 ? repeat_variation(cfg) : RunVariation{};
    base.varied_run = base.variation.empty() ? 0 : 2;
    std::string prefix = o.seeds.empty() ? "bless" : "bless-seed-" + std::to_string(seed);
    std::vector<RunRecord> runs = run_children(launcher, base, dir, prefix, o.runs);
    if (auto [i, diff] = first_repeat_difference(runs); !diff.empty())
      throw Error(ExitCode::kNondeterministic,
                  "refusing to bless " + cfg.name + ": run " + std::to_string(i + 1) + " differs from run 1" +
                      (o.seeds.empty() ? "" : " (seed " + std::to_string(seed) + ")") +
                      (i == 1 && base.varied_run == 2
                           ? " (run 2 varied what must not matter: " + describe_variation(base.variation) +
                                 "; docs/equivalence.md, \"Perturbed repeats\")"
                           : "") +
                      ": " + diff);
    // The same rule as check's: the batches trained on are the data-only pass's.
    if (auto [code, why] = data_pass_mismatch(cfg, runs[0], o.runs, dir); !why.empty())
      throw Error(code, "refusing to bless " + cfg.name + ": " + why);
    validate_golden_candidate(runs[0], o.runs, cfg.tolerance.allow_nonfinite_golden, "bless " + cfg.name);
    for (const auto& [name, s] : runs[0].series)
      if (std::string why = rounded_series_problem(cfg.tolerance, name, s); !why.empty())
        throw BadInput(cfg.file, "tolerance.series." + name, "a rule for series " + name + ": " + why);
    per_seed.push_back(std::move(runs[0]));
  }

  BlessedGolden b;
  b.smoke = cfg.name;
  b.seeds = per_seed.size();
  b.data_pass_note = missing_data_pass_note(cfg);
  b.golden.record = per_seed[0];
  if (per_seed.size() > 1) add_seed_statistics(per_seed, b.golden.record);
  b.golden.provenance = stamp_provenance("bless", o.reason, git, o.runs);
  b.golden.provenance.allow_dirty = o.allow_dirty;
  if (per_seed.size() > 1) b.golden.provenance.seeds = seeds;

  const RunRecord& made = b.golden.record;
  b.path = golden_path(root, cfg.name, golden_key(made.platform, made.stack));
  std::error_code ec;
  b.replaces = fs::exists(b.path, ec);
  b.undeclared_note = undeclared_platform_note(cfg, made.platform);
  std::optional<GoldenLookup> stand_in;
  if (!b.replaces && (stand_in = find_golden(root, cfg.name, made.platform, made.stack))) b.stand_in = stand_in->path;
  if (b.replaces || stand_in) {
    try {
      Golden previous = read_golden_or_record(b.replaces ? b.path : b.stand_in);
      if (b.replaces) b.golden.provenance.replaces = previous.content_hash;
      b.changes = describe_changes(previous.record, b.golden.record);
      if (stand_in && !stand_in->exact_stack) b.same_stack_label_note = same_stack_label_note(previous.record, made, b.stand_in);
    } catch (const Error& e) {
      b.changes = "  (the previous golden could not be read: " + std::string(e.what()) + ")\n";
    }
  }
  return b;
}

}  // namespace lockstep
