#include "external/import_run.h"

#include <algorithm>
#include <filesystem>
#include <utility>

#include "core/error.h"
#include "external/trainer_report.h"
#include "ingest/probes_jsonl.h"
#include "machine/machine_facts.h"
#include "record/platform_key.h"
#include "smoke/finish_record.h"

namespace lockstep {
namespace fs = std::filesystem;

MetricsSpec import_metrics_spec(const ImportRequest& o) {
  MetricsSpec spec;
  spec.format = parse_metrics_format(o.format);
  spec.path = o.path;
  spec.step_key = o.step_key;
  spec.mllog_step = o.mllog_step;
  spec.run = o.run;
  if (o.step_key_given && spec.format != MetricsFormat::kJsonl && spec.format != MetricsFormat::kCsv)
    throw BadUsage("--step-key: only jsonl and csv logs have a step field to name (" + o.format +
                   (spec.format == MetricsFormat::kMllog ? ": use --mllog-step)" : ": each event carries its step)"));
  if (o.mllog_step_given && spec.format != MetricsFormat::kMllog)
    throw BadUsage("--mllog-step: only for mllog logs (got " + o.format + ")");
  if (o.run_given && spec.format != MetricsFormat::kMlflow)
    throw BadUsage("--run: only for mlflow stores, which hold many runs (got " + o.format + ")");
  for (const auto& s : o.series) {
    size_t eq = s.find('=');
    std::string name = s.substr(0, eq);
    std::string tag = eq == std::string::npos ? s : s.substr(eq + 1);
    if (name.empty() || tag.empty()) throw BadUsage("--series " + s + ": expected NAME=TAG");
    if (!spec.series.emplace(name, tag).second) throw BadUsage("--series " + s + ": series " + name + " given twice");
  }
  return spec;
}

RunRecord import_record(const ImportRequest& o) {
  MetricsSpec spec = import_metrics_spec(o);
  RunRecord rec;
  rec.series = read_metrics(spec);
  // The run's steps: one past the last step any series logged.
  int64_t steps = 0;
  for (const auto& [name, s] : rec.series) {
    // Steps count optimiser steps: beyond 2^53 they are no longer exact in
    // a JSON reader, and one past the last must not overflow.
    if (!s.steps.empty() && s.steps.back() >= (int64_t{1} << 53))
      throw BadInput(o.path, name, "step numbers below 2^53, got " + std::to_string(s.steps.back()));
    steps = std::max<int64_t>(steps, s.steps.empty() ? static_cast<int64_t>(s.values.size()) : s.steps.back() + 1);
  }
  for (auto& [name, s] : rec.series)
    if (s.steps.empty() && static_cast<int64_t>(s.values.size()) != steps)
      for (int64_t i = 0; i < static_cast<int64_t>(s.values.size()); ++i) s.steps.push_back(i);
  if (!o.probes.empty()) rec.train_probes = read_probes_jsonl(o.probes);
  MachineOptions m;
  m.device = o.device;
  m.repo_path = fs::absolute(o.path).parent_path().string();
  rec.fingerprint = machine_fingerprint(m);
  rec.fingerprint["cpu.capability"] = {cpu_capability_from_isa(rec.fingerprint["cpu.isa"].value), true};
  rec.contract["mode"] = "(not applied: imported)";
  // The trainer's own stack and contract, as a trainer smoke records them.
  if (!o.trainer_report.empty()) add_trainer_facts(read_trainer_report(o.trainer_report), o.trainer_report, rec);
  rec.fingerprint["import.source"] = {std::string(metrics_format_name(spec.format)) + " " + o.path, false};
  rec.smoke = o.name;
  rec.config_hash = kNoConfigHash;
  rec.seed = o.seed;
  rec.device = o.device;
  rec.platform = platform_key(rec.fingerprint);
  rec.steps = steps;
  return rec;
}

namespace {

// The imported series on the smoke's steps 0..steps-1, shifted by
// --step-offset: exit 2 for a log running past them, or stopping early.
void fit_steps_to_smoke(RunRecord& rec, const SmokeConfig& cfg, const ImportRequest& o) {
  // The smoke's runs record steps 0..steps-1; a log that counts from 1
  // (Hugging Face, Megatron-LM) is shifted with --step-offset -1.
  for (auto& [name, s] : rec.series) {
    if (s.steps.empty() && o.step_offset == 0 && static_cast<int64_t>(s.values.size()) == cfg.steps) continue;
    std::vector<int64_t> steps = step_numbers(s);
    for (int64_t& k : steps) k += o.step_offset;
    const std::string covers = "--golden " + o.golden + ": series " + name + " covers steps " +
                               std::to_string(steps.front()) + ".." + std::to_string(steps.back()) +
                               (o.step_offset ? " (with --step-offset " + std::to_string(o.step_offset) + ")" : "");
    if (steps.front() < 0 || steps.back() >= cfg.steps)
      throw BadUsage(covers + ", but the smoke's runs log steps 0.." + std::to_string(cfg.steps - 1) +
                     (o.step_offset == 0 && steps.front() == 1 && steps.back() == cfg.steps
                          ? "; a log that counts from 1 (torchtitan, Hugging Face, Megatron-LM) needs --step-offset -1"
                      : o.step_offset != 0
                          ? "; the log's own steps are " + std::to_string(steps.front() - o.step_offset) + ".." +
                                std::to_string(steps.back() - o.step_offset) + ": check --step-offset"
                          : "; set \"steps\" in the smoke to the imported run's length"));
    // A log that stops early (a run cut short) would pass every check on
    // its first steps: it must reach the smoke's last step, within the
    // widest gap between the steps it logs (every k steps).
    // Logged every `gap` steps, the next point would lie past the last step.
    int64_t gap = 1;
    for (size_t i = 1; i < steps.size(); ++i) gap = std::max(gap, steps[i] - steps[i - 1]);
    if (steps.back() + gap <= cfg.steps - 1)
      throw BadUsage(covers + ", but the smoke's runs log steps 0.." + std::to_string(cfg.steps - 1) +
                     ": the log stops early (a run cut short?); import a log of the whole run, or set \"steps\" in "
                     "the smoke to " + std::to_string(steps.back() + 1));
    s.steps = steps.size() == static_cast<size_t>(cfg.steps) && steps.front() == 0 ? std::vector<int64_t>{} : steps;
  }
}

// A trainer smoke records the series its trainer.metrics.series names:
// an imported series of another name would never be compared.
void refuse_series_the_smoke_lacks(const RunRecord& rec, const SmokeConfig& cfg, const ImportRequest& o) {
  if (!cfg.has_trainer()) return;
  std::string unknown;
  for (const auto& [name, s] : rec.series)
    if (!cfg.trainer.series.count(name)) unknown += (unknown.empty() ? "" : ", ") + name;
  if (unknown.empty()) return;
  std::string known;
  for (const auto& [name, tag] : cfg.trainer.series) known += (known.empty() ? "" : ", ") + name;
  throw BadUsage("--series: " + unknown + ": not a series " + o.golden + " records (trainer.metrics.series: " + known +
                 "); name each imported series as the smoke does");
}

}  // namespace

RunRecord import_golden_record(const ImportRequest& o, const SmokeConfig& cfg) {
  if (!o.platform.empty() && !is_platform_key(o.platform))
    throw BadUsage("--platform " + input_excerpt(o.platform) +
                   ": expected a platform key as runs name their goldens, such as cpu-x86_64-avx2 or cuda-sm90 "
                   "(docs/platforms.md)");
  RunRecord rec = import_record(o);
  refuse_series_the_smoke_lacks(rec, cfg, o);
  fit_steps_to_smoke(rec, cfg, o);
  // The stamp every record gets (the smoke's identity and value fields),
  // on this machine's fingerprint: its platform key is the last fallback.
  finish_record(cfg, {{o.seed_given ? o.seed : cfg.seed, false}, cfg.steps}, rec);
  // The curves' own stack is not known: the golden claims none (this
  // machine's fingerprint would be a false one), only where they came
  // from, the smoke's value fields, and --trainer-report's facts.
  Fingerprint kept;
  for (const auto& [key, field] : rec.fingerprint)
    if (key == "import.source" || key == "config.values_xxh3" || key.rfind("trainer.", 0) == 0) kept.emplace(key, field);
  rec.fingerprint = std::move(kept);
  rec.contract.clear();
  rec.stack.clear();
  // Filed where the smoke's runs look: --platform, else the one platform
  // the smoke declares, else this machine's key (a same-family golden
  // stands in for another CPU capability).
  if (!o.platform.empty()) rec.platform = o.platform;
  else if (cfg.platforms.size() == 1) rec.platform = cfg.platforms.front();
  // The smoke's runs are what the golden is compared with: a platform key
  // of their device.
  if (std::string family = rec.platform.substr(0, rec.platform.find('-'));
      (family == "cpu" || family == "cuda") && family != rec.device)
    throw BadUsage("--platform " + rec.platform + ": a " + family + " platform key, but smoke " + cfg.name +
                   " runs on device " + cfg.device + "; give a " + cfg.device + " platform key");
  return rec;
}

}  // namespace lockstep
