#include "compare/tolerance_policy.h"

#include <cmath>
#include <cstdio>

#include "core/json_io.h"

namespace lockstep {

Tolerance TolerancePolicy::for_series(const std::string& name) const {
  if (auto it = series.find(name); it != series.end()) return it->second;
  auto slash = name.find('/');
  if (slash != std::string::npos) {
    if (auto it = series.find(name.substr(0, slash) + "/*"); it != series.end()) return it->second;
  }
  return series_default;
}

Tolerance TolerancePolicy::for_probe(const std::string& field) const {
  if (auto it = probes.find(field); it != probes.end()) return it->second;
  return probe_default;
}

Tolerance tolerance_from_json(const JsonView& n) {
  n.allow_keys({"exact", "atol", "rtol", "ulp", "sigma"});
  int kinds = (n.has("exact") ? 1 : 0) + ((n.has("atol") || n.has("rtol")) ? 1 : 0) +
              (n.has("ulp") ? 1 : 0) + (n.has("sigma") ? 1 : 0);
  if (kinds != 1)
    n.fail("exactly one rule: {\"exact\": true}, {\"atol\": A, \"rtol\": R}, {\"ulp\": N} or {\"sigma\": K}");
  if (n.has("exact")) {
    if (!n.at("exact").as_bool()) n.at("exact").fail("true (omit the rule for the default)");
    return Tolerance::exact();
  }
  if (n.has("ulp")) return Tolerance::ulp(n.at("ulp").as_uint());
  if (n.has("sigma")) return Tolerance::sigma(n.at("sigma").as_finite(0, 1e6));
  double atol = n.has("atol") ? n.at("atol").as_finite(0, 1e300) : 0;
  double rtol = n.has("rtol") ? n.at("rtol").as_finite(0, 1e300) : 0;
  return Tolerance::close(atol, rtol);
}

TolerancePolicy tolerance_policy_from_json(const JsonView& n) {
  n.allow_keys({"series", "probes", "allow_nonfinite_golden", "same_stack", "resources"});
  TolerancePolicy p;
  // {"default": rule, "<name>": rule, ...} into a default and a map.
  auto read_rules = [&n](const char* section, Tolerance& fallback, std::map<std::string, Tolerance>& named) {
    if (!n.has(section)) return;
    JsonView s = n.at(section);
    for (const auto& k : s.keys()) {
      Tolerance t = tolerance_from_json(s.at(k));
      if (k == "default") fallback = t;
      else named[k] = t;
    }
  };
  read_rules("series", p.series_default, p.series);
  read_rules("probes", p.probe_default, p.probes);
  if (n.has("allow_nonfinite_golden"))
    p.allow_nonfinite_golden = n.at("allow_nonfinite_golden").as_bool();
  if (n.has("same_stack"))
    p.same_stack_exact = n.at("same_stack").as_enum({"exact", "tolerance"}) == "exact";
  if (n.has("resources")) {
    JsonView r = n.at("resources");
    r.allow_keys({"step_time_ratio", "peak_memory_ratio"});
    if (r.has("step_time_ratio")) p.step_time_ratio = r.at("step_time_ratio").as_finite(1, 1e6);
    if (r.has("peak_memory_ratio")) p.peak_memory_ratio = r.at("peak_memory_ratio").as_finite(1, 1e6);
  }
  return p;
}

std::string rounded_series_problem(const TolerancePolicy& policy, const std::string& name, const Series& golden) {
  if (!(golden.rounded > 0)) return "";
  Tolerance t = policy.for_series(name);
  char half[32];
  std::snprintf(half, sizeof half, "%g", golden.rounded / 2);
  std::string fix = "; give tolerance.series." + name + " an atol of at least " + half;
  char grid[32];
  std::snprintf(grid, sizeof grid, "%g", golden.rounded);
  if (t.rule == Tolerance::Rule::kExact || t.rule == Tolerance::Rule::kUlp)
    return "its values are rounded to " + std::string(grid) + " by their source, so the rule " + t.describe() +
           " would compare the rounding, not the runs" + fix;
  if (t.rule == Tolerance::Rule::kClose)
    for (double g : golden.values)
      if (std::isfinite(g) && t.atol + t.rtol * std::fabs(g) < golden.rounded / 2)
        return "its values are rounded to " + std::string(grid) + " by their source, and the rule " + t.describe() +
               " allows less than half that step at " + format_error(g) + fix;
  return "";
}

}  // namespace lockstep
