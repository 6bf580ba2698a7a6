#include "compare/junit_report.h"

#include <sstream>

#include "core/error.h"
#include "core/svg_chart.h"

namespace lockstep {

namespace {

struct Case {
  std::string classname, name, failure;
  std::string skipped;  ///< non-empty: <skipped message="...">
};

std::vector<Case> cases_of(const Verdict& v) {
  std::vector<Case> out;
  // A lane's comparison files its rows under the lane: never the IDs of a
  // regression against the golden.
  std::string prefix = "lockstep." + v.smoke + "." +
                       (v.equivalence_lane.empty() ? "" : "equivalence." + v.equivalence_lane + ".");
  std::vector<bool> used(v.findings.size(), false);
  for (const auto& r : v.results) {
    Case c{prefix + section_name(r.section), r.name, "", ""};
    for (size_t i = 0; i < v.findings.size(); ++i) {
      if (v.findings[i].section == r.section && v.findings[i].subject == r.name) {
        c.failure = v.findings[i].detail;
        used[i] = true;
      }
    }
    out.push_back(c);
  }
  for (size_t i = 0; i < v.findings.size(); ++i) {
    if (used[i]) continue;
    const Finding& f = v.findings[i];
    out.push_back({prefix + section_name(f.section), f.subject, f.detail, ""});
  }
  // Each lane, one testcase; the failing lane whose comparison this is
  // already failed above.
  for (const auto& l : v.lanes) {
    Case c{"lockstep." + v.smoke + ".equivalence", l.name, "", ""};
    std::string what = l.name + " (" + l.change + "), held " + l.rule + ": " + l.detail;
    if (!l.judged) c.skipped = what;
    else if (!l.passed) c.failure = what;
    out.push_back(c);
  }
  return out;
}

}  // namespace

std::string render_junit(const std::vector<Verdict>& verdicts) {
  std::ostringstream body;
  size_t tests = 0, failures = 0, errors = 0;
  for (const auto& v : verdicts) {
    auto cases = cases_of(v);
    // A smoke that could not run (exit 2 or 3) is an <error>: the runner or
    // the input is broken, which is not a determinism regression.
    bool is_error = v.code == ExitCode::kEnvironment || v.code == ExitCode::kBadInput;
    std::string stopped = stop_kind(v);
    size_t bad = 0;
    for (const auto& c : cases) bad += !c.failure.empty();
    body << "  <testsuite name=\"" << xml_escape(v.smoke) << "\" tests=\"" << cases.size() << "\" failures=\""
         << (is_error ? 0 : bad) << "\" errors=\"" << (is_error ? bad : 0) << "\">\n";
    // The lane and verdict of a comparison, so a green job still shows in
    // GitLab's test report that the stack moved.
    if (stopped.empty())
      body << "    <properties>\n      <property name=\"lockstep.verdict\" value=\"" << xml_escape(verdict_headline(v))
           << "\"/>\n      <property name=\"lockstep.lane\" value=\"" << lane_name(v.lane) << "\"/>\n    </properties>\n";
    for (const auto& c : cases) {
      body << "    <testcase classname=\"" << xml_escape(c.classname) << "\" name=\"" << xml_escape(c.name)
           << "\" time=\"0\"";
      if (!c.skipped.empty()) {
        body << ">\n      <skipped message=\"" << xml_escape(c.skipped) << "\"/>\n    </testcase>\n";
        continue;
      }
      if (c.failure.empty()) {
        body << "/>\n";
        continue;
      }
      const char* element = is_error ? "error" : "failure";
      std::string type = stopped.empty() ? "regression" : stopped;
      // Only a comparison has a first divergence and a lane.
      std::string text = stopped.empty() && !v.lane_reason.empty() ? c.failure + "\nfirst divergence: " + v.first_divergence + "\nlane: " +
                                                 lane_name(v.lane) + " (" + v.lane_reason + ")"
                                           : c.failure;
      for (const auto& line : v.quote) text += "\n  | " + line;
      body << ">\n      <" << element << " message=\"" << xml_escape(c.failure) << "\" type=\"" << type << "\">"
           << xml_escape(text) << "</" << element << ">\n    </testcase>\n";
    }
    if (stopped.empty() && v.lane == Lane::kCrossStack) {
      std::string out = "lane: cross-stack (" + v.lane_reason + ")\n";
      for (const auto& d : v.env_diffs)
        if (d.relevant) out += "  " + d.name + ": golden " + d.golden + ", run " + d.run + "\n";
      body << "    <system-out>" << xml_escape(out) << "</system-out>\n";
    }
    body << "  </testsuite>\n";
    tests += cases.size();
    (is_error ? errors : failures) += bad;
  }
  std::ostringstream doc;
  doc << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"lockstep\" tests=\"" << tests
      << "\" failures=\"" << failures << "\" errors=\"" << errors << "\">\n"
      << body.str() << "</testsuites>\n";
  return doc.str();
}

}  // namespace lockstep
