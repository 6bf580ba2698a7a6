#include "compare/verdict.h"

#include "core/json_io.h"

namespace lockstep {

const char* lane_name(Lane lane) {
  switch (lane) {
    case Lane::kSameStack: return "same-stack";
    case Lane::kCrossStack: return "cross-stack";
    case Lane::kContractMismatch: return "contract-mismatch";
    case Lane::kNone: return "none";
    case Lane::kEquivalence: return "equivalence";
  }
  return "?";
}

const char* section_name(Section section) {
  switch (section) {
    case Section::kStructure: return "structure";
    case Section::kContract: return "contract";
    case Section::kData: return "data";
    case Section::kTrain: return "train";
    case Section::kHashes: return "hashes";
    case Section::kResources: return "resources";
    case Section::kInput: return "input";
  }
  return "?";
}

size_t stack_differences(const Verdict& v) {
  size_t n = 0;
  for (const auto& d : v.env_diffs) n += d.relevant ? 1 : 0;
  return n;
}

std::string verdict_headline(const Verdict& v) {
  if (v.code == ExitCode::kNondeterministic) return "NONDETERMINISTIC";
  if (!v.passed()) return "FAIL";
  if (v.lane != Lane::kCrossStack) return "PASS";
  if (!v.imported_from.empty())
    return "PASS (an imported " + (v.imported_side.empty() ? std::string("golden") : v.imported_side) +
           "'s curves, within tolerance)";
  size_t n = stack_differences(v);
  return "PASS (cross-stack: " + std::to_string(n) + " stack field" + (n == 1 ? "" : "s") +
         " differ" + (n == 1 ? "s" : "") + ", within tolerance)";
}

const char* stop_kind(const Verdict& v) {
  switch (v.code) {
    case ExitCode::kNondeterministic: return "nondeterministic";
    case ExitCode::kBadInput: return "bad-input";
    case ExitCode::kEnvironment: return "environment";
    case ExitCode::kPass:
    case ExitCode::kRegression: return "";
  }
  return "";
}

ExitCode most_severe(const std::vector<Verdict>& verdicts) {
  ExitCode worst = ExitCode::kPass;
  for (const auto& v : verdicts)
    if (exit_severity(v.code) > exit_severity(worst)) worst = v.code;
  return worst;
}

nlohmann::json to_json(const Verdict& v) {
  nlohmann::json env = nlohmann::json::array();
  for (const auto& d : v.env_diffs)
    env.push_back({{"field", d.name}, {"golden", d.golden}, {"run", d.run}, {"relevant", d.relevant}, {"input", d.input}});
  nlohmann::json findings = nlohmann::json::array();
  for (const auto& f : v.findings)
    findings.push_back({{"section", section_name(f.section)},
                        {"subject", f.subject},
                        {"index", f.index},
                        {"detail", f.detail}});
  nlohmann::json results = nlohmann::json::array();
  for (const auto& r : v.results)
    results.push_back({{"section", section_name(r.section)},
                       {"name", r.name},
                       {"rule", r.rule},
                       {"checked", r.checked},
                       {"failed", r.failed},
                       {"first_fail", r.first_fail},
                       {"max_abs", double_to_json(r.max_abs)},
                       {"max_abs_at", r.max_abs_at},
                       {"max_rel", r.max_rel_at < 0 ? nlohmann::json(nullptr) : double_to_json(r.max_rel)},
                       {"max_rel_at", r.max_rel_at}});
  nlohmann::json lanes = nlohmann::json::array();
  for (const auto& l : v.lanes)
    lanes.push_back({{"name", l.name}, {"change", l.change}, {"rule", l.rule}, {"judged", l.judged},
                     {"passed", l.passed}, {"detail", l.detail}, {"values_checked", l.values_checked}});
  nlohmann::json module = nullptr;
  if (v.trace.first >= 0) {
    const TraceCell& c = v.trace.cells[static_cast<size_t>(v.trace.first)];
    module = {{"step", c.step}, {"phase", trace_phase_name(c.phase)}, {"module", c.module}, {"summary", v.trace.summary}};
  }
  return {{"smoke", v.smoke},
          {"run", v.run_label},
          {"golden", v.golden_label},
          {"reference_word", v.reference_word},
          {"subject_word", v.subject_word},
          {"passed", v.passed()},
          {"exit_code", to_int(v.exit_code())},
          {"lane", lane_name(v.lane)},
          {"lane_reason", v.lane_reason},
          {"first_divergence", v.first_divergence},
          {"first_divergent_module", module},
          {"quote", v.quote},
          {"stopped", stop_kind(v)},
          {"values_checked", v.values_checked},
          {"equivalence_lane", v.equivalence_lane.empty() ? nlohmann::json(nullptr) : nlohmann::json(v.equivalence_lane)},
          {"lanes", lanes},
          {"environment_diff", env},
          {"findings", findings},
          {"results", results},
          {"notes", v.notes}};
}

}  // namespace lockstep
