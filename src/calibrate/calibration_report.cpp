#include "calibrate/calibration_report.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <sstream>

#include "core/atomic_file.h"
#include "core/error.h"
#include "core/json_edit.h"
#include "core/svg_chart.h"
#include "smoke/smoke_config.h"

namespace lockstep {

namespace {

std::string g3(double v) { return format_error(v); }

std::string percent(int a, int b) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0f %%", b ? 100.0 * a / b : 0.0);
  return buf;
}

// The configured rule of a key, for the "was" column.
Tolerance configured_rule(const Calibration& c, const Recommendation& r) {
  return r.probe ? c.configured.for_probe(r.key) : c.configured.for_series(r.key);
}

std::string axes_text(const Calibration& c) {
  std::string out;
  for (const auto& a : c.axes) {
    std::string vs;
    for (const auto& v : a.values) vs += (vs.empty() ? "" : ",") + v;
    out += (out.empty() ? "" : " x ") + a.name + "=" + vs;
  }
  return out.empty() ? "no axes" : out;
}

std::string detection_text(const Detection& d) {
  if (!d.measured) return "detection: " + d.why_not;
  std::string out = "detection: catches lr x (1 +- " + g3(d.catches) + ")";
  out += d.misses > 0 ? ", misses lr x (1 +- " + g3(d.misses) + ")" : " (the smallest change tried)";
  out += "; " + std::to_string(d.runs) + " runs";
  if (!d.caught_by.empty()) out += "\n  caught by " + d.caught_by;
  return out;
}

std::string false_alarm_text(const FalseAlarm& f) {
  if (f.runs == 0) return "false-alarm estimate: none (leave-one-out needs 3 runs or more)";
  std::string out = "false-alarm estimate: " + std::to_string(f.failed_runs) + " of " + std::to_string(f.runs) +
                    " held-out runs failed (" + std::to_string(f.failed_comparisons) + " of " +
                    std::to_string(f.comparisons) + " comparisons, " + percent(f.failed_comparisons, f.comparisons) +
                    "); 95 % upper bound on the per-run rate " + percent(static_cast<int>(std::round(f.upper95 * 1000)), 1000);
  if (!f.example.empty()) out += "\n  first: " + f.example;
  return out;
}

// One curve's spread per step (blue) against the bound its recommended
// rule allows (red), log10 scale: an SVG chart.
std::string spread_plot(const Calibration& c, const CurveSpread& s) {
  const SvgChart::Frame frame{360, 150, 40, 10, 20, 20};
  auto rec = c.recommended.find((s.probe ? "probes." : "") + s.key);
  std::vector<double> bound(s.steps.size(), 0);
  if (rec != c.recommended.end() && rec->second.measured) {
    const Tolerance& t = rec->second.tolerance;
    for (size_t i = 0; i < bound.size(); ++i)
      bound[i] = t.rule == Tolerance::Rule::kClose ? t.atol + t.rtol * std::fabs(s.mean[i]) : 0;
  }
  double lo = 1e300, hi = 0;
  for (size_t i = 0; i < s.steps.size(); ++i)
    for (double v : {s.abs_spread[i], bound[i]})
      if (v > 0) lo = std::min(lo, v), hi = std::max(hi, v);
  SvgChart chart(frame, "spread of " + s.name);
  chart.text(frame.left, 12, s.name, 12);
  if (hi == 0) {
    chart.text(frame.left, frame.height / 2, "bit-identical in every run", 11, "#2ca02c");
  } else {
    double l0 = std::log10(lo) - 0.1, l1 = std::log10(hi) + 0.1;
    if (l1 - l0 < 1) l0 = l1 - 1;
    chart.x_range(0, s.steps.size() > 1 ? static_cast<double>(s.steps.size() - 1) : 0);
    chart.y_range(l0, l1);
    for (int k = 0; k < 2; ++k) {
      const std::vector<double>& v = k ? bound : s.abs_spread;
      if (k && std::all_of(v.begin(), v.end(), [](double b) { return b == 0; })) continue;
      std::vector<SvgChart::Point> points;  // a zero at the bottom of the plot
      for (size_t i = 0; i < v.size(); ++i) points.push_back({static_cast<double>(i), v[i] > 0 ? std::log10(v[i]) : l0});
      chart.polyline(points, k ? "#d62728" : "#1f77b4", 1);
    }
    chart.text(2, 24, g3(std::pow(10, l1)), 10);
    chart.text(2, frame.height - frame.bottom, g3(std::pow(10, l0)), 10);
  }
  chart.text(frame.left, frame.height - 4,
             std::string(s.probe ? "batch" : "step") + " " + std::to_string(s.steps.front()) + " .. " +
                 std::to_string(s.steps.back()),
             10);
  return chart.finish();
}

}  // namespace

nlohmann::json tolerance_json(const Tolerance& t) {
  switch (t.rule) {
    case Tolerance::Rule::kExact:
      return {{"exact", true}};
    case Tolerance::Rule::kClose:
      return {{"atol", t.atol}, {"rtol", t.rtol}};
    case Tolerance::Rule::kUlp:
      return {{"ulp", t.max_ulp}};
    case Tolerance::Rule::kSigma:
      return {{"sigma", t.k}};
  }
  return nullptr;
}

std::string render_calibration_text(const Calibration& c) {
  std::ostringstream o;
  size_t here = 0;
  for (const auto& r : c.runs) here += r.point.count("runner") ? 0 : 1;
  o << "calibrate " << c.smoke << ": " << c.runs.size() << " runs (" << here << " here over " << axes_text(c) << ", "
    << c.repeats << " at each point; " << c.runs.size() - here << " from --records) on " << c.runners.size()
    << " runner(s); multiplier " << g3(c.rules.multiplier) << "\n";
  size_t w = 28;
  for (const auto& [id, r] : c.recommended) w = std::max(w, id.size() + 2);
  char line[512];
  std::snprintf(line, sizeof line, "%-*s %-10s %-10s %-13s %-30s %s\n", static_cast<int>(w), "metric", "spread",
                "rel", "driven by", "recommended", "configured");
  o << line;
  for (const auto& [id, r] : c.recommended) {
    double abs = r.abs_spread, rel = r.rel_spread;
    const std::string& driver = r.driver;
    std::string rec = r.measured ? r.tolerance.describe() : "(kept: " + r.because + ")";
    std::snprintf(line, sizeof line, "%-*s %-10s %-10s %-13s %-30s %s\n", static_cast<int>(w), id.c_str(),
                  r.measured ? g3(abs).c_str() : "-", r.measured ? g3(rel).c_str() : "-",
                  driver.empty() ? "-" : driver.c_str(), rec.c_str(), configured_rule(c, r).describe().c_str());
    o << line;
  }
  if (c.self_failed == 0)
    o << "the recommended rules pass every calibration run against " << (c.seeds_vary ? "the runs' mean" : "every other")
      << " (" << c.self_comparisons << " comparisons)\n";
  else
    o << "the recommended rules fail " << c.self_failed << " of " << c.self_comparisons
      << " comparisons among the calibration runs; first: " << c.self_example << "\n";
  if (c.configured_failed == 0 && c.looser > 0)
    o << "note: the configured rules already pass every calibration run; " << c.looser
      << " recommended rule(s) are looser (the floors: --rtol-floor " << g3(c.rules.rtol_floor) << ", --atol-floor "
      << g3(c.rules.atol_floor) << " are Megatron-LM's, for GPU lanes; lower them to keep a CPU lane tight)\n";
  else if (c.configured_failed > 0)
    o << "note: the configured rules fail " << c.configured_failed << " of " << c.self_comparisons
      << " of these comparisons: this smoke would cry wolf across these axes; first: " << c.configured_example << "\n";
  o << false_alarm_text(c.false_alarm) << "\n" << detection_text(c.detection) << "\n";
  if (c.seeds_vary)
    o << "note: sigma rules need a multi-seed golden: lockstep bless " << c.file << " --seeds ... --reason \"...\"\n";
  for (const auto& n : c.notes) o << "note: " << n << "\n";
  return o.str();
}

nlohmann::json calibration_json(const Calibration& c) {
  nlohmann::json j;
  j["smoke"] = c.smoke;
  j["config"] = c.file;
  j["date"] = c.date;
  j["axes"] = nlohmann::json::object();
  for (const auto& a : c.axes) j["axes"][a.name] = a.values;
  j["repeats"] = c.repeats;
  j["seeds_vary"] = c.seeds_vary;
  j["runners"] = c.runners;
  j["rules"] = {{"multiplier", c.rules.multiplier},
                {"rtol_floor", c.rules.rtol_floor},
                {"atol_floor", c.rules.atol_floor},
                {"sigma_floor", c.rules.sigma_floor}};
  j["runs"] = nlohmann::json::array();
  for (const auto& r : c.runs) j["runs"].push_back({{"label", r.label}, {"point", r.point}, {"record", r.source}});
  j["metrics"] = nlohmann::json::array();
  for (const auto& s : c.spreads) {
    nlohmann::json m = {{"name", s.name}, {"key", s.key}, {"probe", s.probe}};
    if (!s.skipped.empty()) {
      m["skipped"] = s.skipped;
    } else {
      m["bit_identical"] = s.bit_identical;
      m["max_abs"] = s.max_abs;
      m["max_rel"] = s.max_rel;
      m["max_z"] = s.max_z;
      m["worst_step"] = s.worst_step;
      m["worst_run"] = s.worst_run;
      m["driven_by"] = s.driver;
      m["abs_spread"] = s.abs_spread;
    }
    j["metrics"].push_back(m);
  }
  j["recommended"] = nlohmann::json::object();
  for (const auto& [id, r] : c.recommended) {
    nlohmann::json e = {{"key", r.key}, {"probe", r.probe}, {"because", r.because},
                        {"configured", tolerance_json(configured_rule(c, r))}};
    e["rule"] = r.measured ? tolerance_json(r.tolerance) : nlohmann::json(nullptr);
    j["recommended"][id] = e;
  }
  j["lockstep_report"] = "calibrate";
  j["self_check"] = {{"comparisons", c.self_comparisons}, {"failed", c.self_failed}, {"first", c.self_example},
                     {"configured_failed", c.configured_failed}, {"configured_first", c.configured_example},
                     {"looser_than_configured", c.looser}};
  const FalseAlarm& f = c.false_alarm;
  j["false_alarm"] = {{"runs", f.runs},
                      {"failed_runs", f.failed_runs},
                      {"comparisons", f.comparisons},
                      {"failed_comparisons", f.failed_comparisons},
                      {"upper95", f.upper95},
                      {"first", f.example}};
  const Detection& d = c.detection;
  j["detection"] = {{"measured", d.measured}, {"runs", d.runs}, {"tried", nlohmann::json::array()}};
  for (const auto& [fct, caught] : d.tried) j["detection"]["tried"].push_back({{"factor", fct}, {"caught", caught}});
  if (d.measured) {
    j["detection"]["catches"] = d.catches;
    j["detection"]["misses"] = d.misses;
    j["detection"]["caught_by"] = d.caught_by;
  } else {
    j["detection"]["why_not"] = d.why_not;
  }
  j["notes"] = c.notes;
  return j;
}

std::string render_calibration_html(const Calibration& c) {
  std::ostringstream o;
  auto esc = [](const std::string& s) { return xml_escape(s); };
  o << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>lockstep calibrate " << esc(c.smoke)
    << "</title><style>body{font:14px sans-serif;margin:2em}table{border-collapse:collapse}td,th{border:1px solid "
       "#ccc;padding:2px 6px;text-align:left}.plot{display:inline-block;margin:0 1em 1em 0}</style></head><body>\n";
  o << "<h1>calibrate " << esc(c.smoke) << "</h1>\n<pre>" << esc(render_calibration_text(c)) << "</pre>\n";
  o << "<h2>Spread per step against the recommended bound</h2>\n<p>Blue: the largest |x - mean| over the runs at "
       "each step; red: the bound atol + rtol*|mean| the recommended rule allows (log scale). Exact rules have no "
       "bound: any change fails.</p>\n";
  for (const auto& s : c.spreads)
    if (s.skipped.empty() && !s.steps.empty()) o << "<div class=\"plot\">" << spread_plot(c, s) << "</div>\n";
  o << "<h2>Runs</h2>\n<table><tr><th>run</th><th>record</th></tr>\n";
  for (const auto& r : c.runs) o << "<tr><td>" << esc(r.label) << "</td><td>" << esc(r.source) << "</td></tr>\n";
  o << "</table>\n</body></html>\n";
  return o.str();
}

nlohmann::json calibration_block(const Calibration& c) {
  nlohmann::json b;
  b["date"] = c.date;
  b["axes"] = nlohmann::json::object();
  for (const auto& a : c.axes) b["axes"][a.name] = a.values;
  b["repeats"] = c.repeats;
  b["runs"] = c.runs.size();
  b["runners"] = c.runners;
  b["multiplier"] = c.rules.multiplier;
  b["floors"] = {{"atol", c.rules.atol_floor}, {"rtol", c.rules.rtol_floor}, {"sigma", c.rules.sigma_floor}};
  b["false_alarm"] = {{"failed_runs", c.false_alarm.failed_runs}, {"runs", c.false_alarm.runs},
                      {"upper95", std::round(c.false_alarm.upper95 * 1000) / 1000}};
  if (c.detection.measured)
    b["detection"] = {{"catches_lr_factor", c.detection.catches}, {"misses_lr_factor", c.detection.misses}};
  else
    b["detection"] = {{"not_measured", c.detection.why_not}};
  return b;
}

void require_writable_config(const std::string& file) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_regular_file(fs::symlink_status(file, ec)))
    throw BadUsage(file + ": --write updates a regular file, and this is not one (a symbolic link?)");
  fs::perms mode = fs::status(file, ec).permissions();
  if (::access(file.c_str(), W_OK) != 0 || (mode & fs::perms::owner_write) == fs::perms::none)
    throw EnvironmentError(file + ": --write cannot update the config (read-only)");
}

void write_calibration_into_config(const Calibration& c) {
  namespace fs = std::filesystem;
  SmokeConfig before = load_smoke_config(c.file);
  std::string original = read_file(c.file);
  nlohmann::ordered_json doc = nlohmann::ordered_json::parse(original);
  nlohmann::ordered_json tol = doc.contains("tolerance") ? doc["tolerance"] : nlohmann::ordered_json::object();
  for (const auto& [id, r] : c.recommended) {
    if (!r.measured) continue;
    nlohmann::ordered_json& section = tol[r.probe ? "probes" : "series"];
    if (!section.is_object()) section = nlohmann::ordered_json::object();
    section[r.key] = nlohmann::ordered_json::parse(tolerance_json(r.tolerance).dump());
  }
  // Only the two values change: the rest of the file, its layout
  // included, stays as the team wrote it (a reviewable diff).
  std::string text = with_top_level_key(original, "tolerance", tol, c.file);
  text = with_top_level_key(text, "calibration", nlohmann::ordered_json::parse(calibration_block(c).dump()), c.file);

  std::error_code ec;
  require_writable_config(c.file);
  fs::perms mode = fs::status(c.file, ec).permissions();
  // Checked before it lands: a sibling file that must load with the same value hash.
  fs::path check = fs::path(c.file).parent_path() / ("." + fs::path(c.file).filename().string() + ".calibrate-check");
  write_file_atomically(check.string(), text);
  std::string problem;
  try {
    SmokeConfig after = load_smoke_config(check.string());
    if (after.values_hash != before.values_hash)
      problem = "the value hash would move (" + before.values_hash + " -> " + after.values_hash + ")";
  } catch (const Error& e) {
    problem = e.what();
  }
  fs::remove(check, ec);
  if (!problem.empty())
    throw EnvironmentError(c.file + ": --write left the config as it was: the calibrated config would not hold (" +
                           problem + ")");
  write_file_atomically(c.file, text);
  fs::permissions(c.file, mode, fs::perm_options::replace, ec);  // the file keeps its mode
}

}  // namespace lockstep
