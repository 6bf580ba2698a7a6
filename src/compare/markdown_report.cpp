#include "compare/markdown_report.h"

#include <sstream>

#include "core/error.h"

namespace lockstep {

namespace {

// Text from a record (series and parameter names, fingerprint values,
// messages quoting them) as inert Markdown: HTML's special characters and
// Markdown's emphasis, code, link and table punctuation become character
// references, so `<script>` or a stray `|` or backtick in a name renders as
// text in a merge-request comment and never as markup; one line.
std::string cell(const std::string& s) {
  std::string out;
  std::string bidi;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (size_t n = bidi_control_at(s, i, &bidi)) {  // \u202e as text, never obeyed
      out += "&#92;" + bidi.substr(1);
      i += n - 1;
      continue;
    }
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '|': out += "&#124;"; break;
      case '`': out += "&#96;"; break;
      case '*': out += "&#42;"; break;
      case '_': out += "&#95;"; break;
      case '[': out += "&#91;"; break;
      case ']': out += "&#93;"; break;
      case '\\': out += "&#92;"; break;
      case '\n': case '\r': out += ' '; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)  // NUL, ESC, ...: as text, \xNN
          out += "&#92;" + printable_message(std::string(1, c), false).substr(1);
        else
          out += c;
    }
  }
  return out;
}

// A name as code: <code> with the text escaped as above.
std::string code(const std::string& s) { return "<code>" + cell(s) + "</code>"; }

}  // namespace

std::string render_markdown(const Verdict& v) {
  std::ostringstream o;
  o << "### lockstep: " << code(v.smoke) << " " << (v.passed() ? "✅ " : "❌ ") << verdict_headline(v) << " (exit "
    << to_int(v.exit_code()) << ")\n\n";
  if (!v.passed()) o << "**First divergence:** " << cell(v.first_divergence) << "\n\n";
  if (!v.quote.empty()) {
    // A fenced block longer than any backtick run inside it.
    std::string fence = "```";
    for (const auto& line : v.quote)
      while (line.find(fence) != std::string::npos) fence += "`";
    o << fence << "text\n";
    for (const auto& line : v.quote) o << printable_message(line, false) << "\n";
    o << fence << "\n\n";
  }
  // A smoke that stopped before any comparison (a failed trainer, a resume
  // difference) has no lane.
  if (!v.lane_reason.empty()) o << "**Lane:** `" << lane_name(v.lane) << "` — " << cell(v.lane_reason) << "\n\n";
  if (!v.env_diffs.empty()) {
    o << "| environment field | " << cell(v.reference_word) << " | " << cell(v.subject_word) << " |\n|---|---|---|\n";
    for (const auto& d : v.env_diffs)
      o << "| " << (d.input ? "input: **" + cell(d.name) + "**" : d.relevant ? "**" + cell(d.name) + "**" : cell(d.name))
        << " | " << cell(d.golden) << " | "
        << cell(d.run) << " |\n";
    o << "\n";
  }
  if (!v.findings.empty()) {
    o << "| section | what | detail |\n|---|---|---|\n";
    for (const auto& f : v.findings)
      o << "| " << section_name(f.section) << " | " << code(f.subject) << " | " << cell(f.detail) << " |\n";
    o << "\n";
  }
  size_t passing = 0;
  for (const auto& r : v.results) passing += r.failed == 0;
  o << passing << " of " << v.results.size() << " series and probe fields within their rule; "
    << v.values_checked << " values compared.\n";
  if (!v.lanes.empty()) {  // beside the golden comparison (docs/equivalence.md)
    o << "\n| equivalence lane | changes | held | result |\n|---|---|---|---|\n";
    for (const auto& l : v.lanes)
      o << "| " << code(l.name) << " | " << cell(l.change) << " | " << cell(l.rule) << " | "
        << (!l.judged ? "⏭ " : l.passed ? "✅ " : "❌ ") << cell(l.detail) << " |\n";
  }
  for (const auto& n : v.notes) o << "\n> " << cell(n) << "\n";
  return o.str();
}

}  // namespace lockstep
