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

namespace lockstep {

namespace {

const double kNaN = std::numeric_limits<double>::quiet_NaN();

std::string fmt(double v) { return format_double(v); }

template <typename Map>
std::set<std::string> key_union(const Map& a, const Map& b) {
  std::set<std::string> out;
  for (const auto& [k, _] : a) out.insert(k);
  for (const auto& [k, _] : b) out.insert(k);
  return out;
}

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

// ---- 2. lane -------------------------------------------------------------------

// What an input field names, for a person: "data file wine.csv".
std::string input_label(const std::string& field, const RunRecord& run) {
  auto info = [&](const char* key) {
    auto it = run.fingerprint.find(key);
    return it == run.fingerprint.end() ? std::string() : " " + it->second.value;
  };
  if (field == "data.file_xxh3") return "data file" + info("data.path");
  if (field == "trainer.inputs_xxh3") return "data files of trainer.inputs";
  if (field == "model.torchscript_xxh3") return "TorchScript model" + info("model.path") + " (code and parameters)";
  if (field == "config.values_xxh3")
    return "smoke config " + run.smoke + " (a field that determines the values: seed, steps, data, model, "
           "optimiser, ...)";
  return field;
}

// trainer.inputs' files that differ, for a person: "data/train.bin
// changed, data/extra.bin added" (at most four named, then how many more).
std::string changed_input_files(const RunRecord& run, const RunRecord& golden) {
  static const std::string prefix = "trainer.input.";
  auto files = [&](const RunRecord& r) {
    std::map<std::string, std::string> out;
    for (auto it = r.fingerprint.lower_bound(prefix); it != r.fingerprint.end() && it->first.rfind(prefix, 0) == 0; ++it)
      out[it->first.substr(prefix.size())] = it->second.value;
    return out;
  };
  std::map<std::string, std::string> now = files(run), then = files(golden);
  std::vector<std::string> changes;
  for (const auto& [path, hash] : now) {
    auto g = then.find(path);
    if (g == then.end()) changes.push_back(path + " added");
    else if (g->second != hash) changes.push_back(path + " changed");
  }
  for (const auto& [path, _] : then)
    if (!now.count(path)) changes.push_back(path + " removed");
  std::string out;
  for (size_t i = 0; i < changes.size() && i < 4; ++i) out += (i ? ", " : "") + changes[i];
  if (changes.size() > 4) out += ", and " + std::to_string(changes.size() - 4) + " more";
  return out;
}

// The config fields that differ, for a person: "optimizer.lr 0.01 → 0.011,
// seed 1 → 7" (at most four named, then how many more); "" when either
// record lacks its fields (a golden made before records kept them) or
// none differs.
// An array field's changed elements, "trainer.command[5] "{data}/x" →
// "{config_dir}/x"", when both sides are arrays of one length; elements
// added or removed as one change past what both share at either end,
// "trainer.command[8] added "--lr", "0.051""; "" when either is no array.
std::vector<std::string> changed_elements(const std::string& key, const std::string& golden, const std::string& run) {
  nlohmann::json g = nlohmann::json::parse(golden, nullptr, false), r = nlohmann::json::parse(run, nullptr, false);
  if (!g.is_array() || !r.is_array()) return {};
  if (g.size() != r.size()) {
    size_t head = 0, tail = 0;
    while (head < g.size() && head < r.size() && g[head] == r[head]) ++head;
    while (tail < g.size() - head && tail < r.size() - head && g[g.size() - 1 - tail] == r[r.size() - 1 - tail]) ++tail;
    auto part = [&](const nlohmann::json& a) {
      std::string out;
      for (size_t i = head; i < a.size() - tail; ++i) out += (i > head ? ", " : "") + canonical_dump(a[i]);
      return input_excerpt(out);
    };
    std::string at = key + "[" + std::to_string(head) + "] ";
    if (head + tail == g.size()) return {at + "added " + part(r)};
    if (head + tail == r.size()) return {at + "removed " + part(g)};
    return {at + part(g) + " → " + part(r)};
  }
  std::vector<std::string> out;
  for (size_t i = 0; i < g.size(); ++i)
    if (g[i] != r[i])
      out.push_back(key + "[" + std::to_string(i) + "] " + input_excerpt(canonical_dump(g[i])) + " → " +
                    input_excerpt(canonical_dump(r[i])));
  return out;
}

std::string changed_config_fields(const RunRecord& run, const RunRecord& golden) {
  if (run.config.empty() || golden.config.empty()) return "";
  std::vector<std::string> changes;
  for (const auto& key : key_union(golden.config, run.config)) {
    auto g = golden.config.find(key);
    auto r = run.config.find(key);
    if (g != golden.config.end() && r != run.config.end() && g->second != r->second) {
      std::vector<std::string> elements = changed_elements(key, g->second, r->second);
      if (!elements.empty()) {
        changes.insert(changes.end(), elements.begin(), elements.end());
        continue;
      }
    }
    std::string gv = g == golden.config.end() ? "(missing)" : input_excerpt(g->second);
    std::string rv = r == run.config.end() ? "(missing)" : input_excerpt(r->second);
    if (gv != rv) changes.push_back(key + " " + gv + " → " + rv);
  }
  std::string out;
  for (size_t i = 0; i < changes.size() && i < 4; ++i) out += (i ? ", " : "") + changes[i];
  if (changes.size() > 4) out += ", and " + std::to_string(changes.size() - 4) + " more";
  return out;
}

// "xxh3" for a hash field, "value" otherwise.
std::string input_hash_word(const std::string& field) {
  return field.size() > 5 && field.compare(field.size() - 5, 5, "_xxh3") == 0 ? "xxh3" : "value";
}

// The inputs that differ (v.env_diffs): a finding each ("input changed"),
// or a note when the golden predates the field; true when the only change
// is where an input lives (is_location_field), its content the same.
bool judge_inputs(const RunRecord& run, const RunRecord& golden, Verdict& v) {
  // Inputs never choose the lane: a changed input is the change under
  // test, and fails whatever the values say. A config whose only changed
  // field says where an input lives (data.path), that input's content
  // unchanged, is the same input moved (is_location_field).
  bool content_changed = false, moved_only = false;
  for (const auto& d : v.env_diffs) content_changed = content_changed || (d.input && d.name != "config.values_xxh3");
  for (const auto& d : v.env_diffs) {
    if (!d.input) continue;
    if (d.name == "config.values_xxh3" && !content_changed && !run.config.empty() && !golden.config.empty()) {
      std::vector<std::string> fields = differing_config_fields(golden.config, run.config);
      bool moved = !fields.empty() && std::all_of(fields.begin(), fields.end(), is_location_field);
      if (moved) {
        moved_only = true;
        auto value = [](const std::map<std::string, std::string>& m, const std::string& f) {
          auto it = m.find(f);
          return it == m.end() ? std::string("(missing)") : input_excerpt(it->second);
        };
        for (const auto& f : fields)
          v.notes.push_back(f + " moved: " + value(golden.config, f) + " → " + value(run.config, f) +
                            "; its content is unchanged, so the input is the same");
        continue;
      }
    }
    if (d.golden == "(missing)")
      v.notes.push_back("the golden predates the input field " + d.name + " (run: " + d.run +
                        "); re-bless to pin it");
    else if (std::string fields = d.name == "config.values_xxh3" ? changed_config_fields(run, golden) : "";
             !fields.empty())
      v.findings.push_back({Section::kInput, d.name, -1,
                            "input changed: smoke config " + run.smoke + ": " + fields + " (" +
                                input_hash_word(d.name) + " " + d.golden + " → " + d.run + ")"});
    else if (std::string files = d.name == "trainer.inputs_xxh3" ? changed_input_files(run, golden) : "";
             !files.empty())
      v.findings.push_back({Section::kInput, d.name, -1,
                            "input changed: data files of trainer.inputs: " + files + " (" + input_hash_word(d.name) +
                                " " + d.golden + " → " + d.run + ")"});
    else {
      v.findings.push_back({Section::kInput, d.name, -1,
                            "input changed: " + input_label(d.name, run) + ", " + input_hash_word(d.name) + " " +
                                d.golden + " → " + d.run});
      if (d.name == "config.values_xxh3" && golden.config.empty() && !run.config.empty())
        v.notes.push_back("the " + v.reference_word + " predates the config fields records keep: which field "
                          "changed cannot be named; re-bless it to have changed inputs named by field");
    }
  }

  return moved_only;
}

// "(missing)" or "unsupported (...)": a contract setting this side's
// LibTorch (or torch) did not have, so it holds no value to compare.
bool no_contract_value(const std::string& value) {
  return value == "(missing)" || value.rfind("unsupported", 0) == 0;
}

// The contract settings whose presence depends on the torch version: the
// only ones a version change may leave without a value on one side
// (fill_uninitialized_memory from 2.1/2.2, warn_only from 1.11,
// float32_matmul_precision from 1.12, the legacy TF32 getters that newer
// torch may refuse). Never lockstep's own (mode, threads, workspace).
bool version_dependent_setting(const std::string& key) {
  static const char* const kKeys[] = {"fill_uninitialized_memory", "deterministic_algorithms_warn_only",
                                      "float32_matmul_precision", "allow_tf32_cublas", "allow_tf32_cudnn"};
  return std::find(std::begin(kKeys), std::end(kKeys), key) != std::end(kKeys);
}

// The contract settings that are a stack axis, not another contract: the
// intra- and inter-op thread counts change the order of parallel
// reductions, never what is computed, so a run under other thread counts
// than its golden is compared in the cross-stack lane under the smoke's
// tolerances -- the spread `calibrate --axis threads=...` measures
// (docs/comparison.md, "One rule for calibrate and check").
bool stack_setting(const std::string& key) { return key == "intra_op_threads" || key == "inter_op_threads"; }

// The leading "major.minor.patch" of a version string as numbers
// ("2.6.0+debian" and "2.6.0" are one version; "1.13.0a0" is 1.13.0);
// empty when it does not start with a number.
std::vector<long> version_numbers(const std::string& text) {
  std::vector<long> out;
  size_t i = 0;
  while (out.size() < 3 && i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
    long n = 0;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])) && n < 100000) n = n * 10 + (text[i++] - '0');
    out.push_back(n);
    if (i < text.size() && text[i] == '.') ++i;
    else break;
  }
  return out;
}

// "LibTorch 1.13.0 → 2.6.0" (or "torch ..." for a trainer's record) when
// both sides name a framework version and the numbers differ; "" else (a
// suffix or a space alone is no version change).
std::string framework_change(const RunRecord& run, const RunRecord& golden) {
  std::string out;
  for (const auto& [field, label] : {std::pair<const char*, const char*>{"torch.version", "LibTorch"},
                                     {"python.torch", "torch"}}) {
    auto g = golden.fingerprint.find(field);
    auto r = run.fingerprint.find(field);
    if (g == golden.fingerprint.end() || r == run.fingerprint.end()) continue;
    std::vector<long> gv = version_numbers(g->second.value), rv = version_numbers(r->second.value);
    if (gv.empty() || rv.empty() || gv == rv) continue;
    out += (out.empty() ? "" : ", ") + std::string(label) + " " + g->second.value + " → " + r->second.value;
  }
  return out;
}

void choose_lane(const RunRecord& run, const RunRecord& golden, Verdict& v) {
  v.env_diffs = diff_fingerprints(golden.fingerprint, run.fingerprint);
  // A version-dependent setting one side's torch lacks (fill_uninitialized
  // _memory is "unsupported" before 2.2) is part of that torch's version
  // change: no contract mismatch, the stack lane says it. Everything else
  // that differs, a value against none included, is another contract.
  const std::string version_change = framework_change(run, golden);
  std::vector<std::string> contract_diffs;
  for (const auto& key : key_union(golden.contract, run.contract)) {
    auto g = golden.contract.find(key);
    auto r = run.contract.find(key);
    std::string gv = g == golden.contract.end() ? "(missing)" : g->second;
    std::string rv = r == run.contract.end() ? "(missing)" : r->second;
    if (gv == rv || (no_contract_value(gv) && no_contract_value(rv))) continue;  // neither holds a value
    if (stack_setting(key)) {
      // The fingerprint's determinism.<key> says it; a record without one
      // (imported, older) still lands in the cross-stack lane.
      const std::string field = "determinism." + key;
      if (std::none_of(v.env_diffs.begin(), v.env_diffs.end(), [&](const FieldDiff& d) { return d.name == field; })) {
        v.env_diffs.push_back({field, gv, rv, true, false});
        std::sort(v.env_diffs.begin(), v.env_diffs.end(), [](const FieldDiff& a, const FieldDiff& b) {
          return std::make_pair(diff_rank(a), a.name) < std::make_pair(diff_rank(b), b.name);
        });
      }
      continue;
    }
    if (!version_change.empty() && version_dependent_setting(key) &&
        no_contract_value(gv) != no_contract_value(rv)) {
      v.notes.push_back("contract." + key + ": " + v.reference_word + " " + gv + ", " + v.subject_word + " " + rv +
                        ": a setting one side's torch does not have, part of the version change (" + version_change +
                        "), compared under the smoke's tolerances");
      continue;
    }
    contract_diffs.push_back(key);
    v.findings.push_back({Section::kContract, "contract." + key, -1,
                          v.reference_word + " " + gv + ", " + v.subject_word + " " + rv +
                              ": a run is never accepted against a golden made under another "
                              "determinism contract"});
  }
  bool moved_only = judge_inputs(run, golden, v);
  size_t relevant = 0;
  for (const auto& d : v.env_diffs) relevant += d.relevant ? 1 : 0;

  // The same input, moved: not listed as a changed input (the note says it).
  if (moved_only)
    v.env_diffs.erase(std::remove_if(v.env_diffs.begin(), v.env_diffs.end(),
                                     [](const FieldDiff& d) { return d.name == "config.values_xxh3"; }),
                      v.env_diffs.end());
  if (!contract_diffs.empty()) {
    v.lane = Lane::kContractMismatch;
    std::string named;
    for (size_t i = 0; i < contract_diffs.size() && i < 3; ++i) {
      const std::string& k = contract_diffs[i];
      auto value = [&k](const std::map<std::string, std::string>& m) {
        auto it = m.find(k);
        return it == m.end() ? std::string("(missing)") : it->second;
      };
      named += std::string(i ? ", " : " (") + k + " " + value(golden.contract) + " → " + value(run.contract);
    }
    named += contract_diffs.size() > 3 ? ", ...)" : ")";
    v.lane_reason = std::to_string(contract_diffs.size()) + " determinism contract setting(s) differ" + named +
                    "; values are compared exactly to locate the first divergence";
  } else if (relevant == 0) {
    v.lane = Lane::kSameStack;
    v.lane_reason = "every determinism-relevant fingerprint field matches the " + v.reference_word;
  } else {
    v.lane = Lane::kCrossStack;
    // The fields in diff_fingerprints' order: versions first.
    std::string named;
    size_t shown = 0;
    for (const auto& d : v.env_diffs) {
      if (!d.relevant || shown == 3) continue;
      named += std::string(shown++ ? ", " : " (") + d.name + " " + d.golden + " → " + d.run;
    }
    named += relevant > 3 ? ", ...)" : ")";
    v.lane_reason = std::to_string(relevant) + " determinism-relevant fingerprint field(s) differ" + named +
                    ": configured tolerances apply";
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

// ---- 5b. init statistics ----------------------------------------------------------

// Parameter initialisation is a pure function of the seed: its hashes are
// held like the final hashes; a parameter initialised in one record only is
// a structural difference.
void compare_init(const RunRecord& run, const RunRecord& golden, bool exact, Verdict& v) {
  if (golden.init.empty()) {
    if (!run.init.empty()) v.notes.push_back("the golden has no init statistics (made before lockstep recorded them)");
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

// ---- 6. first divergence ----------------------------------------------------------

// The report order of findings: what caused what. A changed input first,
// then the data (by batch), then training (by step; within a step the
// learning rate the step used, the loss, the per-parameter and global
// gradient norms, the parameter norm), then the contract, structure, final
// hashes and resources. A finding without an index goes after those with one.
int section_rank(Section s) {
  switch (s) {
    case Section::kInput: return 0;
    case Section::kData: return 1;
    case Section::kTrain: return 2;
    case Section::kContract: return 3;
    case Section::kStructure: return 4;
    case Section::kHashes: return 5;
    case Section::kResources: return 6;
  }
  return 7;
}

int metric_rank(const std::string& subject) {
  if (subject == "lr") return 0;
  if (subject == "loss") return 1;
  if (subject.rfind("grad_norm/", 0) == 0) return 2;
  if (subject == "grad_norm") return 3;
  if (subject == "param_norm") return 4;
  return 5;
}

bool causal_order(const Finding& a, const Finding& b) {
  if (section_rank(a.section) != section_rank(b.section)) return section_rank(a.section) < section_rank(b.section);
  auto at = [](const Finding& f) { return f.index < 0 ? INT64_MAX : f.index; };
  if (at(a) != at(b)) return at(a) < at(b);
  if (a.section == Section::kTrain && metric_rank(a.subject) != metric_rank(b.subject))
    return metric_rank(a.subject) < metric_rank(b.subject);
  return false;  // stable: the order they were found in
}

// Where the values first moved: data first, then training; within a
// section the earliest index; for training, the parameter whose gradient
// norm went first. "" when nothing but inputs differ.
std::string first_value_divergence(const Verdict& v) {
  for (Section s : {Section::kData, Section::kTrain, Section::kContract, Section::kStructure, Section::kHashes,
                    Section::kResources}) {
    const Finding* best = nullptr;
    for (const auto& f : v.findings) {
      if (f.section != s) continue;
      if (!best || (f.index >= 0 && (best->index < 0 || f.index < best->index))) best = &f;
    }
    if (!best) continue;
    std::string out = std::string(section_name(s)) + ": " + best->subject;
    if (s == Section::kTrain && best->index >= 0) {
      out = "train step " + std::to_string(best->index) + ": " + best->subject;
      const Finding* param = nullptr;
      for (const auto& f : v.findings)
        if (f.section == Section::kTrain && f.subject.rfind("grad_norm/", 0) == 0 && f.index >= 0 &&
            (!param || f.index < param->index))
          param = &f;
      if (param)
        out += " (first parameter gradient to diverge: " + param->subject.substr(10) + " at step " +
               std::to_string(param->index) + ")";
    } else if (s == Section::kData && best->index >= 0) {
      out = "data batch " + std::to_string(best->index) + ": " + best->subject;
    }
    return out + " — " + best->detail;
  }
  return "";
}

// first_value_divergence(), led by the first divergent module when
// training moved and the module traces say where.
std::string located_divergence(const Verdict& v) {
  std::string moved = first_value_divergence(v);
  if (v.trace.first < 0 || moved.rfind("train step ", 0) != 0) return moved;
  if (moved.find(": module_trace — ") != std::string::npos) return v.trace.summary;  // nothing else moved
  // A module whose forward moved at step s with identical input, and one of
  // whose own parameter gradients moved at an earlier step g while every
  // traced gradient of step g agreed: its backward computed other weight
  // gradients at g. That is the first divergence; say it first.
  const TraceCell& c = v.trace.cells[static_cast<size_t>(v.trace.first)];
  if (c.phase == TracePhase::kForward && c.step > 0 && v.trace.summary.find(": input identical") != std::string::npos) {
    const Finding* grad = nullptr;
    for (const auto& f : v.findings)
      if (f.section == Section::kTrain && f.subject.rfind("grad_norm/" + c.module + ".", 0) == 0 && f.index >= 0 &&
          f.index < c.step && (!grad || f.index < grad->index))
        grad = &f;
    bool traced_agree = grad != nullptr;
    for (const auto& cell : v.trace.cells)
      if (grad && cell.step == grad->index && cell.phase == TracePhase::kBackward && cell.state != 0) traced_agree = false;
    if (grad && traced_agree)
      return "train step " + std::to_string(grad->index) + ", backward, " + c.module +
             ": every traced gradient of the step agrees, but its weight gradient moved (" + grad->subject +
             ": the backward of " + c.module + " computed it differently); at train step " + std::to_string(c.step) +
             ", forward, its output differs with identical input (" + v.trace.change + ") — the metrics first moved at " +
             moved;
    if (grad)
      return v.trace.summary + "; its own parameter gradient moved first (" + grad->subject + " at step " +
             std::to_string(grad->index) + ") — the metrics first moved at " + moved;
  }
  return v.trace.summary + " — the metrics first moved at " + moved;
}

// A changed input first ("input changed: data file ..., xxh3 a → b", and
// where the values first moved because of it), else where the values moved.
std::string first_divergence(const Verdict& v) {
  for (const auto& f : v.findings)
    if (f.section == Section::kInput) {
      std::string moved = located_divergence(v);
      return f.detail + (moved.empty() ? "" : "; the values first moved at " + moved);
    }
  std::string moved = located_divergence(v);
  // Under another contract the values are compared exactly to locate where
  // they moved; the contract is why, said on the same line.
  if (v.lane == Lane::kContractMismatch && !moved.empty() && moved.rfind("contract: ", 0) != 0) {
    std::string why;
    for (const auto& f : v.findings)
      if (f.section == Section::kContract)
        why += (why.empty() ? "" : ", ") + f.subject.substr(9) + " " +
               f.detail.substr(0, f.detail.rfind(": a run is never accepted"));
    moved += " (the " + v.reference_word + " was made under another determinism contract: " + why + ")";
  }
  return moved;
}

// A golden whose curves `lockstep import --golden` read from another
// tool's file (its fingerprint holds import.source, and only that) against
// a run lockstep made: only the series the golden holds are compared, with
// the smoke's tolerances (no contract, stack, probes or hashes came with
// the curves; the notes say what was left out).
bool is_imported(const RunRecord& r) { return r.fingerprint.count("import.source") > 0; }

// One side's curves came from another tool's file (its fingerprint holds
// import.source, lockstep import): the golden (a check against an imported
// golden), or the run (review of an imported pending golden).
bool one_side_imported(const RunRecord& run, const RunRecord& golden) { return is_imported(run) != is_imported(golden); }

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
  if (run.config_hash != golden.config_hash && !(one_side_imported(run, golden) &&
                                                 (run.config_hash == kNoConfigHash || golden.config_hash == kNoConfigHash)))
    v.notes.push_back("config hash differs: golden " + golden.config_hash + ", run " + run.config_hash +
                      " (the smoke config file changed since the golden was blessed; the input "
                      "config.values_xxh3 says whether a field that determines the values did)");
  if (one_side_imported(run, golden)) return compare_with_imported(run, golden, policy, std::move(v));

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
  }
  if (!same_batches) {
    a2.train_probes.clear();
    b2.train_probes.clear();
  }
  // A lane that calls the modules otherwise (micro-batches: other shapes;
  // another world size) has traces that locate nothing: left out, said.
  std::string trace_note;
  const auto& ta = a2.module_trace.entries;
  const auto& tb = b2.module_trace.entries;
  for (size_t i = 0; i < std::min(ta.size(), tb.size()) && trace_note.empty(); ++i)
    if (ta[i].step != tb[i].step || ta[i].phase != tb[i].phase || ta[i].module != tb[i].module ||
        ta[i].output.shape != tb[i].output.shape || ta[i].output.dtype != tb[i].output.dtype)
      trace_note = "module traces not compared: " + labels.subject_word + " calls the modules with other shapes or "
                   "in another order (entry " + std::to_string(i) + ": " + tb[i].module + " in the " +
                   labels.reference_word + ", " + ta[i].module + " here, train step " + std::to_string(ta[i].step) +
                   "), so they cannot locate a difference";
  if (!trace_note.empty()) a2.module_trace = b2.module_trace = {};
  Verdict v = compare_records(a2, b2, policy, labels);
  if (!trace_note.empty()) v.notes.push_back(trace_note);
  v.lane = Lane::kEquivalence;
  v.lane_reason = labels.subject_word + " against the " + labels.reference_word + " of this job, " +
                  (policy.same_stack_exact ? std::string("bit for bit") : "every series within " + rule.describe()) +
                  (same_batches ? ", on the same batches bit for bit" : "");
  return v;
}

std::string first_bit_difference(const RunRecord& a, const RunRecord& b) {
  Verdict v = compare_runs(a, b, {"run 2", "run 1", "run 1", "run 2"});
  return v.passed() ? "" : v.first_divergence;
}

}  // namespace lockstep
