#include "compare/html_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>
#include <vector>

#include "core/float_bits.h"
#include "core/svg_chart.h"

namespace lockstep {

namespace {

std::string esc(const std::string& s) { return xml_escape(s); }

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

// Half-width of the tolerance band around golden value `g` at step i.
double band(const SeriesResult& r, const Series& golden, size_t i) {
  double g = golden.values[i];
  const Tolerance& t = r.tolerance;
  switch (t.rule) {
    case Tolerance::Rule::kExact: return 0;
    case Tolerance::Rule::kClose: return t.atol + t.rtol * std::fabs(g);
    case Tolerance::Rule::kUlp: return std::fabs(std::nextafter(g, INFINITY) - g) * static_cast<double>(t.max_ulp);
    case Tolerance::Rule::kSigma: return i < golden.std.size() ? t.k * golden.std[i] : 0;
  }
  return 0;
}

// Plot geometry: the width of the drawing area in pixel columns. A series
// longer than twice that is thinned per column (thin()), so a report's size
// and time do not grow with the series' length.
constexpr double kPlotWidth = 560, kPlotLeft = 60, kPlotRight = 10;
constexpr size_t kColumns = static_cast<size_t>(kPlotWidth - kPlotLeft - kPlotRight);

// The points of `value(i)` over [begin, end) to draw: every finite one when
// they fit in twice the plot's columns, else per pixel column its smallest
// and largest (in the order they occur): a spike of one step survives.
// `keep` picks which of the two a column keeps (0 both, -1 the smallest,
// +1 the largest: the edges of a band).
template <typename Value>
std::vector<size_t> thin(size_t begin, size_t end, const Value& value, int keep = 0) {
  std::vector<size_t> out;
  size_t n = end - begin;
  if (n <= 2 * kColumns) {
    for (size_t i = begin; i < end; ++i)
      if (std::isfinite(value(i))) out.push_back(i);
    return out;
  }
  for (size_t c = 0; c < kColumns; ++c) {
    size_t from = begin + n * c / kColumns, to = begin + n * (c + 1) / kColumns;
    size_t lo = end, hi = end;
    for (size_t i = from; i < to; ++i) {
      double v = value(i);
      if (!std::isfinite(v)) continue;
      if (lo == end || v < value(lo)) lo = i;
      if (hi == end || v > value(hi)) hi = i;
    }
    if (lo == end) continue;
    if (keep < 0) out.push_back(lo);
    else if (keep > 0) out.push_back(hi);
    else if (lo == hi) out.push_back(lo);
    else out.push_back(std::min(lo, hi)), out.push_back(std::max(lo, hi));
  }
  return out;
}

// One SVG line chart of steps [begin, end): golden (blue), run (orange,
// dashed), band (grey); `first_fail` marked when inside. `title` names a
// zoomed chart.
std::string plot(const SeriesResult& r, const Series& golden, const Series& run, size_t begin, size_t end,
                 const std::string& title = "") {
  // The top margin leaves a strip above the plot area for the
  // first-failure label, so it never covers a curve.
  const SvgChart::Frame frame{kPlotWidth, 192, kPlotLeft, kPlotRight, 22, 20};
  auto g = [&](size_t i) { return golden.values[i]; };
  auto a = [&](size_t i) { return i < run.values.size() ? run.values[i] : NAN; };
  auto up = [&](size_t i) { return golden.values[i] + band(r, golden, i); };
  auto down = [&](size_t i) { return golden.values[i] - band(r, golden, i); };
  double lo = INFINITY, hi = -INFINITY;
  for (size_t i = begin; i < end; ++i)
    for (double v : {down(i), up(i), a(i)})
      if (std::isfinite(v)) lo = std::min(lo, v), hi = std::max(hi, v);
  if (!std::isfinite(lo)) lo = 0, hi = 1;
  if (hi == lo) hi = lo + (lo == 0 ? 1 : std::fabs(lo) * 1e-6);
  size_t n = end - begin;
  SvgChart chart(frame, r.name + title);
  chart.x_range(static_cast<double>(begin), static_cast<double>(n > 1 ? end - 1 : begin));
  chart.y_range(lo, hi);
  auto points = [&](const std::vector<size_t>& steps, const auto& value) {
    std::vector<SvgChart::Point> out;
    out.reserve(steps.size());
    for (size_t i : steps) out.push_back({static_cast<double>(i), value(i)});
    return out;
  };
  // The band: upper edge left to right, lower edge right to left.
  std::vector<SvgChart::Point> band_edge = points(thin(begin, end, up, +1), up);
  std::vector<SvgChart::Point> lower = points(thin(begin, end, down, -1), down);
  band_edge.insert(band_edge.end(), lower.rbegin(), lower.rend());
  chart.polygon(band_edge, "#ddd");
  chart.polyline(points(thin(begin, end, g), g), "#1f77b4");
  chart.polyline(points(thin(begin, end, a), a), "#ff7f0e", 1.5, "4 2");
  if (r.first_fail >= static_cast<int64_t>(begin) && r.first_fail < static_cast<int64_t>(end)) {
    double step = static_cast<double>(r.first_fail), fx = chart.px(step);
    // Right of the line in the left half, left of it in the right half:
    // the label stays inside the picture at step 0 and at the last step.
    bool right_half = fx > frame.width / 2;
    chart.vline(step, frame.top - 8, frame.height - frame.bottom, "#d62728");
    chart.text(right_half ? fx - 3 : fx + 3, frame.top - 10, "first failure: step " + std::to_string(r.first_fail), 11,
               "#d62728", right_half ? "end" : "start");
  }
  chart.text(2, frame.top + 8, num(hi), 10);
  chart.text(2, frame.height - frame.bottom, num(lo), 10);
  chart.text(frame.left, frame.height - 4, "step " + std::to_string(begin), 10);
  chart.text(frame.width - 60, frame.height - 4, "step " + std::to_string(n ? end - 1 : 0), 10);
  return chart.finish();
}

// |run - golden| per step on a log10 scale (red), with the allowed band
// (grey) when the rule has one: tiny bit-level drift is visible here even
// when the two curves above overlap. Long series are thinned as plot() does.
std::string error_plot(const SeriesResult& r, const Series& golden, const Series& run, const std::string& diff) {
  const SvgChart::Frame frame{kPlotWidth, 70, kPlotLeft, kPlotRight, 6, 6};
  size_t n = std::min(golden.values.size(), run.values.size());
  auto err = [&](size_t i) {
    double e = std::fabs(run.values[i] - golden.values[i]);
    return e > 0 && std::isfinite(e) ? std::log10(e) : NAN;
  };
  auto allowed = [&](size_t i) {
    double b = band(r, golden, i);
    return b > 0 ? std::log10(b) : NAN;
  };
  double lo = INFINITY, hi = -INFINITY;
  for (size_t i = 0; i < n; ++i)
    for (double v : {err(i), allowed(i)})
      if (std::isfinite(v)) lo = std::min(lo, v), hi = std::max(hi, v);
  SvgChart chart(frame, "error of " + r.name);
  if (!std::isfinite(lo)) {
    chart.text(frame.left, frame.height / 2, diff + " = 0 at every step", 11, "#2ca02c");
    return chart.finish();
  }
  if (hi - lo < 1) lo -= 0.5, hi += 0.5;
  chart.x_range(0, n > 1 ? static_cast<double>(n - 1) : 0);
  chart.y_range(lo, hi);
  auto line = [&](const auto& value, const char* colour, int keep) {
    std::vector<SvgChart::Point> points;
    for (size_t i : thin(0, n, value, keep)) points.push_back({static_cast<double>(i), value(i)});
    chart.polyline(points, colour);
  };
  line(allowed, "#999", -1);  // the tightest allowance of a column
  line(err, "#d62728", 0);
  chart.text(2, frame.top + 8, num(std::pow(10, hi)), 10);
  chart.text(2, frame.height - frame.bottom, num(std::pow(10, lo)), 10);
  chart.text(frame.left + 4, frame.top + 8, diff + " (log)", 10, "#d62728");
  return chart.finish();
}

// The charts of one series: the whole run, and when it is thinned and
// fails, the first failure's neighbourhood at full resolution.
std::string series_plots(const SeriesResult& r, const Series& golden, const Series& run, const std::string& diff) {
  size_t n = golden.values.size();
  std::string out = plot(r, golden, run, 0, n) + "<br>" + error_plot(r, golden, run, diff);
  if (n > 2 * kColumns && r.first_fail >= 0) {
    size_t ff = static_cast<size_t>(r.first_fail);
    size_t begin = ff > kColumns / 2 ? ff - kColumns / 2 : 0;
    size_t end = std::min(n, begin + kColumns);
    out += "<br><small>steps " + std::to_string(begin) + " to " + std::to_string(end - 1) +
           ", every step (around the first failure):</small><br>" +
           plot(r, golden, run, begin, end, " (steps " + std::to_string(begin) + " to " + std::to_string(end - 1) + ")");
  }
  if (n > 2 * kColumns)
    out += "<br><small>" + std::to_string(n) + " steps: each pixel column shows the smallest and largest value of its "
           "steps</small>";
  return out;
}

// Rows a table shows before it says how many it left out.
constexpr size_t kTableRows = 100;

std::string probe_table(const std::vector<BatchProbe>& run, const std::vector<BatchProbe>& golden, const Verdict& v) {
  std::ostringstream o;
  std::string ref = esc(v.reference_word), sub = esc(v.subject_word);
  // One side without probes (imported curves, a record of no data-only
  // pass): nothing was compared, which is no failure.
  if (run.empty() || golden.empty()) {
    if (run.empty() && golden.empty()) return "<p>no batch probes on either side</p>";
    return "<p>the " + (golden.empty() ? ref : sub) + " holds no batch probes, the " + (golden.empty() ? sub : ref) +
           " " + std::to_string(std::max(run.size(), golden.size())) + ": not compared</p>";
  }
  o << "<table><tr><th>batch</th><th>samples</th><th>inputs hash</th><th>mean " << ref << "</th><th>mean " << sub
    << "</th><th>std " << ref << "</th><th>std " << sub << "</th><th>labels hash</th></tr>";
  size_t n = std::min(run.size(), golden.size());
  // The first rows, and the first differing batch with its neighbours;
  // one row says how many are left out and how many of those differ.
  size_t first_bad = n;
  for (size_t i = 0; i < n && first_bad == n; ++i)
    if (!batch_content_difference(golden[i], run[i]).empty() || !same_bits(golden[i].inputs.mean, run[i].inputs.mean) ||
        !same_bits(golden[i].inputs.std, run[i].inputs.std))
      first_bad = i;
  auto shown = [&](size_t i) {
    return i < kTableRows || (first_bad < n && i + 5 >= first_bad && i < first_bad + 5);
  };
  size_t skipped = 0, skipped_bad = 0;
  for (size_t i = 0; i < n; ++i) {
    if (!shown(i)) {
      ++skipped;
      skipped_bad += batch_content_difference(golden[i], run[i]).empty() ? 0 : 1;
      if (i + 1 < n && !shown(i + 1)) continue;
      o << "<tr><td colspan=8 style=\"text-align:left\"><i>" << skipped << " more batch(es) not shown"
        << (skipped_bad ? ", " + std::to_string(skipped_bad) + " of them with other bytes" : std::string(", bytes identical"))
        << "</i></td></tr>";
      skipped = skipped_bad = 0;
      continue;
    }
    const BatchProbe& g = golden[i];
    const BatchProbe& r = run[i];
    auto mark = [](bool same) { return same ? "<td class=ok>=</td>" : "<td class=bad>differs</td>"; };
    auto val = [](double a, double b) {
      return std::string(same_bits(a, b) ? "<td>" : "<td class=bad>") + esc(format_double(a)) + "</td>";
    };
    o << "<tr><td>" << i << "</td>" << mark(g.sample_index_hash == r.sample_index_hash)
      << mark(g.inputs.xxh3_128 == r.inputs.xxh3_128) << "<td>" << esc(format_double(g.inputs.mean)) << "</td>"
      << val(r.inputs.mean, g.inputs.mean) << "<td>" << esc(format_double(g.inputs.std)) << "</td>"
      << val(r.inputs.std, g.inputs.std) << mark(g.labels.xxh3_128 == r.labels.xxh3_128) << "</tr>";
  }
  o << "</table>";
  if (run.size() != golden.size())
    o << "<p class=bad>batch count: " << ref << " " << golden.size() << ", " << sub << " " << run.size() << "</p>";
  return o.str();
}

// Module × (step, phase) grid of the module traces, the first divergent
// cell marked.
std::string trace_grid(const Verdict& v) {
  const ModuleDivergence& d = v.trace;
  if (!d.compared || d.cells.empty()) return "";
  // Rows: module paths in first-seen order; a module called twice in one
  // pass (a shared dropout) gets a row per call ("drop #2").
  std::vector<std::string> label(d.cells.size()), rows;
  std::vector<std::pair<int64_t, TracePhase>> columns;
  std::map<std::string, int> calls;
  std::pair<int64_t, TracePhase> current{-1, TracePhase::kForward};
  for (size_t i = 0; i < d.cells.size(); ++i) {
    const TraceCell& c = d.cells[i];
    std::pair<int64_t, TracePhase> col{c.step, c.phase};
    if (col != current) calls.clear(), current = col;
    int k = ++calls[c.module];
    label[i] = k == 1 ? c.module : c.module + " #" + std::to_string(k);
    if (std::find(rows.begin(), rows.end(), label[i]) == rows.end()) rows.push_back(label[i]);
    if (std::find(columns.begin(), columns.end(), col) == columns.end()) columns.push_back(col);
  }
  std::ostringstream o;
  o << "<h2>Module trace</h2>";
  if (d.first >= 0) o << "<p><b>First divergent module:</b> " << esc(d.summary) << "</p>";
  o << "<p>= identical bytes, " << (v.lane == Lane::kCrossStack ? "≈ bytes differ within tolerance, ≠ beyond tolerance"
                                                                  : "≠ bytes differ (this lane is exact)")
    << "; ■ the first divergence; · not recorded (no gradient flows out of the module)</p><table><tr><th>module</th>";
  for (const auto& [step, phase] : columns) o << "<th>step " << step << " " << trace_phase_name(phase) << "</th>";
  o << "</tr>";
  for (const auto& row : rows) {
    o << "<tr><td style=\"text-align:left\">" << esc(row) << "</td>";
    for (const auto& col : columns) {
      std::string cell = "<td>·</td>";
      for (size_t i = 0; i < d.cells.size(); ++i) {
        const TraceCell& c = d.cells[i];
        if (label[i] != row || c.step != col.first || c.phase != col.second) continue;
        const char* sym = c.state == 0 ? "=" : c.state == 1 ? "≈" : "≠";
        bool first = static_cast<int64_t>(i) == d.first;
        cell = std::string(first ? "<td class=bad style=\"background:#fdd\">■ " : c.state ? "<td class=bad>" : "<td class=ok>") +
               sym + "</td>";
      }
      o << cell;
    }
    o << "</tr>";
  }
  o << "</table>";
  return o.str();
}

}  // namespace

std::string render_html(const Verdict& v, const RunRecord& run, const RunRecord& golden,
                        const std::vector<std::string>& provenance) {
  std::ostringstream o;
  o << "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>lockstep: " << esc(v.smoke)
    << "</title><style>body{font-family:sans-serif;margin:1.5em;max-width:1200px}"
       ".ok{color:#2ca02c}.skip{color:#777}.bad{color:#d62728;font-weight:bold}table{border-collapse:collapse;font-size:12px}"
       "td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}.plots{display:flex;flex-wrap:wrap;gap:12px}"
       ".plot{border:1px solid #eee;padding:4px}.plot h3{font-size:13px;margin:2px}code{font-size:12px}"
       "</style></head><body>";
  o << "<h1>lockstep: " << esc(v.smoke) << " <span class=" << (v.passed() ? "ok>" + esc(verdict_headline(v)) : "bad>FAIL")
    << "</span> (exit " << to_int(v.exit_code()) << ")</h1>";
  if (!v.passed()) o << "<p><b>First divergence:</b> " << esc(v.first_divergence) << "</p>";
  if (!v.quote.empty()) {
    o << "<pre>";
    for (const auto& line : v.quote) o << esc(line) << "\n";
    o << "</pre>";
  }
  if (!v.lane_reason.empty()) o << "<p><b>Lane:</b> " << lane_name(v.lane) << " — " << esc(v.lane_reason) << "</p>";
  o << "<p>" << esc(v.subject_word) << ": <code>" << esc(v.run_label) << "</code><br>" << esc(v.reference_word)
    << ": <code>" << esc(v.golden_label) << "</code></p>";
  if (!provenance.empty()) {
    o << "<p><b>Provenance</b>";
    for (const auto& line : provenance) o << "<br>" << esc(line);
    o << "</p>";
  }
  if (!v.env_diffs.empty()) {
    o << "<h2>Environment differences</h2><table><tr><th>field</th><th>" << esc(v.reference_word) << "</th><th>"
      << esc(v.subject_word) << "</th></tr>";
    for (const auto& d : v.env_diffs)
      o << "<tr><td>" << (d.relevant ? "<b>" + esc(d.name) + "</b>" : esc(d.name)) << "</td><td>" << esc(d.golden)
        << "</td><td>" << esc(d.run) << "</td></tr>";
    o << "</table>";
  }
  if (!v.findings.empty()) {
    o << "<h2>Failures</h2><ul>";
    for (const auto& f : v.findings)
      o << "<li><b>[" << section_name(f.section) << "] " << esc(f.subject) << "</b>: " << esc(f.detail) << "</li>";
    o << "</ul>";
  }
  o << "<h2>Training series</h2><p>" << esc(v.reference_word) << " <span style=\"color:#1f77b4\">solid</span>, "
    << esc(v.subject_word) << " <span style=\"color:#ff7f0e\">dashed</span>, tolerance band grey</p><div class=plots>";
  for (const auto& r : v.results) {
    if (r.section != Section::kTrain) continue;
    auto g = golden.series.find(r.name);
    auto a = run.series.find(r.name);
    if (g == golden.series.end() || a == run.series.end()) continue;
    o << "<div class=plot><h3>" << esc(r.name) << " <span class=" << (r.failed ? "bad" : "ok") << ">" << r.failed
      << "/" << r.checked << " fail</span> <small>" << esc(r.rule) << "</small></h3>"
      << series_plots(r, g->second, a->second, "|" + v.subject_word + " - " + v.reference_word + "|") << "</div>";
  }
  o << "</div>" << trace_grid(v);
  o << "<h2>Batch probes (data-only pass)</h2>" << probe_table(run.probes, golden.probes, v);
  if (!v.lanes.empty()) {  // beside the golden comparison (docs/equivalence.md)
    o << "<h2>Equivalence lanes</h2><table><tr><th>lane</th><th>changes</th><th>held</th><th>result</th></tr>";
    for (const auto& l : v.lanes)
      o << "<tr><td>" << esc(l.name) << "</td><td>" << esc(l.change) << "</td><td>" << esc(l.rule) << "</td><td class="
        << (!l.judged ? "skip" : l.passed ? "ok" : "bad") << ">"
        << (!l.judged ? "not judged: " : l.passed ? "same: " : "differs: ") << esc(l.detail) << "</td></tr>";
    o << "</table>";
  }
  for (const auto& n : v.notes) o << "<p><i>note: " << esc(n) << "</i></p>";
  o << "</body></html>\n";
  return o.str();
}

}  // namespace lockstep
