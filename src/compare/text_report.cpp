#include "compare/text_report.h"

#include <cmath>
#include <sstream>

#include "core/error.h"

namespace lockstep {

namespace {

struct Palette {
  bool on;
  std::string red() const { return on ? "\033[31m" : ""; }
  std::string green() const { return on ? "\033[32m" : ""; }
  std::string bold() const { return on ? "\033[1m" : ""; }
  std::string reset() const { return on ? "\033[0m" : ""; }
};

std::string pad(const std::string& s, size_t width) {
  return s.size() >= width ? s + " " : s + std::string(width - s.size(), ' ');
}

// Names and values from records reach a terminal: control characters
// print as \xNN (core/error.h).
std::string printable(const std::string& s) { return printable_message(s, /*keep_line_breaks=*/false); }

std::string at(double value, int64_t where) {
  if (where < 0) return "-";
  return format_error(value) + " @" + std::to_string(where);
}

}  // namespace

std::string render_text(const Verdict& v, bool color) {
  Palette c{color};
  std::ostringstream o;
  o << c.bold() << "lockstep: " << printable(v.smoke) << ": " << c.reset()
    << (v.passed() ? c.green() : c.red()) << verdict_headline(v) << c.reset() << " (exit "
    << to_int(v.exit_code()) << ")\n";
  size_t word = std::max(v.subject_word.size(), v.reference_word.size()) + 2;
  o << "  " << pad(v.subject_word + ":", word) << printable(v.run_label) << "\n  " << pad(v.reference_word + ":", word)
    << printable(v.golden_label) << "\n";
  if (!v.passed()) o << c.bold() << "first divergence: " << c.reset() << printable(v.first_divergence) << "\n";
  for (const auto& line : v.quote) o << "  | " << printable(line) << "\n";
  if (!v.lane_reason.empty()) o << "lane: " << lane_name(v.lane) << " — " << v.lane_reason << "\n";

  if (!v.imported_from.empty()) {
    o << "environment: not compared (the curves of the imported "
      << (v.imported_side.empty() ? std::string("golden") : v.imported_side) << " came from another tool's file)\n";
  } else if (v.lane == Lane::kEquivalence) {
    o << "environment: not compared (the lane changes its inputs on purpose)\n";
  } else if (v.env_diffs.empty()) {
    o << "environment: identical fingerprints\n";
  } else {
    o << "environment differences (" << v.env_diffs.size()
      << ", inputs (!) and determinism-relevant (*) first):\n";
    size_t width = 0;
    for (const auto& d : v.env_diffs) width = std::max(width, d.name.size());
    for (const auto& d : v.env_diffs)
      o << "  " << (d.input ? "! " : d.relevant ? "* " : "  ") << pad(printable(d.name), width + 1) << pad(v.reference_word + ":", word) << printable(d.golden)
        << "\n  " << std::string(width + 3, ' ') << pad(v.subject_word + ":", word) << printable(d.run) << "\n";
  }

  if (!v.findings.empty()) {
    o << "failures (" << v.findings.size() << "):\n";
    for (const auto& f : v.findings)
      o << "  " << c.red() << "[" << section_name(f.section) << "] " << c.reset() << printable(f.subject) << ": "
        << printable(f.detail) << "\n";
  }
  for (const auto& n : v.notes) o << "note: " << printable(n) << "\n";

  if (!v.results.empty()) {
    size_t width = 6;
    for (const auto& r : v.results) width = std::max(width, r.name.size());
    o << pad("values", width + 2) << pad("rule", 30) << pad("fail", 9) << pad("max |err|", 16)
      << "max rel\n";
    for (const auto& r : v.results) {
      std::string fails = std::to_string(r.failed) + "/" + std::to_string(r.checked);
      o << pad(printable(r.name), width + 2) << pad(r.rule, 30) << pad(fails, 9)
        << pad(at(r.max_abs, r.max_abs_at), 16)
        << (r.max_rel_at < 0 ? std::string("n/a") : at(r.max_rel, r.max_rel_at)) << "\n";
    }
  }
  o << v.values_checked << " values compared\n";
  return o.str();
}

}  // namespace lockstep
