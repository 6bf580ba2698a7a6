// `lockstep import`: a trainer's metric log read into a run record, with
// this machine's fingerprint, for `compare` and the reports. The readers
// are ingest/metrics.h; nothing is decided here.
#include <algorithm>
#include <filesystem>
#include <iostream>

#include "cli/commands.h"
#include "compare/tolerance.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "smoke/golden_store.h"
#include "machine/machine_facts.h"
#include "external/trainer_report.h"
#include "ingest/metrics.h"
#include "ingest/probes_jsonl.h"
#include "record/platform_key.h"
#include "record/run_record.h"

namespace lockstep {
namespace fs = std::filesystem;

int import_command(const ImportOptions& o) {
  MetricsSpec spec;
  spec.format = parse_metrics_format(o.format);
  spec.path = o.path;
  spec.step_key = o.step_key;
  spec.mllog_step = o.mllog_step;
  // An option the format does not read is refused, not ignored: a user who
  // passes --step-key to a TensorBoard import expects it to matter.
  if (o.step_key_given && spec.format != MetricsFormat::kJsonl && spec.format != MetricsFormat::kCsv)
    throw BadUsage("--step-key: only jsonl and csv logs have a step field to name (" + o.format +
                   (spec.format == MetricsFormat::kMllog ? ": use --mllog-step)" : ": each event carries its step)"));
  if (o.mllog_step_given && spec.format != MetricsFormat::kMllog)
    throw BadUsage("--mllog-step: only for mllog logs (got " + o.format + ")");
  for (const auto& s : o.series) {
    size_t eq = s.find('=');
    std::string name = s.substr(0, eq);
    std::string tag = eq == std::string::npos ? s : s.substr(eq + 1);
    if (name.empty() || tag.empty()) throw BadUsage("--series " + s + ": expected NAME=TAG");
    if (!spec.series.emplace(name, tag).second) throw BadUsage("--series " + s + ": series " + name + " given twice");
  }
  refuse_overwriting_inputs(o.out, {o.path, o.probes});
  refuse_overwriting_a_golden(o.out, "the imported record");

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
  rec.config_hash = "0000000000000000";
  rec.seed = o.seed;
  rec.device = o.device;
  rec.platform = platform_key(rec.fingerprint);
  rec.steps = steps;
  write_run_record(o.out, rec);
  std::cout << "import: " << rec.series.size() << " series over " << steps << " steps from " << o.path << "\n  record "
            << o.out << "\n";
  for (const auto& [name, s] : rec.series)
    if (s.rounded > 0)
      std::cout << "  note: " << name << ": every value sits on a " << format_error(s.rounded)
                << " grid: the source rounded it (marked \"rounded\"; an exact rule, or a tolerance below half the "
                   "step, is refused on it)\n";
  return 0;
}

}  // namespace lockstep
