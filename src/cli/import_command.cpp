// `lockstep import`: a trainer's metric log read into a run record, with
// this machine's fingerprint, for `compare` and the reports. The readers
// are ingest/metrics.h; nothing is decided here.
#include <algorithm>
#include <climits>
#include <filesystem>
#include <iostream>

#include "cli/commands.h"
#include "compare/tolerance.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "core/hash.h"
#include "gate/bless.h"
#include "gate/provenance.h"
#include "smoke/smoke_config.h"
#include "smoke/golden_store.h"
#include "machine/machine_facts.h"
#include "external/trainer_report.h"
#include "ingest/metrics.h"
#include "ingest/probes_jsonl.h"
#include "record/golden.h"
#include "record/platform_key.h"
#include "record/run_record.h"

namespace lockstep {
namespace fs = std::filesystem;

namespace {

// The MetricsSpec the options ask for; an option the format does not read
// is refused, not ignored: a user who passes --step-key to a TensorBoard
// import expects it to matter.
MetricsSpec spec_of(const ImportOptions& o) {
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

// The series read, with this machine's fingerprint: a run record with no
// contract applied (its comparisons are in the cross-stack lane).
RunRecord imported_record(const ImportOptions& o, const MetricsSpec& spec) {
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

// "1 series, steps 1..5 (5 values)": what the log held, as it numbers its
// steps (a record's `steps` is one past the last).
std::string steps_said(const RunRecord& rec) {
  int64_t first = INT64_MAX, last = -1;
  size_t values = 0;
  bool same = true;
  for (const auto& [name, s] : rec.series) {
    std::vector<int64_t> steps = step_numbers(s);
    if (steps.empty()) continue;
    first = std::min(first, steps.front());
    last = std::max(last, steps.back());
    same = same && (values == 0 || values == s.values.size());
    values = std::max(values, s.values.size());
  }
  std::string out = std::to_string(rec.series.size()) + " series";
  if (last < 0) return out;
  return out + ", steps " + std::to_string(first) + ".." + std::to_string(last) + " (" + (same ? "" : "up to ") +
         std::to_string(values) + " value" + (values == 1 ? "" : "s") + (rec.series.size() > 1 ? " each" : "") + ")";
}

// "<format> <absolute path> (xxh3 <hex>)": the source a golden's provenance
// names; a folder (TensorBoard, an MLflow run) has no single hash.
std::string source_of(const MetricsSpec& spec) {
  std::string path = fs::absolute(spec.path).lexically_normal().string();
  std::string out = std::string(metrics_format_name(spec.format)) + " " + path;
  std::error_code ec;
  if (fs::is_regular_file(spec.path, ec)) {
    std::string bytes = read_file(spec.path);
    out += " (xxh3 " + hex64(xxh3_64(bytes)) + ")";
  }
  if (!spec.run.empty()) out += ", run " + spec.run;
  return out;
}

// A note for each series a source rounded (the precision guard).
void print_rounding_notes(const RunRecord& rec) {
  for (const auto& [name, s] : rec.series)
    if (s.rounded > 0)
      std::cout << "  note: " << name << ": every value sits on a " << format_error(s.rounded)
                << " grid: the source rounded it (marked \"rounded\"; an exact rule, or a tolerance below half the "
                   "step, is refused on it)\n";
}

// A note for each series with steps its source marked not logged
// (Megatron-LM's "nan"): left out, not taken as NaN values.
void print_not_logged_notes(const RunRecord& rec) {
  for (const auto& [name, s] : rec.series) {
    if (s.not_logged_count == 0) continue;
    std::string listed;
    for (int64_t m : s.not_logged) listed += (listed.empty() ? "" : ", ") + std::to_string(m);
    if (s.not_logged_count > s.not_logged.size())
      listed += ", and " + std::to_string(s.not_logged_count - s.not_logged.size()) + " more";
    std::cout << "  note: " << name << ": " << s.not_logged_count << " of " << s.values.size() + s.not_logged_count
              << " steps not logged in the source (\"nan\"): " << listed
              << "; left out, so checks compare the logged steps only\n";
  }
}

// --golden SMOKE: the record as a pending golden of that smoke.
// The imported series on the smoke's steps 0..steps-1, shifted by
// --step-offset: exit 2 for a log running past them, or stopping early.
void fit_steps_to_smoke(RunRecord& rec, const SmokeConfig& cfg, const ImportOptions& o) {
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
                          : "; set \"steps\" in the smoke to the imported run's length"));
    // A log that stops early (a run cut short) would pass every check on
    // its first steps: it must reach the smoke's last step, within the
    // widest gap between the steps it logs (every k steps).
    int64_t gap = 0;
    for (size_t i = 1; i < steps.size(); ++i) gap = std::max(gap, steps[i] - steps[i - 1]);
    if (steps.back() + gap < cfg.steps - 1)
      throw BadUsage(covers + ", but the smoke's runs log steps 0.." + std::to_string(cfg.steps - 1) +
                     ": the log stops early (a run cut short?); import a log of the whole run, or set \"steps\" in "
                     "the smoke to " + std::to_string(steps.back() + 1));
    s.steps = steps.size() == static_cast<size_t>(cfg.steps) && steps.front() == 0 ? std::vector<int64_t>{} : steps;
  }
}

// The pending golden's path: never inside the goldens folder, and never
// over a golden, but for an earlier import's pending one (not yet
// accepted), which is replaced.
void refuse_unsafe_pending_path(const std::string& path, const std::string& smoke_file) {
  std::error_code pending_ec;
  bool earlier_import = false;
  if (fs::is_regular_file(path, pending_ec)) {
    try {
      earlier_import = read_golden(path).provenance.action == "import";
    } catch (const Error&) {
    }
  }
  refuse_writing_into_folder_of_goldens(path, goldens_root(smoke_file, ""), "the pending golden", !earlier_import);
}

int write_pending_import(const ImportOptions& o, const MetricsSpec& spec, RunRecord rec) {
  SmokeConfig cfg = load_smoke_config(o.golden);
  if (cfg.has_trainer()) {
    std::string unknown;
    for (const auto& [name, s] : rec.series)
      if (!cfg.trainer.series.count(name)) unknown += (unknown.empty() ? "" : ", ") + name;
    if (!unknown.empty()) {
      std::string known;
      for (const auto& [name, tag] : cfg.trainer.series) known += (known.empty() ? "" : ", ") + name;
      throw BadUsage("--series: " + unknown + ": not a series " + o.golden + " records (trainer.metrics.series: " +
                     known + "); name each imported series as the smoke does");
    }
  }
  if (!o.platform.empty() && !is_golden_name(o.platform))
    throw BadUsage("--platform " + o.platform + ": expected a platform key such as cpu-x86_64-avx2 (letters, digits, "
                   "'.', '_', '-')");
  fit_steps_to_smoke(rec, cfg, o);
  // The curves' own stack is not known: the golden claims none (this
  // machine's fingerprint would be a false one), only where they came from.
  Fingerprint source = {{"import.source", rec.fingerprint.at("import.source")}};
  for (const auto& [key, field] : rec.fingerprint)
    if (key.rfind("trainer.", 0) == 0) source.emplace(key, field);  // --trainer-report's facts
  rec.fingerprint = std::move(source);
  rec.contract.clear();
  rec.steps = cfg.steps;
  rec.smoke = cfg.name;
  rec.config_hash = cfg.config_hash;
  rec.seed = o.seed_given ? o.seed : cfg.seed;
  // Filed where the smoke's runs look: --platform, else the one platform
  // the smoke declares, else this machine's key (a same-family golden
  // stands in for another CPU capability).
  if (!o.platform.empty()) rec.platform = o.platform;
  else if (cfg.platforms.size() == 1) rec.platform = cfg.platforms.front();
  // The smoke's runs are what the golden is compared with: its device, and
  // a platform key of that device.
  rec.device = cfg.device;
  if (std::string family = rec.platform.substr(0, rec.platform.find('-'));
      (family == "cpu" || family == "cuda") && family != rec.device)
    throw BadUsage("--platform " + rec.platform + ": a " + family + " platform key, but smoke " + cfg.name +
                   " runs on device " + cfg.device + "; give a " + cfg.device + " platform key");
  // A curve rounded by its source is refused here, not first at accept.
  refuse_rounded_series(rec, cfg, "import " + o.path + " as a golden of " + cfg.name);
  // Not lockstep-out: a check clears its smoke's folder there.
  std::string out_dir = o.out.empty() ? "lockstep-import" : o.out;
  std::string path = pending_path(out_dir, rec.smoke, rec.platform);
  refuse_unsafe_pending_path(path, o.golden);
  Golden g;
  g.record = std::move(rec);
  std::string imported_from = source_of(spec);
  g.provenance = stamp_provenance("import", "(pending review: imported from " + imported_from + ")",
                                  fs::absolute(o.golden).parent_path().string(), 0);
  g.provenance.imported_from = imported_from;
  write_golden(path, g);
  std::cout << "import: " << steps_said(g.record) << " from " << o.path
            << "\n  pending golden of " << cfg.name << " for " << g.record.platform << ": " << path
            << "\n  next: lockstep review " << out_dir << ", then lockstep accept " << out_dir
            << " --reason \"...\" (the smoke runs " << cfg.steps << " steps; the comparison uses the tolerance "
               "lane: no lockstep contract made these curves)\n";
  print_rounding_notes(g.record);
  print_not_logged_notes(g.record);
  return 0;
}

}  // namespace

int import_command(const ImportOptions& o) {
  MetricsSpec spec = spec_of(o);
  if (!o.golden.empty() && !o.record.empty())
    throw BadUsage("import --record " + o.record + " with --golden: a pending golden goes to --out DIR (default "
                   "lockstep-import), not to a record file; drop one");
  std::error_code ec;
  if (fs::is_directory(o.path, ec)) {  // a TensorBoard or MLflow run folder: nothing inside it is written
    const std::string out = o.golden.empty() ? o.record : o.out.empty() ? "lockstep-import" : o.out;
    const std::string flag = o.golden.empty() ? "--record " : "--out ";
    fs::path in = fs::weakly_canonical(fs::absolute(o.path)), to = fs::weakly_canonical(fs::absolute(out));
    if (!out.empty() && std::mismatch(in.begin(), in.end(), to.begin(), to.end()).first == in.end())
      throw BadUsage(flag + out + ": inside the folder read (" + o.path + "); write " +
                     (o.golden.empty() ? "the record" : "the pending golden") + " elsewhere");
  }
  if (o.golden.empty()) {
    if (o.record.empty()) throw BadUsage("import: --record FILE is required (or --golden SMOKE for a pending golden)");
    if (o.step_offset != 0) throw BadUsage("--step-offset: only with --golden (a record keeps the log's own steps)");
    if (!o.platform.empty()) throw BadUsage("--platform: only with --golden (a record's platform is this machine's)");
    refuse_overwriting_inputs(o.record, {o.path, o.probes});
    refuse_overwriting_a_golden(o.record, "the imported record");
    refuse_replacing_other_than_a_record(o.record, "--record");
    if (!is_golden_name(o.name))
      throw BadUsage("--name " + o.name + ": a smoke name of 1 to 100 letters, digits, '.', '_' and '-', not starting "
                     "with '.'");
  }
  RunRecord rec = imported_record(o, spec);
  int status = 0;
  if (!o.golden.empty()) {
    status = write_pending_import(o, spec, std::move(rec));
  } else {
    write_run_record(o.record, rec);
    std::cout << "import: " << steps_said(rec) << " from " << o.path
              << "\n  record " << o.record << "\n";
    print_rounding_notes(rec);
    print_not_logged_notes(rec);
  }
  return status;
}

}  // namespace lockstep
