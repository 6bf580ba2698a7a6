#include "compare/markdown_report.h"

#include <sstream>

namespace lockstep {

namespace {

// Table cells: escape the pipe, keep one line.
std::string cell(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '|') out += "\\|";
    else if (c == '\n') out += ' ';
    else out += c;
  }
  return out;
}

}  // namespace

std::string render_markdown(const Verdict& v) {
  std::ostringstream o;
  o << "### lockstep: `" << v.smoke << "` " << (v.passed() ? "✅ PASS" : "❌ FAIL") << " (exit "
    << to_int(v.exit_code()) << ")\n\n";
  if (!v.passed()) o << "**First divergence:** " << cell(v.first_divergence) << "\n\n";
  o << "**Lane:** `" << lane_name(v.lane) << "` — " << cell(v.lane_reason) << "\n\n";
  if (!v.env_diffs.empty()) {
    o << "| environment field | golden | run |\n|---|---|---|\n";
    for (const auto& d : v.env_diffs)
      o << "| " << (d.relevant ? "**" + cell(d.name) + "**" : cell(d.name)) << " | " << cell(d.golden) << " | "
        << cell(d.run) << " |\n";
    o << "\n";
  }
  if (!v.findings.empty()) {
    o << "| section | what | detail |\n|---|---|---|\n";
    for (const auto& f : v.findings)
      o << "| " << section_name(f.section) << " | `" << cell(f.subject) << "` | " << cell(f.detail) << " |\n";
    o << "\n";
  }
  size_t passing = 0;
  for (const auto& r : v.results) passing += r.failed == 0;
  o << passing << " of " << v.results.size() << " series and probe fields within their rule; "
    << v.values_checked << " values compared.\n";
  for (const auto& n : v.notes) o << "\n> " << cell(n) << "\n";
  return o.str();
}

}  // namespace lockstep
