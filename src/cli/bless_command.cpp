// `lockstep bless SMOKE... --reason TEXT`: regenerate goldens.
//
// Refuses (exit 2) without a reason, on a dirty work tree (files under the
// goldens folder excepted: they are bless's own output) unless
// --allow-dirty, inside CI unless --in-ci, and when a run holds NaN/Inf.
// Refuses (exit 4) unless `runs` fresh runs are bit-identical. Writes the
// golden atomically and prints what changed against the golden it replaces.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <iostream>

#include "cli/child_runs.h"
#include "cli/commands.h"
#include "cli/golden_store.h"
#include "cli/smoke_config.h"
#include "compare/change_summary.h"
#include "compare/compare.h"
#include "core/error.h"
#include "env/git_state.h"
#include "record/golden.h"

namespace lockstep {
namespace fs = std::filesystem;

namespace {

bool under(const std::string& file, const std::string& dir) {
  auto rel = fs::path(file).lexically_relative(dir);
  return !rel.empty() && rel.native().rfind("..", 0) != 0;
}

void refuse_dirty(const GitState& git, const std::string& goldens_root, bool allow_dirty) {
  if (!git.in_repo || allow_dirty) return;
  std::vector<std::string> dirty;
  for (const auto& f : git.dirty_files)
    if (!under((fs::path(git.workdir) / f).lexically_normal().string(), goldens_root)) dirty.push_back(f);
  if (dirty.empty()) return;
  std::string list;
  for (size_t i = 0; i < dirty.size() && i < 10; ++i) list += "\n  " + dirty[i];
  if (dirty.size() > 10) list += "\n  ... and " + std::to_string(dirty.size() - 10) + " more";
  throw BadUsage("refusing to bless from a dirty work tree (commit first, or pass --allow-dirty, "
                 "which is recorded):" + list);
}

void refuse_nonfinite(const RunRecord& r, const std::string& smoke) {
  for (const auto& [name, s] : r.series)
    for (size_t i = 0; i < s.values.size(); ++i)
      if (!std::isfinite(s.values[i]))
        throw BadUsage("refusing to bless " + smoke + ": series " + name + " is non-finite (" +
                       std::to_string(s.values[i]) + ") at step " + std::to_string(i));
}

// "42,43" -> {42, 43}: decimal unsigned 64-bit integers, no empty item, no
// sign, no duplicate.
std::vector<uint64_t> parse_seed_list(const std::string& text) {
  std::vector<uint64_t> out;
  size_t start = 0;
  while (true) {
    size_t comma = text.find(',', start);
    std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    uint64_t v = 0;
    auto res = std::from_chars(item.data(), item.data() + item.size(), v);
    if (item.empty() || res.ec != std::errc() || res.ptr != item.data() + item.size())
      throw BadUsage("--seeds " + text + ": expected comma-separated unsigned 64-bit integers, got \"" + item + "\"");
    if (std::find(out.begin(), out.end(), v) != out.end())
      throw BadUsage("--seeds " + text + ": seed " + item + " is listed twice");
    out.push_back(v);
    if (comma == std::string::npos) return out;
    start = comma + 1;
  }
}

// Multi-seed golden: per step, the mean and population std of every series
// over the seeds' runs (Series, "sigma" rule in docs/comparison.md).
void add_seed_statistics(const std::vector<RunRecord>& runs, RunRecord& golden) {
  for (auto& [name, series] : golden.series) {
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

void bless_one(const std::string& file, const BlessOptions& o) {
  SmokeConfig cfg = load_smoke_config(file);
  std::string root = goldens_root(file, o.goldens_dir);
  GitState git = read_git_state(fs::absolute(file).parent_path().string());
  refuse_dirty(git, fs::absolute(root).lexically_normal().string(), o.allow_dirty);

  std::string dir = (fs::path(o.out_dir) / cfg.name).string();
  // The config's seed first (its run is the golden's record), then --seeds.
  std::vector<uint64_t> extra = o.seeds.empty() ? std::vector<uint64_t>{} : parse_seed_list(o.seeds);
  std::vector<uint64_t> seeds = {cfg.seed};
  for (uint64_t s : extra)
    if (std::find(seeds.begin(), seeds.end(), s) == seeds.end()) seeds.push_back(s);
  if (!extra.empty() && seeds.size() < 2)
    throw BadUsage("--seeds must name a seed other than the config's " + std::to_string(cfg.seed));
  std::vector<RunRecord> per_seed;
  for (uint64_t seed : seeds) {
    bool config_seed = seed == cfg.seed;
    std::string prefix = o.seeds.empty() ? "bless" : "bless-seed-" + std::to_string(seed);
    std::vector<RunRecord> runs =
        run_children(file, dir, prefix, o.runs, {}, config_seed ? "" : std::to_string(seed));
    if (auto [i, diff] = first_repeat_difference(runs); !diff.empty())
      throw Error(ExitCode::kNondeterministic, "refusing to bless " + cfg.name + ": run " + std::to_string(i + 1) +
                                                   " differs from run 1" +
                                                   (o.seeds.empty() ? "" : " (seed " + std::to_string(seed) + ")") +
                                                   ": " + diff);
    refuse_nonfinite(runs[0], cfg.name);
    per_seed.push_back(std::move(runs[0]));
  }

  Golden g;
  g.record = per_seed[0];
  if (per_seed.size() > 1) add_seed_statistics(per_seed, g.record);
  g.provenance.reason = o.reason;
  g.provenance.created_utc = utc_now();
  g.provenance.git_commit = git.in_repo ? git.commit : "(absent: " + git.error + ")";
  g.provenance.git_author = git.in_repo ? git.author : "(absent: " + git.error + ")";
  g.provenance.tool_version = LOCKSTEP_VERSION;
  g.provenance.allow_dirty = o.allow_dirty;
  g.provenance.runs = o.runs;
  if (per_seed.size() > 1) g.provenance.seeds = seeds;

  std::string path = golden_path(root, cfg.name, g.record.platform);
  std::string changes;
  bool replaces = fs::exists(path);
  if (replaces) {
    try {
      changes = describe_changes(read_golden_or_record(path).record, g.record);
    } catch (const Error& e) {
      changes = "  (the previous golden could not be read: " + std::string(e.what()) + ")\n";
    }
  }
  std::string hash = write_golden(path, g);
  std::cout << "blessed " << path << " (" << o.runs << " bit-identical runs";
  if (per_seed.size() > 1) std::cout << " per seed, " << per_seed.size() << " seeds";
  std::cout << ", content " << hash << ")\n";
  if (!replaces)
    std::cout << "  new golden (none existed for platform " << g.record.platform << ")\n";
  else if (changes.empty())
    std::cout << "  no value changed against the golden it replaces\n";
  else
    std::cout << "changes against the golden it replaces:\n" << changes;
}

}  // namespace

bool running_in_ci() {
  const char* ci = std::getenv("CI");
  return ci && *ci && std::string(ci) != "0" && std::string(ci) != "false";
}

int bless_command(const BlessOptions& o) {
  if (o.reason.find_first_not_of(" \t\n") == std::string::npos)
    throw BadUsage("bless needs --reason TEXT: say why the goldens change (it is recorded)");
  if (running_in_ci() && !o.in_ci)
    throw BadUsage("CI is set: bless does not write goldens in CI (a failing check leaves pending "
                   "files instead); pass --in-ci to bless here anyway");
  for (const auto& file : expand_smoke_args(o.smokes)) bless_one(file, o);
  std::cout << "now review the change and commit goldens/ with the same reason\n";
  return 0;
}

}  // namespace lockstep
