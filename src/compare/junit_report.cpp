#include "compare/junit_report.h"

#include <sstream>

namespace lockstep {

std::string xml_escape(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (unsigned char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default:
        // XML 1.0 allows only TAB, LF, CR below 0x20.
        if (c < 0x20 && c != '\t' && c != '\n' && c != '\r') break;
        out += static_cast<char>(c);
    }
  }
  return out;
}

namespace {

struct Case {
  std::string classname, name, failure;
};

std::vector<Case> cases_of(const Verdict& v) {
  std::vector<Case> out;
  std::string prefix = "lockstep." + v.smoke + ".";
  std::vector<bool> used(v.findings.size(), false);
  for (const auto& r : v.results) {
    Case c{prefix + section_name(r.section), r.name, ""};
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
    out.push_back({prefix + section_name(f.section), f.subject, f.detail});
  }
  return out;
}

}  // namespace

std::string render_junit(const std::vector<Verdict>& verdicts) {
  std::ostringstream body;
  size_t tests = 0, failures = 0;
  for (const auto& v : verdicts) {
    auto cases = cases_of(v);
    size_t fails = 0;
    for (const auto& c : cases) fails += !c.failure.empty();
    body << "  <testsuite name=\"" << xml_escape(v.smoke) << "\" tests=\"" << cases.size() << "\" failures=\""
         << fails << "\" errors=\"0\">\n";
    for (const auto& c : cases) {
      body << "    <testcase classname=\"" << xml_escape(c.classname) << "\" name=\"" << xml_escape(c.name)
           << "\" time=\"0\"";
      if (c.failure.empty()) {
        body << "/>\n";
        continue;
      }
      body << ">\n      <failure message=\"" << xml_escape(c.failure) << "\" type=\"regression\">"
           << xml_escape(c.failure + "\nfirst divergence: " + v.first_divergence + "\nlane: " +
                         lane_name(v.lane) + " (" + v.lane_reason + ")")
           << "</failure>\n    </testcase>\n";
    }
    body << "  </testsuite>\n";
    tests += cases.size();
    failures += fails;
  }
  std::ostringstream doc;
  doc << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"lockstep\" tests=\"" << tests
      << "\" failures=\"" << failures << "\" errors=\"0\">\n"
      << body.str() << "</testsuites>\n";
  return doc.str();
}

}  // namespace lockstep
