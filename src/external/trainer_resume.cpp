#include "external/trainer_resume.h"

#include <algorithm>
#include <filesystem>

#include "core/atomic_file.h"
#include "core/error.h"
#include "core/file_hash_cache.h"
#include "spec/resume_contract.h"

namespace lockstep {
namespace fs = std::filesystem;

namespace {

// After a resume: the two halves must join on the same grid (the resumed
// run logging from the step the stopped one would have logged next).
void check_grid(const std::map<std::string, Series>& series, const std::string& part, const std::string& file) {
  for (const auto& [name, s] : series) {
    if (s.steps.size() < 2) continue;
    int64_t stride = s.steps[1] - s.steps[0];
    for (size_t i = 2; i < s.steps.size(); ++i)
      if (s.steps[i] - s.steps[i - 1] != stride)
        throw BadInput(file, name, "the resumed run to continue the steps of " + part + " every " +
                                       std::to_string(stride) + " step(s), got step " + std::to_string(s.steps[i]) +
                                       " after step " + std::to_string(s.steps[i - 1]));
  }
}

}  // namespace

std::string partial_path(const std::string& checkpoint) { return checkpoint + ".lockstep-part.json"; }

ResumePoint read_resume_point(const SmokeConfig& c, const std::string& resume, uint64_t seed) {
  const TrainerConfig& t = c.trainer;
  std::string part = partial_path(resume);
  std::error_code ec;
  if (!fs::exists(part, ec))
    throw BadUsage("--resume " + resume + ": no " + part + " beside it (it is written by `lockstep run --stop-after`)");
  std::string sum = part + ".xxh3";
  if (!fs::exists(sum, ec))
    throw BadInput(part, "", "its XXH3-128 in " + sum + " (missing: the stopped run was interrupted, or the file "
                                                        "was copied without it; stop the run again)");
  if (fs::file_size(sum, ec) > 64 || ec)  // 32 hex digits and a newline
    throw BadInput(sum, "", "the XXH3-128 of " + part + " (32 hex digits), got a file of another size or kind");
  std::string want = read_file(sum), got = file_xxh3(part);
  if (!want.empty() && want.back() == '\n') want.pop_back();
  if (want != got)
    throw BadInput(part, "", "XXH3-128 " + printable_message(want.substr(0, 40), false) + " as " + sum +
                                 " records, got " + got + " (the file changed after the run stopped)");
  ResumePoint rp;
  RunRecord& partial = rp.partial;
  partial = read_run_record(part);
  if (partial.smoke != c.name) throw BadInput(part, "smoke", "\"" + c.name + "\", got \"" + input_excerpt(partial.smoke) + "\"");
  if (partial.config_hash != c.config_hash)
    throw BadInput(part, "config_hash", c.config_hash + " (" + c.file + "'s), got " + partial.config_hash +
                                            ": the run was stopped under another config");
  // Planted changes (--lr-scale, --perturb) are value fields: both halves hold the same.
  if (!partial.config.empty() && partial.config != c.values_fields) {
    std::string fields;
    for (const auto& f : differing_config_fields(partial.config, c.values_fields)) fields += (fields.empty() ? "" : ", ") + f;
    throw BadInput(part, "config", "this run's config values and planted changes, got other ones (" + fields +
                                       "): --lr-scale or --perturb given to one run and not the other?");
  }
  if (partial.seed != seed) throw BadInput(part, "seed", std::to_string(seed) + ", got " + std::to_string(partial.seed));
  // The determinism contract (intra-op threads, mode, ...) of both halves is one.
  require_resume_contract(part, expected_contract(c), partial.contract, "this run's: " + c.file + " and the overrides");
  int64_t world = c.distributed.configured ? c.distributed.world_size : 1;
  auto w = partial.contract.find("distributed.world_size");
  std::string stopped_on = w == partial.contract.end() ? "1" : w->second;
  if (stopped_on != std::to_string(world))
    throw BadInput(part, "contract.distributed.world_size",
                   std::to_string(world) + " (this run's ranks, distributed.world_size or --world-size: a run "
                   "resumes on as many ranks as it stopped on), got " + stopped_on);
  // The step it stopped after: the series' last step + 1; its train
  // probes, when the trainer writes them, are every rank's, W per step.
  for (const auto& [name, s] : partial.series)
    if (!s.steps.empty()) rp.at = std::max(rp.at, s.steps.back() + 1);
  if (rp.at < 1 || rp.at >= c.steps)
    throw BadInput(part, "series", "steps 0 to at most " + std::to_string(c.steps - 2) + " (a run stopped before "
                                   "the last of the " + std::to_string(c.steps) + " steps), got " +
                                   std::to_string(rp.at) + " steps");
  size_t probes = t.probes.empty() ? 0 : static_cast<size_t>(rp.at * world);
  if (partial.train_probes.size() != probes)
    throw BadInput(part, "train_probes", std::to_string(probes) + " probes (" +
                                             (t.probes.empty() ? std::string("the trainer writes none")
                                                               : "one per rank and step: " + std::to_string(world) +
                                                                     " x " + std::to_string(rp.at)) +
                                             "), got " + std::to_string(partial.train_probes.size()));
  return rp;
}

void merge_with_stopped_run(const ResumePoint& rp, const std::string& part, int trace_steps, TrainedOutputs& out) {
  for (auto& [name, s] : out.series) {
    auto p = rp.partial.series.find(name);
    if (p == rp.partial.series.end()) throw BadInput(part, "series." + name, "the series the resumed run logs");
    Series merged = p->second;
    merged.steps = step_numbers(merged);
    if (merged.dtype != s.dtype)
      throw BadInput(out.metrics_path, name, std::string(dtype_name(merged.dtype)) + " as before the checkpoint, got " +
                                                 dtype_name(s.dtype));
    merged.values.insert(merged.values.end(), s.values.begin(), s.values.end());
    merged.steps.insert(merged.steps.end(), s.steps.begin(), s.steps.end());
    s = std::move(merged);
  }
  if (!rp.partial.module_trace.entries.empty()) {
    ModuleTrace merged = rp.partial.module_trace;
    merged.steps = trace_steps;
    for (auto& e : out.trace.entries) merged.entries.push_back(std::move(e));
    for (auto& o : out.trace.ops) merged.ops.push_back(std::move(o));
    merged.ops_dropped += out.trace.ops_dropped;
    if (merged.ops_not_traced.empty()) merged.ops_not_traced = out.trace.ops_not_traced;
    if (!merged.ops.empty()) merged.ops_not_traced.clear();  // ops or the reason, never both
    out.trace = std::move(merged);
  }
  if (!rp.partial.digests.empty()) {  // the steps before the checkpoint, then the resumed ones
    StepDigests merged = rp.partial.digests;
    if (merged.steps.empty())
      for (size_t i = 0; i < merged.params.size(); ++i) merged.steps.push_back(static_cast<int64_t>(i));
    for (size_t i = 0; i < out.digests.params.size(); ++i) {
      merged.steps.push_back(out.digests.step_of(i));
      merged.params.push_back(out.digests.params[i]);
      merged.grads.push_back(out.digests.grads[i]);
    }
    out.digests = std::move(merged);
  }
  std::vector<BatchProbe> probes = rp.partial.train_probes;
  probes.insert(probes.end(), out.train_probes.begin(), out.train_probes.end());
  out.train_probes = std::move(probes);
  check_grid(out.series, part, out.metrics_path);
}

}  // namespace lockstep
