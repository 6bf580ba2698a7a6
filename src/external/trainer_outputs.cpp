#include "external/trainer_outputs.h"

#include <algorithm>
#include <cstring>
#include <filesystem>

#include "core/error.h"
#include "core/float_bits.h"
#include "ingest/metrics.h"
#include "ingest/digests_jsonl.h"
#include "ingest/module_trace_jsonl.h"
#include "ingest/probes_jsonl.h"
#include "ingest/series_builder.h"

namespace lockstep {
namespace fs = std::filesystem;

namespace {

// The data-only passes at other DataLoader worker counts must give the
// batches of the first, bit for bit: a difference is exit 4 naming the
// batch (the trainer's batches depend on how many workers load them).
// Returns that message, "" when they agree.
std::string worker_count_difference(const std::vector<BatchProbe>& first, int first_workers,
                                    const std::vector<BatchProbe>& other, int workers, const std::string& first_path,
                                    const std::string& path) {
  auto count = [](int w) { return std::to_string(w) + (w == 1 ? " DataLoader worker" : " DataLoader workers"); };
  const std::string why =
      ": the trainer's batches depend on its worker count (augmentation or noise drawn from a stream each worker "
      "has its own copy of: torch's global generator (torch.randn, torch.rand), Python's global random, numpy's "
      "global RNG, a generator the dataset owns; draw from a "
      "generator seeded per sample instead, docs/trainers.md). Probes: " + first_path + ", " + path;
  for (size_t i = 0; i < std::min(first.size(), other.size()); ++i)
    if (std::string d = batch_content_difference(first[i], other[i]); !d.empty())
      return "the data-only pass with " + count(workers) + " differs from the one with " + count(first_workers) +
             " at batch " + std::to_string(i) +
             (first[i].rank >= 0 ? " (rank " + std::to_string(first[i].rank) + ")" : std::string()) + ": " + d + why;
  if (first.size() != other.size())
    return "the data-only pass with " + count(workers) + " probed " + std::to_string(other.size()) +
           " batches, the one with " + count(first_workers) + " " + std::to_string(first.size()) + why;
  return "";
}

// A multi-rank trainer's ranks must log the same value of every series
// lockstep compares: `other` (rank r's) must equal `zero` (rank 0's) bit for bit.
void check_ranks_agree(const std::map<std::string, Series>& zero, const std::map<std::string, Series>& other, int r,
                       const std::string& path0, const std::string& path) {
  for (const auto& [name, s] : zero) {
    auto it = other.find(name);
    if (it == other.end())
      throw BadInput(path, name, "the series rank 0 logs (" + path0 + "): every rank that logs logs the same series");
    const Series& o = it->second;
    for (size_t i = 0; i < std::min(s.values.size(), o.values.size()); ++i) {
      double a = s.values[i], b = o.values[i];
      if (std::memcmp(&a, &b, sizeof a) != 0 || step_numbers(s)[i] != step_numbers(o)[i])
        throw Error(ExitCode::kRegression,
                    path + ": rank " + std::to_string(r) + " logged " + name + " = " + format_double(b) + " at step " +
                        std::to_string(step_numbers(o)[i]) + ", rank 0 logged " + format_double(a) + " at step " +
                        std::to_string(step_numbers(s)[i]) + " (" + path0 + "): a series lockstep compares is a "
                        "global one, the same on every rank (log the all-reduced value, not each rank's own)");
    }
    if (s.values.size() != o.values.size())
      throw Error(ExitCode::kRegression, path + ": rank " + std::to_string(r) + " logged " +
                                             std::to_string(o.values.size()) + " values of " + name + ", rank 0 " +
                                             std::to_string(s.values.size()) + " (" + path0 + ")");
  }
}

}  // namespace

void require_written(const SmokeConfig& c, const std::string& field, const std::string& path, const std::string& out) {
  std::error_code ec;
  if (fs::exists(path, ec) || fs::is_symlink(fs::symlink_status(path, ec))) return;  // a dangling link is read, and named
  std::vector<std::string> held;
  size_t n = 0;
  for (fs::recursive_directory_iterator it(out, ec), end; !ec && it != end && n < 200; it.increment(ec), ++n)
    if (it->is_regular_file(ec)) held.push_back(fs::path(it->path()).lexically_relative(out).generic_string());
  std::sort(held.begin(), held.end());
  std::string list;
  for (size_t i = 0; i < held.size() && i < 10; ++i) list += (i ? ", " : "") + held[i];
  if (held.size() > 10) list += ", ...";
  throw BadInput(c.file, field,
                 "the path the trainer writes; it exited 0 without writing " + path +
                     (held.empty() ? std::string(" ({out} is empty)") : " ({out} holds " + list + ")"));
}

void check_coverage(std::map<std::string, Series>& series, int64_t first, int64_t end, const std::string& file) {
  for (auto& [name, s] : series) {
    s.steps = step_numbers(s);
    if (s.steps.empty()) throw BadInput(file, name, "values for steps " + std::to_string(first) + ".." + std::to_string(end - 1));
    int64_t stride = s.steps.size() > 1 ? s.steps[1] - s.steps[0] : 1;
    if (s.steps.front() < first || s.steps.back() >= end)
      throw BadInput(file, name, "steps in " + std::to_string(first) + ".." + std::to_string(end - 1) +
                                     " (the steps this run trains), got step " +
                                     std::to_string(s.steps.front() < first ? s.steps.front() : s.steps.back()));
    if (s.steps.back() + stride < end)
      throw BadInput(file, name, "values up to step " + std::to_string(end - 1) + " (logged every " +
                                     std::to_string(stride) + "), the last is step " + std::to_string(s.steps.back()) +
                                     ": the trainer stopped early");
  }
}

void compact_steps(Series& s) {
  bool dense = true;
  for (size_t i = 0; i < s.steps.size() && dense; ++i) dense = s.steps[i] == static_cast<int64_t>(i);
  if (dense) s.steps.clear();
}

[[noreturn]] void throw_data_pass_difference(const std::string& deferred, const std::vector<BatchProbe>& data,
                                             const std::vector<BatchProbe>* trained, int workers,
                                             const std::string& data_path, const std::string& trained_what) {
  if (trained)
    for (size_t i = 0; i < std::min(data.size(), trained->size()); ++i)
      if (std::string d = batch_content_difference(data[i], (*trained)[i]); !d.empty())
        throw Error(ExitCode::kNondeterministic,
                    "the training pass and the data-only pass, both with " + std::to_string(workers) +
                        (workers == 1 ? " DataLoader worker" : " DataLoader workers") + ", differ at batch " +
                        std::to_string(i) +
                        (data[i].rank >= 0 ? " (rank " + std::to_string(data[i].rank) + ")" : std::string()) + ": " +
                        d + ": the batches are not fixed by the seed (a sampler, shuffle or augmentation generator "
                        "seeded from the clock or os.urandom, or not seeded; docs/trainers.md); the passes at other "
                        "worker counts differ too. Probes: " + data_path + ", " + trained_what);
  throw Error(ExitCode::kNondeterministic, deferred);
}

std::pair<TrainerReport, std::string> check_reports(const TrainerLayout& l, const PassPlan& p, bool train) {
  auto checked = [&](const std::string& dir) { return read_checked_report(l.c, dir); };
  std::string report_dir = l.rank_dir(train || p.data_outs.empty() ? p.train_out : p.data_outs.front(), 0);
  for (int r = 0; r < l.world; ++r) {
    for (size_t k = 0; k < p.data_outs.size(); ++k)
      if (train || r > 0 || k > 0) checked(l.rank_dir(p.data_outs[k], r));
    if (train && r > 0) checked(l.rank_dir(p.train_out, r));
  }
  return {checked(report_dir), report_dir + "/" + kTrainerReportFile};
}

std::vector<BatchProbe> read_data_probes(const TrainerLayout& l, const PassPlan& p, std::string& difference,
                                         std::string& first_path) {
  std::vector<BatchProbe> first;
  for (size_t k = 0; k < p.data_outs.size(); ++k) {
    std::vector<std::vector<BatchProbe>> per_rank;
    std::string path;
    for (int r = 0; r < l.world; ++r) {
      std::string file = l.path("trainer.probes", l.c.trainer.probes, l.rank_dir(p.data_outs[k], r), r, l.worker_counts[k]);
      if (path.empty()) path = file;
      require_written(l.c, "trainer.probes", file, l.rank_dir(p.data_outs[k], r));
      per_rank.push_back(read_probes_jsonl(file));
    }
    std::vector<BatchProbe> probes =
        l.multi ? interleave_rank_probes(per_rank, p.data_outs[k] + " (data-only pass)") : std::move(per_rank.front());
    if (k == 0) {
      first = std::move(probes);
      first_path = path;
    } else if (difference.empty()) {
      difference = worker_count_difference(first, l.worker_counts.front(), probes, l.worker_counts[k], first_path, path);
    }
  }
  return first;
}

void read_metrics_of_ranks(const TrainerLayout& l, const PassPlan& p, int64_t first, int64_t end, TrainedOutputs& out,
                           std::vector<std::string>& notes) {
  const TrainerConfig& t = l.c.trainer;
  const int workers = l.worker_counts.front();
  MetricsSpec spec;
  spec.format = parse_metrics_format(t.metrics_format);
  spec.path = l.path("trainer.metrics.path", t.metrics_path, l.rank_dir(p.train_out, 0), 0, workers);
  spec.series = t.series;
  spec.step_key = t.step_key;
  spec.mllog_step = t.mllog_step;
  require_written(l.c, "trainer.metrics.path", spec.path, l.rank_dir(p.train_out, 0));
  try {
    out.series = read_metrics(spec);
  } catch (const MissingSeries& e) {  // the config's spelling, named where it is written
    throw BadInput(l.c.file, "trainer.metrics.series." + e.names.front(),
                   "a " + e.kind + " the trainer logs in " + spec.path + ", got '" + input_excerpt(e.key) +
                       "', which never appears" + e.hint);
  }
  out.metrics_path = spec.path;
  check_coverage(out.series, first, end, spec.path);
  for (int r = 1; r < l.world; ++r) {
    MetricsSpec other = spec;
    other.path = l.path("trainer.metrics.path", t.metrics_path, l.rank_dir(p.train_out, r), r, workers);
    std::error_code ec;
    if (other.path == spec.path || !fs::exists(other.path, ec)) {
      notes.push_back("rank " + std::to_string(r) + " logged no metrics (" + other.path + "); rank 0's are the run's");
      continue;
    }
    std::map<std::string, Series> theirs = read_metrics(other);
    check_coverage(theirs, first, end, other.path);
    check_ranks_agree(out.series, theirs, r, spec.path, other.path);
  }
}

void read_trained_batches_and_trace(const TrainerLayout& l, const PassPlan& p, int64_t first, int64_t end,
                                    TrainedOutputs& out, std::vector<std::string>& notes) {
  const TrainerConfig& t = l.c.trainer;
  const int workers = l.worker_counts.front();
  if (!t.probes.empty()) {
    std::vector<std::vector<BatchProbe>> per_rank;
    for (int r = 0; r < l.world; ++r) {
      std::string probes = l.path("trainer.probes", t.probes, l.rank_dir(p.train_out, r), r, workers);
      require_written(l.c, "trainer.probes", probes, l.rank_dir(p.train_out, r));
      per_rank.push_back(read_probes_jsonl(probes, first));
      if (static_cast<int64_t>(per_rank.back().size()) != end - first)
        throw BadInput(probes, "", "one probe per step trained (" + std::to_string(end - first) + "), got " +
                                       std::to_string(per_rank.back().size()));
    }
    out.train_probes = l.multi ? interleave_rank_probes(per_rank, l.work + " (training pass)", first * l.world)
                               : std::move(per_rank.front());
  }
  std::error_code ec;
  // A link that leads nowhere is read too (and refused, naming the file).
  auto present = [&ec](const std::string& file) {
    return fs::exists(file, ec) || fs::is_symlink(fs::symlink_status(file, ec));
  };
  // Rank 0's: after the all-reduce and the update every rank holds the same bytes.
  if (std::string digests = l.rank_dir(p.train_out, 0) + "/" + kDigestsFile; l.c.trace.digests && present(digests))
    out.digests = read_digests_jsonl(digests, end, first);
  std::string trace_file =
      l.path("trainer.module_trace", "{out}/module_trace.jsonl", l.rank_dir(p.train_out, 0), 0, workers);
  if (l.c.trace.steps <= 0 || !present(trace_file)) return;
  out.trace = read_module_trace_jsonl(trace_file, l.c.trace.steps, first);
  if (out.trace.entries.empty() && first < l.c.trace.steps)
    notes.push_back(trace_file + " holds no entry although trace.steps is " + std::to_string(l.c.trace.steps) +
                    ": call tracer.step(step) before each step's forward (python/lockstep ModuleTracer), "
                    "or set trace.steps to 0");
  else if (l.c.trace.ops && out.trace.ops.empty() && out.trace.ops_not_traced.empty() && first < l.c.trace.steps)
    notes.push_back(trace_file + " holds no op entry although trace.ops is true: the helper records them with "
                    "ModuleTracer(..., ops=True) or LOCKSTEP_TRACE_OPS=1 (python/lockstep of this lockstep)");
  if (l.multi) {
    for (auto& e : out.trace.entries) e.rank = 0;
    for (auto& o : out.trace.ops) o.rank = 0;
  }
}

}  // namespace lockstep
