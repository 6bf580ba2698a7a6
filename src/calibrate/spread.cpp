#include "calibrate/spread.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <set>

#include "compare/compare.h"
#include "compare/tolerance.h"
#include "core/error.h"
#include "core/float_bits.h"
#include "record/batch_probe.h"

namespace lockstep {

namespace {

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

std::string short_num(double v) { return format_error(v); }

// The axes on which two runs' points differ.
std::vector<std::string> differing_axes(const CalibrationRun& a, const CalibrationRun& b) {
  std::set<std::string> keys;
  for (const auto& [k, _] : a.point) keys.insert(k);
  for (const auto& [k, _] : b.point) keys.insert(k);
  std::vector<std::string> out;
  for (const auto& k : keys) {
    auto x = a.point.find(k), y = b.point.find(k);
    std::string xv = x == a.point.end() ? "" : x->second, yv = y == b.point.end() ? "" : y->second;
    if (xv != yv) out.push_back(k);
  }
  return out;
}

// One metric's values in every run: values[r][i] at steps[i].
struct Curve {
  std::string name, key;
  bool probe = false, float32 = false;
  std::vector<int64_t> steps;
  std::vector<std::vector<double>> values;  // per run
  std::vector<const CalibrationRun*> runs;
  std::string skipped;
};

CurveSpread measure(const Curve& c) {
  CurveSpread s;
  s.name = c.name;
  s.key = c.key;
  s.probe = c.probe;
  s.float32 = c.float32;
  s.skipped = c.skipped;
  s.steps = c.steps;
  if (!s.skipped.empty()) return s;
  const size_t n = c.values.size();
  for (size_t r = 0; r < n; ++r)
    for (size_t i = 0; i < c.steps.size(); ++i)
      if (!std::isfinite(c.values[r][i])) {
        s.skipped = "non-finite in " + c.runs[r]->label + " at " + (c.probe ? "batch " : "step ") +
                    std::to_string(c.steps[i]);
        return s;
      }
  s.mean.assign(c.steps.size(), 0);
  s.abs_spread.assign(c.steps.size(), 0);
  for (size_t i = 0; i < c.steps.size(); ++i) {
    double sum = 0;
    for (size_t r = 0; r < n; ++r) sum += c.values[r][i];
    double m = sum / static_cast<double>(n), ss = 0;
    for (size_t r = 0; r < n; ++r) ss += (c.values[r][i] - m) * (c.values[r][i] - m);
    double sd = std::sqrt(ss / static_cast<double>(n));
    s.mean[i] = m;
    for (size_t r = 0; r < n; ++r) {
      double x = c.values[r][i], d = std::fabs(x - m);
      if (!same_bits(x, c.values[0][i])) s.bit_identical = false;
      s.abs_spread[i] = std::max(s.abs_spread[i], d);
      if (d > s.max_abs) {
        s.max_abs = d;
        s.worst_step = c.steps[i];
        s.worst_run = c.runs[r]->label;
      }
      if (std::fabs(m) > 1e-9) s.max_rel = std::max(s.max_rel, d / std::fabs(m));
      if (sd > 0) s.max_z = std::max(s.max_z, d / sd);
    }
  }
  if (s.bit_identical) {  // the mean of equal values may round: no spread at all
    s.max_abs = s.max_rel = s.max_z = 0;
    s.worst_step = -1;
    s.worst_run.clear();
    s.mean = c.values.front();
    std::fill(s.abs_spread.begin(), s.abs_spread.end(), 0.0);
    return s;
  }
  // Which axis moved it: the largest difference between two runs that
  // differ on that axis alone (two runs at one point: "repeat").
  std::map<std::string, double> by_axis;
  for (size_t a = 0; a < n; ++a)
    for (size_t b = a + 1; b < n; ++b) {
      std::vector<std::string> axes = differing_axes(*c.runs[a], *c.runs[b]);
      if (axes.size() > 1) continue;
      double diff = 0;
      for (size_t i = 0; i < c.steps.size(); ++i) diff = std::max(diff, std::fabs(c.values[a][i] - c.values[b][i]));
      double& best = by_axis[axes.empty() ? "repeat" : axes.front()];
      best = std::max(best, diff);
    }
  double best = 0;
  for (const auto& [axis, diff] : by_axis)
    if (diff > best) best = diff, s.driver = axis;
  if (s.driver.empty()) s.driver = "several axes";
  return s;
}

// Series `name` in every run of `runs`.
Curve series_curve(const std::string& name, const std::vector<const CalibrationRun*>& runs) {
  Curve c;
  c.name = c.key = name;
  c.runs = runs;
  for (const CalibrationRun* r : runs) {
    auto it = r->record.series.find(name);
    if (it == r->record.series.end()) {
      c.skipped = "absent from " + r->label;
      return c;
    }
    std::vector<int64_t> steps = step_numbers(it->second);
    if (c.values.empty()) {
      c.steps = steps;
      c.float32 = it->second.dtype == Series::Dtype::kFloat32;
    } else if (steps != c.steps) {
      c.skipped = "logged at other steps in " + r->label;
      return c;
    }
    c.values.push_back(it->second.values);
  }
  return c;
}

const std::vector<BatchProbe>& probe_list(const RunRecord& r, bool trained) { return trained ? r.train_probes : r.probes; }

// Probe statistic `part`.`stat` of the data-only (or trained) batches.
Curve probe_curve(bool trained, const std::string& part, const std::string& stat,
                  const std::vector<const CalibrationRun*>& runs) {
  Curve c;
  c.key = part + "." + stat;
  c.name = std::string(trained ? "train_probes." : "probes.") + c.key;
  c.probe = true;
  c.runs = runs;
  size_t batches = probe_list(runs.front()->record, trained).size();
  for (size_t b = 0; b < batches; ++b) c.steps.push_back(static_cast<int64_t>(b));
  for (const CalibrationRun* r : runs) {
    const std::vector<BatchProbe>& list = probe_list(r->record, trained);
    if (list.size() != batches) {
      c.skipped = std::to_string(list.size()) + " batches in " + r->label + ", " + std::to_string(batches) + " in " +
                  runs.front()->label;
      return c;
    }
    std::vector<double> v;
    for (const auto& p : list) v.push_back(tensor_stat(part == "inputs" ? p.inputs : p.labels, stat));
    c.values.push_back(std::move(v));
  }
  return c;
}

}  // namespace

double round_up_2(double value) {
  if (!(value > 0) || !std::isfinite(value)) return value;
  double scale = std::pow(10.0, std::floor(std::log10(value)) - 1);
  double digits = std::ceil(value / scale * (1 - 1e-12));
  // Two digits as written in a config ("3.3e-07"), never below `value`.
  for (int bump = 0; bump < 3; ++bump, digits += 1) {
    char text[32];
    std::snprintf(text, sizeof text, "%.1e", digits * scale);
    double shown = std::strtod(text, nullptr);
    if (shown >= value) return shown;
  }
  return digits * scale;
}

std::vector<CurveSpread> measure_spreads(const std::vector<CalibrationRun>& runs, bool seeds_vary) {
  std::vector<CurveSpread> out;
  if (runs.size() < 2) return out;
  std::vector<const CalibrationRun*> all;
  for (const auto& r : runs) all.push_back(&r);
  std::set<std::string> names;
  for (const auto& r : runs)
    for (const auto& [name, _] : r.record.series) names.insert(name);
  for (const auto& name : names) out.push_back(measure(series_curve(name, all)));

  std::vector<const CalibrationRun*> same_seed;
  for (const auto& r : runs)
    if (!seeds_vary || r.record.seed == runs.front().record.seed) same_seed.push_back(&r);
  for (bool trained : {false, true}) {
    if (probe_list(runs.front().record, trained).empty()) continue;
    for (const char* part : {"inputs", "labels"})
      for (const auto& stat : tensor_stat_names()) {
        if (same_seed.size() < 2) {
          Curve c;
          c.key = std::string(part) + "." + stat;
          c.name = std::string(trained ? "train_probes." : "probes.") + c.key;
          c.probe = true;
          c.skipped = "one run of seed " + std::to_string(runs.front().record.seed) + " (another seed draws other batches)";
          out.push_back(measure(c));
          continue;
        }
        out.push_back(measure(probe_curve(trained, part, stat, same_seed)));
      }
  }
  return out;
}

std::map<std::string, Recommendation> recommend(const std::vector<CurveSpread>& spreads, const SpreadRules& rules,
                                                bool seeds_vary) {
  struct Group {
    bool probe = false, identical = true;
    double max_abs = 0, max_rel = 0, max_z = 0;
    std::string driver, skipped;
    int curves = 0;
  };
  std::map<std::string, Group> groups;
  std::vector<std::string> order;
  for (const auto& s : spreads) {
    std::string id = (s.probe ? "probes." : "") + s.key;
    if (!groups.count(id)) order.push_back(id);
    Group& g = groups[id];
    g.probe = s.probe;
    if (!s.skipped.empty()) {
      if (g.skipped.empty()) g.skipped = s.name + ": " + s.skipped;
      continue;
    }
    ++g.curves;
    g.identical = g.identical && s.bit_identical;
    if (s.max_abs >= g.max_abs && !s.driver.empty()) g.driver = s.driver;
    g.max_abs = std::max(g.max_abs, s.max_abs);
    g.max_rel = std::max(g.max_rel, s.max_rel);
    g.max_z = std::max(g.max_z, s.max_z);
  }
  // The relative spread counts where the mean stands clear of the atol.
  for (auto& [id, g] : groups) {
    double atol = std::max(round_up_2(rules.multiplier * g.max_abs), rules.atol_floor);
    g.max_rel = 0;
    for (const auto& s : spreads)
      if ((s.probe ? "probes." : "") + s.key == id && s.skipped.empty())
        for (size_t i = 0; i < s.mean.size(); ++i)
          if (std::fabs(s.mean[i]) > atol) g.max_rel = std::max(g.max_rel, s.abs_spread[i] / std::fabs(s.mean[i]));
  }
  std::map<std::string, Recommendation> out;
  for (const auto& id : order) {
    const Group& g = groups[id];
    Recommendation r;
    r.key = g.probe ? id.substr(7) : id;
    r.probe = g.probe;
    r.abs_spread = g.max_abs;
    r.rel_spread = g.max_rel;
    r.driver = g.driver;
    if (!g.skipped.empty()) {
      r.measured = false;
      r.because = "not measured: " + g.skipped;
    } else if (g.identical) {
      r.tolerance = Tolerance::exact();
      r.because = "bit-identical in every run";
    } else if (seeds_vary && !g.probe) {
      r.tolerance = Tolerance::sigma(std::max(round_up_2(rules.multiplier * g.max_z), rules.sigma_floor));
      r.because = "largest |x-mean|/std " + short_num(g.max_z) + " x " + short_num(rules.multiplier) +
                  " (floor " + short_num(rules.sigma_floor) + "), driven by " + g.driver;
    } else {
      r.tolerance = Tolerance::close(std::max(round_up_2(rules.multiplier * g.max_abs), rules.atol_floor),
                                     std::max(round_up_2(rules.multiplier * g.max_rel), rules.rtol_floor));
      r.because = "spread " + short_num(g.max_abs) + " (rel " + short_num(g.max_rel) + ") x " +
                  short_num(rules.multiplier) + ", floors " + short_num(rules.atol_floor) + " / " +
                  short_num(rules.rtol_floor) + ", driven by " + g.driver;
    }
    out[id] = r;
  }
  return out;
}

std::string first_failing_value(const RunRecord& run, const RunRecord& golden,
                                const std::map<std::string, Recommendation>& rules,
                                const std::vector<std::string>& except,
                                const std::map<std::string, std::vector<double>>* golden_std) {
  for (const auto& [name, g] : golden.series) {
    auto rule = rules.find(name);
    if (rule == rules.end() || !rule->second.measured || rule->second.probe) continue;
    if (std::find(except.begin(), except.end(), name) != except.end()) continue;
    auto it = run.series.find(name);
    if (it == run.series.end()) return name + ": absent from the run";
    const Series& a = it->second;
    if (step_numbers(a) != step_numbers(g)) return name + ": logged at other steps";
    const Tolerance& tol = rule->second.tolerance;
    bool sigma = tol.rule == Tolerance::Rule::kSigma;
    const std::vector<double>& center = sigma ? g.sigma_center() : g.values;
    const std::vector<double>* sd = nullptr;
    if (sigma && golden_std) {
      auto s = golden_std->find(name);
      if (s != golden_std->end()) sd = &s->second;
    }
    if (sigma && !sd) sd = &g.std;
    std::vector<int64_t> steps = step_numbers(g);
    for (size_t i = 0; i < a.values.size() && i < center.size(); ++i) {
      double stdv = sd && i < sd->size() ? (*sd)[i] : 0;
      ValueCheck c = check_value(a.values[i], center[i], tol, g.dtype == Series::Dtype::kFloat32, stdv);
      if (!c.pass)
        return name + " at step " + std::to_string(steps[i]) + ": golden " + format_double(center[i]) + ", run " +
               format_double(a.values[i]) + " (|err| " + short_num(c.abs_err) + ", rule " + tol.describe() + ")";
    }
  }
  for (bool trained : {false, true}) {
    const std::vector<BatchProbe>& gl = probe_list(golden, trained);
    const std::vector<BatchProbe>& rl = probe_list(run, trained);
    if (gl.empty()) continue;
    const char* list = trained ? "train_probes" : "probes";
    for (const char* part : {"inputs", "labels"})
      for (const auto& stat : tensor_stat_names()) {
        std::string field = std::string(part) + "." + stat;
        auto rule = rules.find("probes." + field);
        if (rule == rules.end() || !rule->second.measured) continue;
        if (rl.size() != gl.size()) return std::string(list) + ": " + std::to_string(rl.size()) + " batches, golden " +
                                           std::to_string(gl.size());
        for (size_t b = 0; b < gl.size(); ++b) {
          bool in = std::string(part) == "inputs";
          double gv = tensor_stat(in ? gl[b].inputs : gl[b].labels, stat);
          double av = tensor_stat(in ? rl[b].inputs : rl[b].labels, stat);
          ValueCheck c = check_value(av, gv, rule->second.tolerance, false);
          if (!c.pass)
            return std::string(list) + "." + field + " at batch " + std::to_string(b) + ": golden " + format_double(gv) +
                   ", run " + format_double(av) + " (|err| " + short_num(c.abs_err) + ", rule " +
                   rule->second.tolerance.describe() + ")";
        }
      }
  }
  return "";
}

double upper_bound_95(int failed, int n) {
  if (n <= 0) return 1;
  if (failed >= n) return 1;
  // P(X <= failed | n, p), by the log of each term.
  auto cdf = [&](double p) {
    double sum = 0;
    for (int k = 0; k <= failed; ++k) {
      double lc = std::lgamma(n + 1.0) - std::lgamma(k + 1.0) - std::lgamma(n - k + 1.0);
      sum += std::exp(lc + k * std::log(p) + (n - k) * std::log1p(-p));
    }
    return sum;
  };
  double lo = static_cast<double>(failed) / n, hi = 1;
  for (int i = 0; i < 100; ++i) {
    double mid = (lo + hi) / 2;
    (cdf(mid) > 0.05 ? lo : hi) = mid;
  }
  return hi;
}

RunRecord multi_seed_golden(const std::vector<CalibrationRun>& runs, std::map<std::string, std::vector<double>>& std_out) {
  RunRecord golden = runs.front().record;
  for (auto& [name, s] : golden.series) {
    std::vector<double> mean(s.values.size(), 0), var(s.values.size(), 0);
    size_t n = 0;
    for (const auto& o : runs) {
      auto it = o.record.series.find(name);
      if (it == o.record.series.end() || it->second.values.size() != mean.size()) continue;
      ++n;
      for (size_t k = 0; k < mean.size(); ++k) mean[k] += it->second.values[k];
    }
    for (auto& m : mean) m /= static_cast<double>(n);
    for (const auto& o : runs) {
      auto it = o.record.series.find(name);
      if (it == o.record.series.end() || it->second.values.size() != mean.size()) continue;
      for (size_t k = 0; k < mean.size(); ++k) var[k] += (it->second.values[k] - mean[k]) * (it->second.values[k] - mean[k]);
    }
    for (auto& v : var) v = std::sqrt(v / static_cast<double>(n));
    s.mean = mean;
    std_out[name] = var;
  }
  return golden;
}

TolerancePolicy policy_with(const TolerancePolicy& configured, const std::map<std::string, Recommendation>& rules) {
  TolerancePolicy p = configured;
  for (const auto& [id, r] : rules) {
    if (!r.measured) continue;
    (r.probe ? p.probes : p.series)[r.key] = r.tolerance;
  }
  p.step_time_ratio = std::numeric_limits<double>::infinity();
  p.peak_memory_ratio = std::numeric_limits<double>::infinity();
  return p;
}

std::string check_failure(const RunRecord& run, const RunRecord& golden, const TolerancePolicy& policy) {
  try {
    Verdict v = compare_records(run, golden, policy);
    if (v.passed()) return "";
    std::string why = v.first_divergence.empty() ? verdict_headline(v) : v.first_divergence;
    return why + " (" + lane_name(v.lane) + " lane)";
  } catch (const Error& e) {
    return std::string("not comparable: ") + e.what();
  }
}

FalseAlarm leave_one_out(const std::vector<CalibrationRun>& runs, const SpreadRules& rules, bool seeds_vary,
                         const TolerancePolicy& configured) {
  FalseAlarm fa;
  if (runs.size() < 3) return fa;  // the others must show a spread: two at least
  for (size_t i = 0; i < runs.size(); ++i) {
    std::vector<CalibrationRun> others;
    for (size_t j = 0; j < runs.size(); ++j)
      if (j != i) others.push_back(runs[j]);
    std::map<std::string, Recommendation> rec = recommend(measure_spreads(others, seeds_vary), rules, seeds_vary);
    bool failed = false;
    auto count = [&](const std::string& why, const std::string& against) {
      ++fa.comparisons;
      if (why.empty()) return;
      ++fa.failed_comparisons;
      failed = true;
      if (fa.example.empty()) fa.example = runs[i].label + " against " + against + ": " + why;
    };
    if (seeds_vary) {
      std::map<std::string, std::vector<double>> sd;
      RunRecord golden = multi_seed_golden(others, sd);
      std::map<std::string, Recommendation> series_only;
      for (const auto& [k, r] : rec)
        if (!r.probe) series_only[k] = r;
      count(first_failing_value(runs[i].record, golden, series_only, {}, &sd), "the others' mean and std");
    } else {
      const TolerancePolicy policy = policy_with(configured, rec);
      for (const auto& o : others) count(check_failure(runs[i].record, o.record, policy), o.label);
    }
    ++fa.runs;
    fa.failed_runs += failed ? 1 : 0;
  }
  fa.upper95 = upper_bound_95(fa.failed_runs, fa.runs);
  return fa;
}

}  // namespace lockstep
