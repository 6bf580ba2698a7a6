// `lockstep import`: where the record or the pending golden goes, and what
// was read, said. The record itself is made by external/import_run.h (the
// readers: ingest/metrics.h).
#include <algorithm>
#include <climits>
#include <filesystem>
#include <iostream>

#include "cli/commands.h"
#include "compare/tolerance.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "core/hash.h"
#include "external/import_run.h"
#include "gate/bless.h"
#include "gate/provenance.h"
#include "ingest/metrics.h"
#include "record/golden.h"
#include "record/run_record.h"
#include "smoke/golden_store.h"
#include "smoke/smoke_config.h"

namespace lockstep {
namespace fs = std::filesystem;

namespace {

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

// A log whose every series starts at step 1 fits the smoke's steps 0..n-1
// only by leaving step 0 out: likely a log that counts from 1 (Hugging
// Face, Megatron-LM, torchtitan), which --step-offset -1 lines up. Said,
// not guessed.
void print_counts_from_one_note(const RunRecord& rec, const ImportRequest& o) {
  if (o.step_offset != 0 || rec.series.empty()) return;
  for (const auto& [name, s] : rec.series) {
    std::vector<int64_t> steps = step_numbers(s);
    if (steps.empty() || steps.front() != 1) return;
  }
  std::cout << "  note: every series starts at step 1, so the golden holds no step 0: if the log counts its steps "
               "from 1, import again with --step-offset -1\n";
}

int write_pending_import(const ImportRequest& o, const MetricsSpec& spec) {
  SmokeConfig cfg = load_smoke_config(o.golden);
  RunRecord rec = import_golden_record(o, cfg);
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
  print_counts_from_one_note(g.record, o);
  return 0;
}

}  // namespace

int import_command(const ImportRequest& o) {
  MetricsSpec spec = import_metrics_spec(o);
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
  } else if (!o.out.empty()) {  // before the log is read
    if (fs::exists(o.out, ec) && !fs::is_directory(o.out, ec))
      throw BadUsage("--out " + o.out + ": a folder for the pending golden, and this is a file");
    refuse_path_through_a_file(o.out, "--out");
  }
  int status = 0;
  if (!o.golden.empty()) {
    status = write_pending_import(o, spec);
  } else {
    RunRecord rec = import_record(o);
    write_run_record(o.record, rec);
    std::cout << "import: " << steps_said(rec) << " from " << o.path
              << "\n  record " << o.record << "\n";
    print_rounding_notes(rec);
    print_not_logged_notes(rec);
  }
  return status;
}

}  // namespace lockstep
