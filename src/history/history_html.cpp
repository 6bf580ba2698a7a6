// render_history_html (history/history.h): one page, no script, no network.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "core/svg_chart.h"
#include "history/history.h"

namespace lockstep {

namespace {

std::string esc(const std::string& s) { return xml_escape(s); }

// A ledger's CI link as a page may follow it: http(s) only (a
// "javascript:" or "data:" URL from LOCKSTEP_REPORT_URL would run in the
// page); "" for anything else, which is then shown as no link.
std::string safe_link(const std::string& url) {
  std::string lower;
  for (char c : url.substr(0, 8)) lower += static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  return lower.rfind("https://", 0) == 0 || lower.rfind("http://", 0) == 0 ? url : "";
}

std::string use_label(double u) {
  if (std::isnan(u)) return "not compared";
  if (std::isinf(u)) return "beyond any tolerance";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", u);
  return std::string(buf) + " of its tolerance";
}

// The trend plot of one metric: the use per night on a logarithmic scale
// (log10(1 + 99 u)), so a drift at a hundredth of the tolerance and a
// failing night at 40 times it both show, none clipped (a night beyond any
// tolerance, not finite, sits at the top); the tolerance line at 1, ticks
// at 0.01, 0.1, 1 and the top, night numbers below; a marker where the
// stack or the golden changed; a circle per night with its commit and
// verdict as the hover text (an SVG <title>).
std::string trend_plot(const SmokeHistory& h, const MetricHistory& m) {
  const SvgChart::Frame frame{560, 150, 36, 8, 8, 18};
  double highest = 1.5;
  for (double u : m.use)
    if (std::isfinite(u)) highest = std::max(highest, u);
  const double top = std::min(highest * 1.1, 1e6);
  auto f = [top](double u) { return std::log10(1 + 99 * (std::isinf(u) ? top : std::min(u, top))); };
  size_t n = h.entries.size();
  SvgChart chart(frame, history_title(h) + " " + m.name + ": share of the tolerance used per night", "trend");
  chart.x_range(0, n <= 1 ? 0 : static_cast<double>(n - 1));
  chart.y_range(0, f(top));
  chart.plot_area("#fafafa", "#ddd");
  chart.hline(f(1), "#d62728", "4 3");
  char top_text[32];
  std::snprintf(top_text, sizeof top_text, "%.3g", top);
  for (const auto& [u, text] : {std::pair<double, std::string>{0, "0"}, {0.01, "0.01"}, {0.1, "0.1"}, {1, "tol 1"},
                                {top, top_text}})
    chart.text(2, chart.py(f(u)) + 3, text, 9);
  // Night numbers: the first, the last and about five between.
  size_t every = std::max<size_t>(1, (n + 5) / 6);
  for (size_t i = 0; i < n; ++i)
    if (i % every == 0 || i + 1 == n)
      chart.text(chart.px(static_cast<double>(i)), frame.height - 5, std::to_string(i + 1), 9, "", "middle");
  // The nights the stack (grey) or the golden (purple) changed, one path
  // each; what changed is in the change-point table.
  std::vector<double> stack, golden;
  for (const NightChange& c : h.changes) {
    if (c.golden_changed) golden.push_back(static_cast<double>(c.night));
    else if (!c.fingerprint.empty() || !c.inputs.empty() || c.platform_changed) stack.push_back(static_cast<double>(c.night));
  }
  chart.vlines(stack, "#7f7f7f", 1);
  chart.vlines(golden, "#9467bd", 1.5);
  std::vector<SvgChart::Point> points;
  for (size_t i = 0; i < n; ++i)
    if (!std::isnan(m.use[i])) points.push_back({static_cast<double>(i), f(m.use[i])});
  chart.polyline(points, "#1f77b4");
  for (size_t i = 0; i < n; ++i) {
    if (std::isnan(m.use[i])) continue;
    const LedgerEntry& e = h.entries[i];
    bool failed = m.use[i] > 1;
    // Compact: a year of nights of every metric stays a few MB.
    chart.circle({static_cast<double>(i), f(m.use[i])}, failed ? 3 : 2, failed ? "f" : "",
                 "night " + std::to_string(i + 1) + " " + e.time_utc.substr(0, 10) + " " +
                     (e.commit.empty() || e.commit[0] == '(' ? "" : e.commit.substr(0, 10) + " ") + e.verdict + ": " +
                     use_label(m.use[i]));
  }
  return chart.finish();
}

}  // namespace

std::string render_history_html(const std::vector<SmokeHistory>& history) {
  std::ostringstream o;
  o << "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>lockstep history</title><style>"
       "body{font-family:sans-serif;margin:1.5em;max-width:1250px}table{border-collapse:collapse;font-size:12px}"
       "td,th{border:1px solid #ccc;padding:2px 6px;text-align:left;vertical-align:top}.plots{display:flex;"
       "flex-wrap:wrap;gap:12px}.plot{border:1px solid #eee;padding:4px}.plot h3{font-size:13px;margin:2px}"
       ".regression,.suspicious{color:#d62728;font-weight:bold}.drifting{color:#ff7f0e;font-weight:bold}"
       ".steady{color:#2ca02c}svg.trend circle{fill:#1f77b4}svg.trend circle.f{fill:#d62728}</style></head><body><h1>lockstep: nightly history</h1>"
       "<p>Each plot: the share of its tolerance a metric used against the golden, night by night (1 is the "
       "tolerance; above it fails). Grey lines: an input or the stack changed; purple: the golden was re-blessed. Hover a "
       "night for its commit and verdict.</p>";
  for (const SmokeHistory& h : history) {
    o << "<h2 id=\"" << esc(h.stack.empty() ? h.smoke : h.smoke + "@" + h.stack) << "\">" << esc(history_title(h)) << "</h2><p>" << h.entries.size() << " nights";
    if (!h.entries.empty())
      o << ", " << esc(h.entries.front().time_utc.substr(0, 10)) << " to " << esc(h.entries.back().time_utc.substr(0, 10))
        << "; last verdict " << esc(h.entries.back().verdict);
    o << ". Ledger <code>" << esc(h.file) << "</code>. Verdicts: <span class=\""
      << (h.verdicts == Trend::kInsufficientData ? "steady" : trend_name(h.verdicts)) << "\">" << trend_name(h.verdicts)
      << "</span> (" << esc(h.verdicts_reason) << ").</p>";
    for (const auto& s : h.skipped) o << "<p>skipped: " << esc(s) << "</p>";
    o << "<div class=plots>";
    for (const MetricHistory& m : h.metrics)
      o << "<div class=plot><h3>" << esc(m.name) << " <span class=\"" << (m.trend == Trend::kInsufficientData ? "steady" : trend_name(m.trend))
        << "\">" << trend_name(m.trend) << "</span></h3><div style=\"font-size:11px\">" << esc(m.trend_reason)
        << "</div>" << trend_plot(h, m) << "</div>";
    o << "</div>";
    std::string reports;
    for (size_t i = 0; i < h.entries.size(); ++i)
      if (!safe_link(h.entries[i].ci.report_url).empty())
        reports += "<a href=\"" + esc(h.entries[i].ci.report_url) + "\">" + std::to_string(i + 1) + "</a> ";
    if (!reports.empty()) o << "<p>Reports, night by night: " << reports << "</p>";
    o << "<h3>Change points</h3>";
    if (h.changes.empty()) {
      o << "<p>The values and the stack were the same every night.</p>";
    } else {
      o << "<table class=changes><tr><th>night</th><th>date</th><th>commit</th><th>values changed</th><th>inputs and stack</th>"
           "<th>commits since</th><th>golden</th><th>runner</th><th>report</th></tr>";
      // Every change the stack does not explain and every re-bless; of the
      // rest (stack changes, a lane that alternates runners), the last 100.
      size_t left_out = 0;
      for (size_t k = 0; k < h.changes.size(); ++k) {
        const NightChange& c = h.changes[k];
        if (c.unexplained.empty() && !c.golden_changed && k + 100 < h.changes.size()) {
          ++left_out;
          continue;
        }
        const LedgerEntry& e = h.entries[c.night];
        std::string metrics, stack;
        for (const auto& m : c.metrics)
          metrics += (metrics.empty() ? "" : ", ") + m +
                     (std::count(c.unexplained.begin(), c.unexplained.end(), m) ? " (on a stack seen before)" : "");
        for (const auto& f : c.inputs) stack += (stack.empty() ? "" : "<br>") + esc("input " + f);
        for (const auto& f : c.fingerprint) stack += (stack.empty() ? "" : "<br>") + esc(f);
        std::string link = !safe_link(e.ci.report_url).empty() ? e.ci.report_url : safe_link(e.ci.job_url);
        o << "<tr><td>" << c.night + 1 << "</td><td>" << esc(e.time_utc.substr(0, 10)) << "</td><td><code>"
          << esc(e.commit.empty() || e.commit[0] == '(' ? "" : e.commit.substr(0, 12)) << "</code></td><td>" << esc(metrics.empty() ? "(none)" : metrics) << "</td><td>"
          << (stack.empty() ? "(same)" : stack) << "</td><td>" << esc(c.commits) << "</td><td>"
          << (c.golden_changed ? "re-blessed" : "same") << "</td><td>" << esc(c.runner) << "</td><td>"
          << (link.empty() ? "" : "<a href=\"" + esc(link) + "\">report</a>") << "</td></tr>";
      }
      o << "</table>";
      if (left_out > 0)
        o << "<p>" << left_out << " earlier nights whose changes the stack explains are not listed (<code>lockstep "
          << "history --json</code> has them all).</p>";
    }
  }
  o << "</body></html>\n";
  return o.str();
}

}  // namespace lockstep
