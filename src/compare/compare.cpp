#include "compare/compare.h"

#include <algorithm>
#include <cctype>
#include <iterator>
#include <cmath>
#include <cstdio>
#include <cstdint>
#include <limits>
#include <set>

#include "core/error.h"
#include "core/float_bits.h"
#include "core/json_io.h"
#include "compare/first_divergence.h"
#include "compare/lane.h"

namespace lockstep {

namespace {

const double kNaN = std::numeric_limits<double>::quiet_NaN();

std::string fmt(double v) { return format_double(v); }

// ---- 1. comparability ---------------------------------------------------------

void require_comparable(const RunRecord& run, const RunRecord& golden,
                        const TolerancePolicy& policy, const CompareLabels& labels) {
  // Another smoke first: its seed differing would be the lesser news.
  if (run.smoke != golden.smoke)
    throw BadUsage(labels.run + ": a run of smoke '" + run.smoke + "', but " + labels.golden + " is of smoke '" +
                   golden.smoke + "': records of different smokes are never compared" +
                   (run.smoke == "imported" || golden.smoke == "imported"
                        ? " (`lockstep import` names its record's smoke 'imported' unless --name gives the smoke's "
                          "name: import again with --name " + (run.smoke == "imported" ? golden.smoke : run.smoke) + ")"
                        : ""));
  // A seed set by LOCKSTEP_SEED is another experiment, never compared; a
  // seed changed in the config is a changed input (config.values_xxh3),
  // which the comparison names and fails.
  if (run.seed != golden.seed && (run.seed_overridden || golden.seed_overridden))
    throw BadUsage(labels.run + ": seed " + std::to_string(run.seed) +
                   (run.seed_overridden ? " (overridden by LOCKSTEP_SEED)" : "") +
                   " differs from the golden's seed " + std::to_string(golden.seed) + " in " +
                   labels.golden + ": runs of different seeds are never compared");
  // The seed is one of the config's values: a golden claiming another seed
  // than the run's under the very same config values hash contradicts
  // itself (its seed.base edited by hand), where verify-goldens says so too.
  if (run.seed != golden.seed) {
    auto rc = run.fingerprint.find("config.values_xxh3"), gc = golden.fingerprint.find("config.values_xxh3");
    if (rc != run.fingerprint.end() && gc != golden.fingerprint.end() && rc->second.value == gc->second.value)
      throw BadInput(labels.golden, "seed.base",
                     std::to_string(run.seed) + ", the seed of the config values it was made from (its "
                     "config.values_xxh3 is the run's), got " + std::to_string(golden.seed) +
                         ": the golden contradicts itself (edited by hand?); re-bless");
  }
  if (golden.series.empty() && golden.probes.empty() && golden.train_probes.empty() &&
      golden.hashes.empty())
    throw BadInput(labels.golden, "", "a golden with at least one series, probe or hash (it is empty)");
  if (!policy.allow_nonfinite_golden)
    if (auto bad = first_nonfinite(golden))
      throw BadInput(labels.golden, bad->field,
                     "a finite value, got " + fmt(bad->value) +
                         " (set tolerance.allow_nonfinite_golden in the smoke config to allow it; `lockstep "
                         "compare` reads the config with --config SMOKE)");
  for (const RunRecord* side : {&golden, &run})
    for (const auto& [name, s] : side->series)
      if (std::string why = rounded_series_problem(policy, name, s); !why.empty())
        throw BadInput(side == &golden ? labels.golden : labels.run, "series." + name + ".rounded", "a rule for it: " + why);
  for (const auto& [name, s] : golden.series) {
    if (policy.for_series(name).rule == Tolerance::Rule::kSigma && s.std.empty())
      throw BadInput(labels.golden, "series." + name + ".std",
                     "per-step std (a multi-seed golden): the smoke holds " + name + " to " +
                         policy.for_series(name).describe());
  }
}

// ---- shared value loop -----------------------------------------------------------

// Compares `actual` against `golden` element-wise and appends a SeriesResult
// and, when any value fails, one Finding.
void compare_values(Section section, const std::string& name, const std::vector<double>& actual,
                    const std::vector<double>& golden, const std::vector<double>& golden_std,
                    const Tolerance& tol, bool float32, const char* index_word, Verdict& v,
                    const std::vector<int64_t>& steps = {}) {
  SeriesResult r;
  r.section = section;
  r.name = name;
  r.rule = tol.describe();
  r.tolerance = tol;
  r.max_rel = kNaN;
  ValueCheck first;
  for (size_t i = 0; i < golden.size(); ++i) {
    double sd = i < golden_std.size() ? golden_std[i] : 0;
    ValueCheck c = check_value(actual[i], golden[i], tol, float32, sd);
    ++r.checked;
    if (std::isfinite(c.abs_err) && (r.max_abs_at < 0 || c.abs_err > r.max_abs)) {
      r.max_abs = c.abs_err;
      r.max_abs_at = static_cast<int64_t>(i);
    }
    if (!std::isnan(c.rel_err) && (r.max_rel_at < 0 || c.rel_err > r.max_rel)) {
      r.max_rel = c.rel_err;
      r.max_rel_at = static_cast<int64_t>(i);
    }
    r.max_use = std::max(r.max_use, tolerance_use(c, tol));
    if (c.pass) continue;
    if (r.failed++ == 0) {
      r.first_fail = static_cast<int64_t>(i);
      first = c;
    }
  }
  v.values_checked += r.checked;
  // A series logged at some steps only: report step numbers, not positions.
  auto step_of = [&steps](int64_t i) { return i >= 0 && !steps.empty() ? steps[static_cast<size_t>(i)] : i; };
  if (r.failed > 0) {
    size_t i = static_cast<size_t>(r.first_fail);
    std::string detail = std::string(index_word) + " " + std::to_string(step_of(r.first_fail)) + ": " + v.reference_word + " " +
                         fmt(golden[i]) + ", " + v.subject_word + " " + fmt(actual[i]);
    if (first.non_finite) {
      detail += ": non-finite value in the run";
    } else {
      detail += ", |err| " + format_error(first.abs_err) + ", rel " + format_error(first.rel_err);
      if (float32 || tol.rule == Tolerance::Rule::kUlp) detail += ", " + std::to_string(first.ulps) + " ulp";
      detail += "; rule " + tol.describe();
      if (tol.rule == Tolerance::Rule::kClose || tol.rule == Tolerance::Rule::kSigma)
        detail += " (allowed " + format_error(first.allowed) + ")";
      // A float64 ULP is 2^-52 relative, 2^29 times a float32 one: a ULP
      // rule sized for float32 noise is all but exact here.
      if (tol.rule == Tolerance::Rule::kUlp && !float32)
        detail += " (a float64 series: " + std::to_string(tol.max_ulp) + " ulp is about " +
                  format_error(static_cast<double>(tol.max_ulp) * 2.220446049250313e-16) +
                  " relative; for float32-sized noise give it an rtol rule, e.g. {\"atol\": 0, \"rtol\": 1e-6})";
    }
    detail += "; " + std::to_string(r.failed) + " of " + std::to_string(r.checked) + " fail";
    v.findings.push_back({section, name, step_of(r.first_fail), detail});
  }
  r.first_fail = step_of(r.first_fail);
  r.max_abs_at = step_of(r.max_abs_at);
  r.max_rel_at = step_of(r.max_rel_at);
  v.results.push_back(r);
}

// ---- 3. data probes -------------------------------------------------------------

// " (rank 1's batch 3)" for entry b of a multi-rank record, whose entries
// interleave the ranks' batches (entry b is batch b / W of rank b % W);
// "" for a single process.
std::string rank_note(const std::vector<BatchProbe>& run, size_t b) {
  int64_t world = 0;
  for (const auto& p : run) world = std::max(world, p.rank + 1);
  if (run[b].rank < 0 || world <= 0) return "";
  return " (rank " + std::to_string(run[b].rank) + "'s batch " + std::to_string(static_cast<int64_t>(b) / world) + ")";
}

// What the per-batch pass found beyond its own findings.
struct BatchDiffs {
  size_t other_samples = 0;      ///< batches whose sample indices differ
  int64_t first_other = -1;      ///< the first of them
  int64_t first_hash_diff = -1;  ///< the first batch whose bytes differ
};

// Per batch of two lists of equal length: a shape, dtype or NaN/Inf count
// that changed is a finding; other samples and other bytes are counted.
BatchDiffs compare_batches(const std::string& list_name, const std::vector<BatchProbe>& run,
                           const std::vector<BatchProbe>& golden, Verdict& v) {
  BatchDiffs d;
  for (size_t b = 0; b < golden.size(); ++b) {
    const BatchProbe& g = golden[b];
    const BatchProbe& r = run[b];
    std::string where = list_name + "[" + std::to_string(b) + "]";
    if (g.sample_index_hash != r.sample_index_hash && d.other_samples++ == 0) d.first_other = static_cast<int64_t>(b);
    for (const char* part : {"inputs", "labels"}) {
      const TensorStats& gs = std::string(part) == "inputs" ? g.inputs : g.labels;
      const TensorStats& rs = std::string(part) == "inputs" ? r.inputs : r.labels;
      if (gs.shape != rs.shape || gs.dtype != rs.dtype)
        v.findings.push_back({Section::kData, where + "." + part, static_cast<int64_t>(b),
                              "shape or dtype changed: " + v.reference_word + " " + nlohmann::json(gs.shape).dump() + " " +
                                  gs.dtype + ", run " + nlohmann::json(rs.shape).dump() + " " + rs.dtype});
      if (gs.nan_count != rs.nan_count || gs.inf_count != rs.inf_count)
        v.findings.push_back({Section::kData, where + "." + part + ".non_finite", static_cast<int64_t>(b),
                              "NaN/Inf counts " + v.reference_word + " " + std::to_string(gs.nan_count) + "/" +
                                  std::to_string(gs.inf_count) + ", run " + std::to_string(rs.nan_count) +
                                  "/" + std::to_string(rs.inf_count)});
      if (gs.xxh3_128 != rs.xxh3_128 && d.first_hash_diff < 0) d.first_hash_diff = static_cast<int64_t>(b);
    }
  }
  return d;
}

// Each statistic of inputs and labels across the batches, under its rule
// (exact in an exact lane); true when one failed.
bool compare_probe_statistics(const std::string& list_name, const std::vector<BatchProbe>& run,
                              const std::vector<BatchProbe>& golden, const TolerancePolicy& policy, bool exact,
                              Verdict& v) {
  size_t findings_before = v.findings.size();
  for (const char* part : {"inputs", "labels"}) {
    for (const auto& stat : tensor_stat_names()) {
      std::string field = std::string(part) + "." + stat;
      std::vector<double> a, g;
      for (size_t b = 0; b < golden.size(); ++b) {
        bool in = std::string(part) == "inputs";
        a.push_back(tensor_stat(in ? run[b].inputs : run[b].labels, stat));
        g.push_back(tensor_stat(in ? golden[b].inputs : golden[b].labels, stat));
      }
      Tolerance tol = exact ? Tolerance::exact() : policy.for_probe(field);
      compare_values(Section::kData, list_name + "." + field, a, g, {}, tol, false, "batch", v);
    }
  }
  return v.findings.size() > findings_before;
}

// Batch `b`'s bytes differ: "bit-level only" when no statistic moved by
// more than 1e-7 relative (e.g. x/255 vs x*(1/255)). A finding when
// `binding` (an exact lane, or statistics that failed too), else a note.
void report_hash_difference(const std::string& list_name, const std::vector<BatchProbe>& run,
                            const std::vector<BatchProbe>& golden, int64_t b, bool binding, Verdict& v) {
  bool tiny = true;
  const BatchProbe& g = golden[static_cast<size_t>(b)];
  const BatchProbe& r = run[static_cast<size_t>(b)];
  for (const auto& stat : tensor_stat_names())
    for (int part = 0; part < 2; ++part)
      if (!check_value(tensor_stat(part ? r.labels : r.inputs, stat), tensor_stat(part ? g.labels : g.inputs, stat),
                       Tolerance::close(0, 1e-7), false)
               .pass)
        tiny = false;
  std::string kind = tiny ? "bit-level only: the bytes differ but every statistic agrees within 1e-7 relative"
                          : "the bytes and the statistics differ";
  std::string what = "content hash differs from batch " + std::to_string(b) + rank_note(run, static_cast<size_t>(b)) +
                     " (" + kind + ")";
  if (binding)
    v.findings.push_back({Section::kData, list_name + "[" + std::to_string(b) + "].xxh3_128", b, what});
  else
    v.notes.push_back(list_name + ": " + what + "; expected across stacks, statistics within tolerance");
}

void compare_probe_lists(const std::string& list_name, const std::vector<BatchProbe>& run,
                         const std::vector<BatchProbe>& golden, const TolerancePolicy& policy,
                         bool exact, Verdict& v) {
  if (run.size() != golden.size()) {
    v.findings.push_back({Section::kData, list_name, -1,
                          "batch count " + std::to_string(golden.size()) + " vs " +
                              std::to_string(run.size()) + " (" + v.reference_word + " vs " + v.subject_word + ")"});
    return;
  }
  if (golden.empty()) return;
  // Structural and hash checks per batch; statistics per field across batches.
  BatchDiffs d = compare_batches(list_name, run, golden, v);
  if (d.first_other >= 0)  // one finding: the first batch, and how many differ
    v.findings.push_back({Section::kData, list_name + "[" + std::to_string(d.first_other) + "].sample_index_hash",
                          d.first_other,
                          "batch " + std::to_string(d.first_other) + rank_note(run, static_cast<size_t>(d.first_other)) +
                              " holds other samples than in " +
                              (v.reference_word == "golden" ? "the golden" : v.reference_word) +
                              " (sampler order changed); " + std::to_string(d.other_samples) + " of " +
                              std::to_string(golden.size()) + " batches do"});
  bool stats_failed = compare_probe_statistics(list_name, run, golden, policy, exact, v);
  if (d.first_hash_diff >= 0) report_hash_difference(list_name, run, golden, d.first_hash_diff, exact || stats_failed, v);
}

// ---- 4. training series -----------------------------------------------------------

// "steps 0, 5, ..., 45 (10 values)" or "steps 0..9" for a series.
std::string describe_steps(const Series& s) {
  size_t n = s.values.size();
  if (n == 0) return "no steps";
  if (s.steps.empty()) return "steps 0.." + std::to_string(n - 1);
  std::string out = "steps " + std::to_string(s.steps.front());
  if (n > 1) out += ", " + std::to_string(s.steps[1]);
  if (n > 2) out += ", ..., " + std::to_string(s.steps.back());
  return out + " (" + std::to_string(n) + " values)";
}

void compare_series(const RunRecord& run, const RunRecord& golden, const TolerancePolicy& policy,
                    bool exact, Verdict& v) {
  for (const auto& name : key_union(golden.series, run.series)) {
    auto g = golden.series.find(name);
    auto r = run.series.find(name);
    if (g == golden.series.end() || r == run.series.end()) {
      v.findings.push_back({Section::kTrain, name, -1,
                            std::string("series present in the ") +
                                (g == golden.series.end() ? v.subject_word : v.reference_word) + " only"});
      continue;
    }
    const Series& gs = g->second;
    const Series& rs = r->second;
    // Dense on both sides: a length difference, said below. Otherwise steps
    // are matched by number (0..n-1 spelled out is the dense series).
    if ((!gs.steps.empty() || !rs.steps.empty()) && step_numbers(gs) != step_numbers(rs)) {
      v.findings.push_back({Section::kTrain, name, -1,
                            "logged at other steps: " + describe_steps(gs) + " (" + v.reference_word + ") vs " +
                                describe_steps(rs) + " (" + v.subject_word + ")"});
      continue;
    }
    if (gs.values.size() != rs.values.size()) {
      v.findings.push_back({Section::kTrain, name, -1,
                            "length " + std::to_string(gs.values.size()) + " vs " +
                                std::to_string(rs.values.size()) + " steps (" + v.reference_word + " vs " + v.subject_word + ")"});
      continue;
    }
    bool f32 = gs.dtype == Series::Dtype::kFloat32;
    // TensorBoard's simple_value is float32: against float64 values (a
    // JSONL log, an imported golden) a difference within float32's
    // rounding, about 6e-8 relative, is the format's, not the training's.
    if (gs.dtype != rs.dtype)
      v.notes.push_back(name + ": the " + v.reference_word + "'s values are " + dtype_name(gs.dtype) + ", the " +
                        v.subject_word + "'s " + dtype_name(rs.dtype) + " (a float32 log, such as TensorBoard's "
                        "simple_value, against a float64 one): a difference within float32's rounding, about 6e-8 "
                        "relative, comes from the format; an exact rule cannot pass unless every value is a float32 one");
    Tolerance tol = policy.for_series(name);
    if (exact) tol = Tolerance::exact();
    const std::vector<double>& reference = tol.rule == Tolerance::Rule::kSigma ? gs.sigma_center() : gs.values;
    compare_values(Section::kTrain, name, rs.values, reference, gs.std, tol, f32, "step", v, gs.steps);
  }
}

// ---- 5. hashes ----------------------------------------------------------------

void compare_hashes(const RunRecord& run, const RunRecord& golden, bool exact, Verdict& v) {
  for (const auto& name : key_union(golden.hashes, run.hashes)) {
    auto g = golden.hashes.find(name);
    auto r = run.hashes.find(name);
    std::string gv = g == golden.hashes.end() ? "(missing)" : g->second;
    std::string rv = r == run.hashes.end() ? "(missing)" : r->second;
    if (g != golden.hashes.end() && r != run.hashes.end()) ++v.values_checked;
    if (gv == rv) continue;
    if (exact || gv == "(missing)" || rv == "(missing)")
      v.findings.push_back({Section::kHashes, "hashes." + name, -1, v.reference_word + " " + gv + ", " + v.subject_word + " " + rv});
    else
      v.notes.push_back("hashes." + name + " differs (expected across stacks)");
  }
}

// ---- 5a. per-step digests ----------------------------------------------------------

// The parameters' and gradients' bytes at each step (record/step_digests.h),
// at the steps both records hold: where the lane is exact, the first step
// either moved is a finding (the loss and the norms may not show it); in a
// tolerance lane they move by design, said in a note. Absent on either
// side (a record made before them, a trainer that writes none): nothing.
void compare_digests(const RunRecord& run, const RunRecord& golden, bool exact, Verdict& v) {
  if (run.digests.empty() || golden.digests.empty()) return;
  DigestDivergence d = first_digest_divergence(run.digests, golden.digests);
  v.values_checked += 2 * d.common_steps;
  auto at = [](const StepDigests& s, int64_t step, bool grads) {
    for (size_t i = 0; i < s.params.size(); ++i)
      if (s.step_of(i) == step) return grads ? s.grads[i] : s.params[i];
    return std::string("(missing)");
  };
  for (const auto& [step, grads] : {std::pair<int64_t, bool>{d.grads_step, true}, {d.params_step, false}}) {
    if (step < 0) continue;
    const std::string what = grads ? "the gradients' bytes (after backward)" : "the parameters' bytes (after the update)";
    if (exact)
      v.findings.push_back({Section::kTrain, grads ? "digests.grads" : "digests.params", step,
                            what + " first differ at step " + std::to_string(step) + ": " + v.reference_word + " " +
                                at(golden.digests, step, grads) + ", " + v.subject_word + " " +
                                at(run.digests, step, grads) + " (XXH3-128 over every parameter)"});
    else
      v.notes.push_back(std::string(grads ? "digests.grads" : "digests.params") + " differ from train step " +
                        std::to_string(step) + " (expected outside a bit-exact lane)");
  }
}

// ---- 5b. init statistics ----------------------------------------------------------

// Parameter initialisation is a pure function of the seed: its hashes are
// held like the final hashes; a parameter initialised in one record only is
// a structural difference.
void compare_init(const RunRecord& run, const RunRecord& golden, bool exact, Verdict& v) {
  if (golden.init.empty()) {
    if (run.init.empty()) return;
    if (std::string version = shared_tool_version(run, golden); !version.empty())
      v.findings.push_back({Section::kStructure, "init", -1,
                            "the " + v.reference_word + " has no init statistics, though lockstep " + version +
                                " (the version that made it) records them: taken out by hand; re-bless it"});
    else
      v.notes.push_back("the golden has no init statistics (made before lockstep recorded them)");
    return;
  }
  if (run.init.empty()) {
    v.findings.push_back({Section::kStructure, "init", -1,
                          "the golden has init statistics for " + std::to_string(golden.init.size()) +
                              " parameters, the run none"});
    return;
  }
  for (const auto& name : key_union(golden.init, run.init)) {
    auto g = golden.init.find(name);
    auto r = run.init.find(name);
    if (g == golden.init.end() || r == run.init.end()) {
      v.findings.push_back({Section::kStructure, "init." + name, -1,
                            std::string("parameter initialised in the ") + (g == golden.init.end() ? v.subject_word : v.reference_word) +
                                " only"});
      continue;
    }
    ++v.values_checked;
    if (g->second.xxh3_128 == r->second.xxh3_128) continue;
    std::string detail = v.reference_word + " " + g->second.xxh3_128 + " (mean " + fmt(g->second.mean) + ", std " +
                         fmt(g->second.std) + "), run " + r->second.xxh3_128 + " (mean " + fmt(r->second.mean) +
                         ", std " + fmt(r->second.std) + ")";
    if (exact) v.findings.push_back({Section::kHashes, "init." + name, -1, detail});
    else v.notes.push_back("init." + name + " differs: " + detail);
  }
}

// ---- 5c. resources --------------------------------------------------------------

// Median of the steady steps (all but step 0, which pays for first-touch
// allocations), or of all when there are fewer than three.
double steady_median(std::vector<double> t) {
  if (t.size() >= 3) t.erase(t.begin());
  std::sort(t.begin(), t.end());
  size_t n = t.size();
  return n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
}

// Why a run's step times say nothing about the code, or "": its machine was
// saturated (more runnable tasks than cores) or the hypervisor stole more
// than 5% of the CPU while it trained.
std::string busy(const Resources& r, const std::string& who) {
  char buf[160];
  if (r.load_per_core > 1.0) {
    std::snprintf(buf, sizeof buf, "the %s's machine was busy (load %.2f per core)", who.c_str(), r.load_per_core);
    return buf;
  }
  if (r.steal_fraction > 0.05) {
    std::snprintf(buf, sizeof buf, "the %s's machine lost %.0f%% of its CPU to steal", who.c_str(),
                  100 * r.steal_fraction);
    return buf;
  }
  return "";
}

// Only on the same platform key and runner class, and only growth fails: a
// run may be faster or smaller than its golden. Step time is gated only
// when neither machine was busy (then it is a note).
void compare_resources(const RunRecord& run, const RunRecord& golden, const TolerancePolicy& policy, Verdict& v) {
  const Resources& r = run.resources;
  const Resources& g = golden.resources;
  if (r.empty() || g.empty()) return;
  if (run.platform != golden.platform) {
    v.notes.push_back("resources not compared: platform " + run.platform + " vs golden " + golden.platform);
    return;
  }
  if (!r.runner_class.empty() && !g.runner_class.empty() && r.runner_class != g.runner_class) {
    v.notes.push_back("resources not compared: runner class " + r.runner_class + " vs golden " + g.runner_class +
                      " (set LOCKSTEP_RUNNER_CLASS to name a class of runners)");
    return;
  }
  std::string loaded = busy(r, v.subject_word);
  if (loaded.empty()) loaded = busy(g, v.reference_word);
  auto check = [&](const std::string& what, double run_value, double golden_value, double limit, const char* unit) {
    if (!(golden_value > 0) || !(run_value >= 0)) return;
    double ratio = run_value / golden_value;
    std::string detail = fmt(run_value) + " " + unit + " vs golden " + fmt(golden_value) + " " + unit + ": ratio " +
                         format_error(ratio) + " (limit " + format_error(limit) + ", same platform)";
    if (ratio > limit) v.findings.push_back({Section::kResources, what, -1, detail});
    else v.notes.push_back(what + " " + detail);
  };
  if (!r.step_time_s.empty() && !g.step_time_s.empty()) {
    double rt = steady_median(r.step_time_s), gt = steady_median(g.step_time_s);
    // A step of a millisecond or two varies by more than any ratio with a
    // page fault or a context switch: growth is a finding only past
    // kStepTimeFloorS as well, so a sub-millisecond smoke is never flaky.
    constexpr double kStepTimeFloorS = 0.002;
    std::string not_gated = loaded;
    if (not_gated.empty() && rt - gt <= kStepTimeFloorS && rt / gt > policy.step_time_ratio)
      not_gated = "it grew by less than 2 ms, below what one step's timing resolves";
    if (not_gated.empty())
      check("median step time", rt, gt, policy.step_time_ratio, "s");
    else if (gt > 0)
      v.notes.push_back("median step time " + fmt(rt) + " s vs golden " + fmt(gt) + " s (ratio " +
                        format_error(rt / gt) + ") not gated: " + not_gated);
  }
  if (r.peak_rss_bytes > 0 && g.peak_rss_bytes > 0)
    check("peak RSS", static_cast<double>(r.peak_rss_bytes), static_cast<double>(g.peak_rss_bytes),
          policy.peak_memory_ratio, "bytes");
  if (r.peak_cuda_bytes > 0 && g.peak_cuda_bytes > 0)
    check("peak CUDA memory", static_cast<double>(r.peak_cuda_bytes), static_cast<double>(g.peak_cuda_bytes),
          policy.peak_memory_ratio, "bytes");
}

// ---- 5d. module traces ----------------------------------------------------------

// Where the traces part (module_divergence.h). They localise; the series
// and hashes decide. Only a bit difference in an exact lane that nothing
// else shows is a finding of its own.
void compare_module_traces(const RunRecord& run, const RunRecord& golden, const TolerancePolicy& policy, bool exact,
                           Verdict& v) {
  v.trace = locate_module_divergence(run.module_trace, golden.module_trace, policy, exact);
  // A module that moved in the forward of step 0: were its parameters
  // already other at initialisation? Said only where both records hold
  // the init statistics of its parameters (a team trainer records none).
  auto init_moved = [&](int64_t cell, std::string& summary) {
    if (cell < 0) return;
    const TraceCell& c = v.trace.cells[static_cast<size_t>(cell)];
    if (c.step != 0 || c.phase != TracePhase::kForward) return;
    std::string names;
    size_t known = 0;
    for (const auto& [name, g] : golden.init) {
      auto r = run.init.find(name);
      if (name.rfind(c.module + ".", 0) != 0 || r == run.init.end()) continue;
      ++known;
      if (r->second.xxh3_128 != g.xxh3_128) names += (names.empty() ? "" : ", ") + name;
    }
    bool same_input = summary.find(": input identical") != std::string::npos;
    if (!names.empty())
      summary += std::string(same_input ? "; its" : "; its own") + " parameters already differ at initialisation (" +
                 names + ")";
    else if (known > 0 && same_input)
      summary += "; its initial parameters agree, so its kernel moved";
  };
  // A trace difference is a finding of its own only where no series or
  // hash already shows one.
  auto values_or_hashes_moved = [&v] {
    return std::any_of(v.findings.begin(), v.findings.end(),
                       [](const auto& f) { return f.section == Section::kTrain || f.section == Section::kHashes; });
  };
  init_moved(v.trace.first, v.trace.summary);
  init_moved(v.trace.first_bits, v.trace.bits_summary);
  // Per-op hashes (trace.ops) take it below the module: the first op whose
  // output bits moved, which may come before the module's entry (its
  // backward, or the optimizer step of the step before).
  if (!v.trace.first_op.empty()) {
    if (v.trace.first >= 0) {
      v.trace.summary += "; the first op whose output bits differ: " + v.trace.first_op;
    } else {
      // Only an op moved (the modules' outputs agree): in an exact lane a
      // bit difference nothing else shows is a finding of its own, as a
      // module entry's is.
      if (!values_or_hashes_moved())
        v.findings.push_back({Section::kTrain, "module_trace", v.trace.first_op_step,
                              "the first op whose output bits differ: " + v.trace.first_op});
      else
        v.notes.push_back("op trace: the first op whose output bits differ: " + v.trace.first_op);
    }
  }
  // Another op sequence in an exact lane (two repeats, or a run and its
  // golden on one stack) is another computation: a difference of its own.
  if (exact && v.trace.ops_differ)
    v.findings.push_back({Section::kStructure, "module_trace", -1, v.trace.op_note.substr(10)});
  else if (!v.trace.op_note.empty())
    v.notes.push_back(v.trace.op_note);
  // In an exact lane another module sequence, shape or entry count is a
  // difference of its own; across stacks it is said.
  if (exact && v.trace.structure_differs)
    v.findings.push_back({Section::kStructure, "module_trace", -1, v.trace.note.substr(14)});
  else if (!v.trace.note.empty())
    v.notes.push_back(v.trace.note);
  if (!v.trace.bits_summary.empty())
    v.notes.push_back("module trace: the first module whose output moved in bits: " + v.trace.bits_summary);
  if (exact && v.trace.first >= 0) {
    if (!values_or_hashes_moved())
      v.findings.push_back({Section::kTrain, "module_trace", v.trace.cells[static_cast<size_t>(v.trace.first)].step,
                            v.trace.summary});
  }
}

// A golden whose curves `lockstep import --golden` read from another
// tool's file (its fingerprint holds import.source, and only that) against
// a run lockstep made: only the series the golden holds are compared, with
// the smoke's tolerances (no contract, stack, probes or hashes came with
// the curves; the notes say what was left out).
bool is_imported(const RunRecord& r) { return r.fingerprint.count("import.source") > 0; }

// A side's curves came from another tool's file (its fingerprint holds
// import.source, lockstep import): the golden (a check against an imported
// golden), the run (review of an imported pending golden), or both (two
// imports compared): their fingerprints are the importing machine's, or
// none, never the curves' own stack, so no lane is chosen from them.
bool any_side_imported(const RunRecord& run, const RunRecord& golden) { return is_imported(run) || is_imported(golden); }

// `from`'s series restricted to the names, and the steps, `to` holds: an
// imported side keeps what the other tool logged (every k steps, some
// metrics), and only that is compared.
RunRecord curves_like(const RunRecord& from, const RunRecord& to, std::vector<std::string>& left_out) {
  RunRecord curves;
  for (const auto& [name, s] : from.series) {
    auto other = to.series.find(name);
    if (other == to.series.end()) {
      left_out.push_back(name);
      continue;
    }
    std::vector<int64_t> want = step_numbers(other->second), have = step_numbers(s);
    if (want == have || !std::includes(have.begin(), have.end(), want.begin(), want.end())) {
      curves.series.emplace(name, s);  // the same steps, or other ones: compare_series says which
      continue;
    }
    Series kept = s;
    kept.values.clear();
    kept.mean.clear();
    kept.std.clear();
    size_t j = 0;
    for (size_t i = 0; i < have.size() && j < want.size(); ++i)
      if (have[i] == want[j]) {
        kept.values.push_back(s.values[i]);
        ++j;
      }
    kept.steps = want;
    curves.series.emplace(name, std::move(kept));
  }
  return curves;
}

Verdict compare_with_imported(const RunRecord& run, const RunRecord& golden, const TolerancePolicy& policy,
                              Verdict v) {
  bool golden_imported = is_imported(golden);
  const RunRecord& imported = golden_imported ? golden : run;
  const RunRecord& made = golden_imported ? run : golden;
  const std::string& word = golden_imported ? v.reference_word : v.subject_word;
  const std::string& source = imported.fingerprint.at("import.source").value;
  v.lane = Lane::kCrossStack;
  // The smoke config values a pending import was filed under
  // (finish_record): changed since, it is a changed input, as for any golden.
  auto rc = run.fingerprint.find("config.values_xxh3"), gc = golden.fingerprint.find("config.values_xxh3");
  if (rc != run.fingerprint.end() && gc != golden.fingerprint.end() && rc->second.value != gc->second.value) {
    v.env_diffs.push_back({"config.values_xxh3", gc->second.value, rc->second.value, false, true});
    judge_inputs(run, golden, v);
  }
  v.imported_from = source;
  v.imported_side = word;
  v.lane_reason = "the " + word + "'s curves were imported from " + source +
                  ": the configured tolerances apply to the series and steps it holds";
  std::vector<std::string> left_out;
  RunRecord curves = curves_like(made, imported, left_out);
  if (!left_out.empty()) {
    std::string names;
    for (const auto& n : left_out) names += (names.empty() ? "" : ", ") + n;
    v.notes.push_back("series the imported " + word + " does not hold, not compared: " + names);
  }
  // What an import brought along (--probes, --trainer-report) is compared
  // under the configured tolerances; what it lacks is said.
  auto both = [](const std::vector<BatchProbe>& a, const std::vector<BatchProbe>& b) { return !a.empty() && !b.empty(); };
  if (both(run.probes, golden.probes)) compare_probe_lists("probes", run.probes, golden.probes, policy, false, v);
  if (both(run.train_probes, golden.train_probes))
    compare_probe_lists("train_probes", run.train_probes, golden.train_probes, policy, false, v);
  if (!made.contract.empty() && !imported.contract.empty()) {
    // One note: an import's report often names few of the contract's fields.
    std::vector<std::string> differ;
    for (const auto& [key, value] : made.contract) {
      auto other = imported.contract.find(key);
      std::string theirs = other == imported.contract.end() ? "(missing)" : other->second;
      if (theirs != value) differ.push_back(key + " " + value + " here, " + theirs + " there");
    }
    std::string listed;
    for (size_t i = 0; i < differ.size() && i < 3; ++i) listed += (i ? "; " : "") + differ[i];
    if (differ.size() > 3) listed += "; and " + std::to_string(differ.size() - 3) + " more";
    if (!differ.empty())
      v.notes.push_back("determinism contract: " + std::to_string(differ.size()) + " field(s) differ from the imported " +
                        word + "'s (a note, not compared): " + listed);
  }
  std::string sections;
  for (const auto& [what, present] :
       {std::pair<const char*, bool>{"batch probes", (!made.probes.empty() && imported.probes.empty()) ||
                                                          (!made.train_probes.empty() && imported.train_probes.empty())},
        {"hashes", !made.hashes.empty()},
        {"per-step digests", !made.digests.empty()},
        {"initial weights", !made.init.empty()},
        {"determinism contract", !made.contract.empty() && imported.contract.empty()}})
    if (present) sections += (sections.empty() ? "" : ", ") + std::string(what);
  if (!sections.empty()) v.notes.push_back("not in the imported " + word + ", not compared: " + sections);
  if (golden_imported) compare_series(curves, golden, policy, false, v);
  else compare_series(run, curves, policy, false, v);
  if (v.values_checked == 0 && v.findings.empty())
    v.findings.push_back({Section::kStructure, "records", -1,
                          "no series in common with the imported " + word + "; a comparison of nothing never passes"});
  std::stable_sort(v.findings.begin(), v.findings.end(), causal_order);
  v.first_divergence = first_divergence(v);
  v.code = v.findings.empty() ? ExitCode::kPass : ExitCode::kRegression;
  return v;
}

}  // namespace

Verdict compare_records(const RunRecord& run, const RunRecord& golden,
                        const TolerancePolicy& policy, const CompareLabels& labels) {
  require_comparable(run, golden, policy, labels);

  Verdict v;
  v.smoke = golden.smoke;
  v.run_label = labels.run;
  v.golden_label = labels.golden;
  v.reference_word = labels.reference_word;
  v.subject_word = labels.subject_word;
  // (A plain import names no config: its hash is zeros.)
  if (run.config_hash != golden.config_hash && !(any_side_imported(run, golden) &&
                                                 (run.config_hash == kNoConfigHash || golden.config_hash == kNoConfigHash)))
    v.notes.push_back("config hash differs: golden " + golden.config_hash + ", run " + run.config_hash +
                      " (the smoke config file changed since the golden was blessed; the input "
                      "config.values_xxh3 says whether a field that determines the values did)");
  if (any_side_imported(run, golden)) return compare_with_imported(run, golden, policy, std::move(v));

  choose_lane(run, golden, v);
  bool exact = v.lane == Lane::kContractMismatch ||
               (v.lane == Lane::kSameStack && policy.same_stack_exact);
  if (v.lane == Lane::kSameStack)
    v.lane_reason += policy.same_stack_exact
                         ? ": bit-exact"
                         : ": configured tolerances (the smoke sets tolerance.same_stack to \"tolerance\")";

  compare_probe_lists("probes", run.probes, golden.probes, policy, exact, v);
  compare_probe_lists("train_probes", run.train_probes, golden.train_probes, policy, exact, v);
  compare_series(run, golden, policy, exact, v);
  compare_hashes(run, golden, exact, v);
  compare_digests(run, golden, exact, v);
  compare_init(run, golden, exact, v);
  compare_resources(run, golden, policy, v);
  compare_module_traces(run, golden, policy, exact, v);

  if (v.values_checked == 0 && v.findings.empty())
    v.findings.push_back({Section::kStructure, "records", -1,
                          "nothing in common to compare (no shared series, probes or hashes); "
                          "a comparison of nothing never passes"});

  std::stable_sort(v.findings.begin(), v.findings.end(), causal_order);
  v.first_divergence = first_divergence(v);
  v.code = v.findings.empty() ? ExitCode::kPass : ExitCode::kRegression;
  return v;
}

Verdict compare_runs(const RunRecord& run, const RunRecord& reference, const CompareLabels& labels) {
  TolerancePolicy exact_policy;
  exact_policy.allow_nonfinite_golden = true;  // NaN in both runs is still "the same"
  RunRecord a2 = run, b2 = reference;
  // Two runs of one job share the contract and stack by construction;
  // compare only what they produced.
  a2.fingerprint = b2.fingerprint;
  a2.contract = b2.contract;
  // Wall time and memory are never bit-identical, and two runs of one job
  // have nothing to say about them: not compared, no notes.
  a2.resources = {};
  b2.resources = {};
  return compare_records(a2, b2, exact_policy, labels);
}

namespace {

// The per-rank series ("rank<r>/loss": each rank's own loss beside the
// all-reduced one) of `r`, by name.
std::vector<std::string> per_rank_series(const RunRecord& r) {
  std::vector<std::string> names;
  for (const auto& [name, s] : r.series) {
    size_t i = 4;
    if (name.rfind("rank", 0) != 0) continue;
    while (i < name.size() && name[i] >= '0' && name[i] <= '9') ++i;
    if (i > 4 && i < name.size() && name[i] == '/') names.push_back(name);
  }
  return names;
}

// A lane of another world size (1 rank against 2) has other per-rank
// series by design: both sides' are left out, the global series compared,
// and the note says so. "" when both sides hold the same ones.
std::string drop_per_rank_series_of_other_world_sizes(RunRecord& a, RunRecord& b, const CompareLabels& labels) {
  const std::vector<std::string> in_a = per_rank_series(a), in_b = per_rank_series(b);
  if (in_a == in_b) return "";
  for (const auto& n : in_a) a.series.erase(n);
  for (const auto& n : in_b) b.series.erase(n);
  auto listed = [](const std::vector<std::string>& names) {
    if (names.empty()) return std::string("none");
    std::string out;
    for (size_t i = 0; i < names.size() && i < 4; ++i) out += (i ? ", " : "") + names[i];
    return out + (names.size() > 4 ? ", ... (" + std::to_string(names.size()) + ")" : "");
  };
  return "per-rank series not compared: " + labels.subject_word + " holds " + listed(in_a) + ", the " +
         labels.reference_word + " " + listed(in_b) + " (another world size); the global series are compared";
}

}  // namespace

Verdict compare_variant(const RunRecord& variant, const RunRecord& base, const Tolerance& rule, bool same_batches,
                        const CompareLabels& labels) {
  TolerancePolicy policy;
  policy.series_default = rule;
  policy.probe_default = Tolerance::exact();  // a batch is the same or it is not
  policy.allow_nonfinite_golden = true;       // NaN on both sides is agreement
  policy.same_stack_exact = rule.rule == Tolerance::Rule::kExact;
  RunRecord a2 = variant, b2 = base;
  // What the lane changes on purpose: its inputs and contract.
  a2.fingerprint = b2.fingerprint;
  a2.contract = b2.contract;
  a2.config = b2.config;
  a2.config_hash = b2.config_hash;
  a2.resources = {};
  b2.resources = {};
  a2.probes.clear();
  b2.probes.clear();
  if (!policy.same_stack_exact) {  // a lane within a rule moves the final bits by design
    a2.hashes.clear();
    b2.hashes.clear();
    a2.digests = b2.digests = {};
  }
  if (!same_batches) {
    a2.train_probes.clear();
    b2.train_probes.clear();
  }
  // A lane of another world size: its per-rank series left out, and its
  // trace (rank 0's share of the batch, not the base run's batch) too.
  const std::string ranks_note = drop_per_rank_series_of_other_world_sizes(a2, b2, labels);
  // A lane that calls the modules otherwise (micro-batches: other shapes;
  // another world size) has traces that locate nothing: left out, said.
  std::string trace_note;
  if (!ranks_note.empty() && !a2.module_trace.entries.empty() && !b2.module_trace.entries.empty())
    trace_note = "module traces not compared: " + labels.subject_word + " runs another world size, so its rank 0 "
                 "forwards other samples than the " + labels.reference_word + "; they cannot locate a difference";
  const auto& ta = a2.module_trace.entries;
  const auto& tb = b2.module_trace.entries;
  // "fc1 (forward, train step 0) out float32 [16, 8]"
  auto entry = [](const ModuleTraceEntry& e) {
    std::string shape;
    for (int64_t d : e.output.shape) shape += (shape.empty() ? "" : ", ") + std::to_string(d);
    return e.module + " (" + trace_phase_name(e.phase) + ", train step " + std::to_string(e.step) + ") out " +
           e.output.dtype + " [" + shape + "]";
  };
  for (size_t i = 0; i < std::min(ta.size(), tb.size()) && trace_note.empty(); ++i)  // shapes or order
    if (ta[i].step != tb[i].step || ta[i].phase != tb[i].phase || ta[i].module != tb[i].module ||
        ta[i].output.shape != tb[i].output.shape || ta[i].output.dtype != tb[i].output.dtype)
      trace_note = "module traces not compared: " + labels.subject_word + " calls the modules with other shapes or "
                   "in another order (entry " + std::to_string(i) + ": " + entry(tb[i]) + " in the " +
                   labels.reference_word + ", " + entry(ta[i]) + " in " + labels.subject_word +
                   "), so they cannot locate a difference";
  if (!trace_note.empty()) a2.module_trace = b2.module_trace = {};
  Verdict v = compare_records(a2, b2, policy, labels);
  if (!trace_note.empty()) v.notes.push_back(trace_note);
  if (!ranks_note.empty()) v.notes.push_back(ranks_note);
  v.lane = Lane::kEquivalence;
  v.lane_reason = labels.subject_word + " against the " + labels.reference_word + " " + labels.reference_from + ", " +
                  (policy.same_stack_exact ? std::string("bit for bit") : "every series within " + rule.describe()) +
                  (same_batches ? ", on the same batches bit for bit" : "");
  return v;
}

std::string first_bit_difference(const RunRecord& a, const RunRecord& b, const std::string& a_word,
                                 const std::string& b_word) {
  Verdict v = compare_runs(a, b, {a_word, b_word, b_word, a_word});
  return v.passed() ? "" : v.first_divergence;
}

}  // namespace lockstep
