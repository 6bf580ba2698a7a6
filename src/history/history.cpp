#include "history/history.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <map>
#include <functional>
#include <set>
#include <cstdio>
#include <iomanip>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/json_io.h"

namespace lockstep {

namespace {

namespace fs = std::filesystem;

const double kNaN = std::numeric_limits<double>::quiet_NaN();

// A commit's first 12 hex digits; "" when the run's git.commit was absent
// ("(absent: not a git repository ...)").
std::string short_commit(const std::string& c) { return c.empty() || c[0] == '(' ? "" : c.substr(0, 12); }

// A share of the tolerance: 0, or 3 significant digits (0.00104, 0.83, 12.5).
std::string use_text(double u) {
  if (std::isnan(u)) return "-";
  if (std::isinf(u)) return "beyond";
  if (u == 0) return "0";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", u);
  return buf;
}

// "last 0.3 of tolerance", "last beyond tolerance (not finite)", "last not
// compared".
std::string last_use_words(double u) {
  if (std::isnan(u)) return "last not compared";
  if (std::isinf(u)) return "last beyond tolerance (not finite)";
  return "last " + use_text(u) + " of tolerance";
}

// The class of one metric from its uses per night (NaN: not compared).
void classify(MetricHistory& m) {
  std::vector<double> u;
  for (double x : m.use)
    if (!std::isnan(x)) u.push_back(x);
  size_t failures = static_cast<size_t>(std::count_if(u.begin(), u.end(), [](double x) { return x > 1; }));
  size_t tail = 0;  // failures at the end, in a row
  while (tail < u.size() && u[u.size() - 1 - tail] > 1) ++tail;
  if (tail >= kRegressionNights) {
    m.trend = Trend::kRegression;
    m.trend_reason = "failed the last " + std::to_string(tail) + " nights in a row";
  } else if (failures > 0) {
    m.trend = Trend::kSuspicious;
    m.trend_reason = std::to_string(failures) + " failed night" + (failures == 1 ? "" : "s") +
                     (tail == 1 ? ", the last one alone" : ", not at the end");
  } else if (u.size() < 3) {
    m.trend = Trend::kInsufficientData;
    m.trend_reason = std::to_string(u.size()) + " compared night" + (u.size() == 1 ? "" : "s") + " (3 needed)";
  } else {
    // Drifting: over the last n nights the use never falls, and rises at
    // least twice (a night that ties the one before does not end a drift).
    size_t n = std::min(kDriftNights, u.size());
    bool never_falls = true;
    size_t rises = 0;
    for (size_t i = u.size() - n + 1; i < u.size(); ++i) {
      never_falls = never_falls && u[i] >= u[i - 1];
      rises += u[i] > u[i - 1];
    }
    bool rising = never_falls && rises >= 2;
    std::string seen;
    for (size_t i = u.size() - n; i < u.size(); ++i) seen += (seen.empty() ? "" : ", ") + use_text(u[i]);
    m.trend = rising ? Trend::kDrifting : Trend::kSteady;
    m.trend_reason = rising ? "used " + seen + " of its tolerance over the last " + std::to_string(n) + " nights"
                            : "within tolerance, not rising (last " + std::to_string(n) + ": " + seen + ")";
  }
}

// An input field of a ledger line's fingerprint (the record tags them;
// the line keeps the value only): the config, the data, the TorchScript
// model, a trainer's declared data files.
bool input_field(const std::string& key) {
  return key == "config.values_xxh3" || key == "data.file_xxh3" || key == "model.torchscript_xxh3" ||
         key == "trainer.inputs_xxh3" || key.rfind("trainer.input.", 0) == 0;
}

// "prefix key: before → after" for each key of the two maps whose values
// differ ("(absent)" on the side without it). Keys and values come from
// ledger lines (a config's strings, CI variables): control characters are
// escaped (printable_message) so a line never rewrites the terminal or
// forges a line of a CI log.
void diff_maps(const std::map<std::string, std::string>& before, const std::map<std::string, std::string>& after,
               const std::string& prefix, const std::function<void(const std::string&, std::string)>& put) {
  std::set<std::string> keys;
  for (const auto& [k, v] : before) keys.insert(k);
  for (const auto& [k, v] : after) keys.insert(k);
  for (const auto& k : keys) {
    auto b = before.find(k), a = after.find(k);
    std::string bv = b == before.end() ? "(absent)" : b->second;
    std::string av = a == after.end() ? "(absent)" : a->second;
    if (bv != av)
      put(k, prefix + printable_message(k, false) + ": " + printable_message(bv, false) + " → " +
                 printable_message(av, false));
  }
}

NightChange change_between(const LedgerEntry& before, const LedgerEntry& after, size_t night) {
  NightChange c;
  c.night = night;
  // A config edit is named by its fields when both nights kept them.
  const bool name_config = !before.config.empty() && !after.config.empty();
  if (name_config)
    diff_maps(before.config, after.config, "config ", [&](const std::string&, std::string line) {
      c.inputs.push_back(std::move(line));
    });
  diff_maps(before.fingerprint, after.fingerprint, "", [&](const std::string& key, std::string line) {
    if (!input_field(key)) c.fingerprint.push_back(std::move(line));
    else if (!(name_config && key == "config.values_xxh3" && !c.inputs.empty())) c.inputs.push_back(std::move(line));
  });
  if (before.commit != after.commit && !short_commit(before.commit).empty() && !short_commit(after.commit).empty())
    c.commits = short_commit(before.commit) + ".." + short_commit(after.commit);
  c.golden_changed = !before.golden.empty() && !after.golden.empty() && before.golden != after.golden;
  if (before.ci.runner != after.ci.runner)
    c.runner = (before.ci.runner.empty() ? "(none)" : printable_message(before.ci.runner, false)) + " → " +
               (after.ci.runner.empty() ? "(none)" : printable_message(after.ci.runner, false));
  c.platform_changed = before.platform != after.platform;
  if (c.platform_changed) c.platform = before.platform + " → " + after.platform;
  for (const auto& [name, s] : after.series) {
    auto b = before.series.find(name);
    if (b == before.series.end() || b->second.xxh3 != s.xxh3) c.metrics.push_back(name);
    if (b != before.series.end() && !b->second.rule.empty() && !s.rule.empty() && b->second.rule != s.rule)
      c.rules.push_back(name + ": " + b->second.rule + " → " + s.rule);
  }
  return c;
}

// "night 20 (2026-11-20, commit abc123)".
std::string night_label(const SmokeHistory& h, size_t night) {
  const LedgerEntry& e = h.entries[night];
  return "night " + std::to_string(night + 1) + " (" + e.time_utc.substr(0, 10) +
         (short_commit(e.commit).empty() ? "" : ", commit " + short_commit(e.commit)) + ")";
}

std::string what_else(const NightChange& c) {
  std::string out;
  auto add = [&](const std::string& s) { out += (out.empty() ? "" : "; ") + s; };
  if (!c.inputs.empty()) {
    std::string f;
    for (size_t i = 0; i < c.inputs.size() && i < 4; ++i) f += (i ? ", " : "") + c.inputs[i];
    if (c.inputs.size() > 4) f += ", and " + std::to_string(c.inputs.size() - 4) + " more";
    add("inputs: " + f);
  }
  if (!c.fingerprint.empty()) {
    std::string f;
    for (size_t i = 0; i < c.fingerprint.size() && i < 4; ++i) f += (i ? ", " : "") + c.fingerprint[i];
    if (c.fingerprint.size() > 4) f += ", and " + std::to_string(c.fingerprint.size() - 4) + " more";
    add("stack: " + f);
  }
  if (!c.commits.empty()) add("commits " + c.commits);
  if (c.golden_changed) add("another golden (re-blessed)");
  if (!c.runner.empty()) add("runner " + c.runner);
  if (c.platform_changed) add("platform " + c.platform);
  if (!c.rules.empty()) add("tolerance " + c.rules.front() + (c.rules.size() > 1 ? ", and " + std::to_string(c.rules.size() - 1) + " more" : ""));
  return out.empty() ? "nothing else recorded changed" : out;
}

}  // namespace

const char* trend_name(Trend trend) {
  switch (trend) {
    case Trend::kRegression: return "regression";
    case Trend::kSuspicious: return "suspicious";
    case Trend::kDrifting: return "drifting";
    case Trend::kSteady: return "steady";
    case Trend::kInsufficientData: return "insufficient data";
  }
  return "steady";
}

SmokeHistory analyse_history(std::string smoke, std::string file, std::vector<LedgerEntry> entries) {
  SmokeHistory h;
  h.smoke = std::move(smoke);
  h.file = std::move(file);
  // In ledger order: the order the nights were appended, which the chain
  // holds, not their `time` (one runner's clock ahead would otherwise put
  // its night last and hide the nights after it).
  h.entries = std::move(entries);
  std::set<std::string> names;
  for (const auto& e : h.entries)
    for (const auto& [name, s] : e.series) names.insert(name);
  for (const auto& name : names) {
    MetricHistory m;
    m.name = name;
    for (const auto& e : h.entries) {
      auto s = e.series.find(name);
      m.use.push_back(s == e.series.end() ? kNaN : s->second.use);
    }
    classify(m);
    h.metrics.push_back(std::move(m));
  }
  MetricHistory verdicts;  // a night's verdict as a use: 0 passed, 2 did not
  for (const auto& e : h.entries)
    verdicts.use.push_back(e.verdict == "not compared" ? kNaN : e.exit_code == 0 ? 0.0 : 2.0);
  classify(verdicts);
  h.verdicts = verdicts.trend;
  h.verdicts_reason = verdicts.trend == Trend::kDrifting || verdicts.trend == Trend::kSteady
                          ? "passed every night"
                          : verdicts.trend_reason;
  // The last night of each stack (platform and relevant fingerprint).
  std::map<std::string, size_t> last_of_stack;
  auto stack_of = [](const LedgerEntry& e) {
    std::string key = e.platform;
    for (const auto& [k, v] : e.fingerprint) key += "\n" + k + "=" + v;
    return key;
  };
  if (!h.entries.empty()) last_of_stack[stack_of(h.entries[0])] = 0;
  for (size_t i = 1; i < h.entries.size(); ++i) {
    NightChange c = change_between(h.entries[i - 1], h.entries[i], i);
    std::string stack = stack_of(h.entries[i]);
    auto same = last_of_stack.find(stack);
    for (const auto& name : c.metrics) {
      if (same == last_of_stack.end()) continue;  // a stack not seen before explains it
      const LedgerEntry& before = h.entries[same->second];
      auto b = before.series.find(name);
      if (b != before.series.end() && b->second.xxh3 == h.entries[i].series.at(name).xxh3) continue;
      c.unexplained.push_back(name);
      for (auto& m : h.metrics)
        if (m.name == name && m.first_change < 0) m.first_change = static_cast<long>(i);
    }
    last_of_stack[stack] = i;
    if (!c.metrics.empty() || !c.fingerprint.empty() || !c.inputs.empty() || c.golden_changed || c.platform_changed || !c.rules.empty())
      h.changes.push_back(std::move(c));
  }
  return h;
}

std::vector<SmokeHistory> load_history(const std::string& dir, const std::string& smoke, bool skip_bad) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw BadInput(dir, "", "a history folder (of <smoke>.jsonl ledgers)");
  std::vector<std::string> files;
  for (const std::string& file : ledger_files(dir))
    if (smoke.empty() || fs::path(file).filename() == smoke + ".jsonl") files.push_back(file);
  if (files.empty())
    throw BadInput(dir, "", smoke.empty() ? "a ledger (<smoke>.jsonl): the folder has none"
                                          : "the ledger " + smoke + ".jsonl: the folder has none");
  std::vector<SmokeHistory> out;
  for (const auto& file : files) {
    LedgerRead r = read_ledger(file, skip_bad);  // each entry of the smoke the file is named for
    std::string name = fs::path(file).stem().string();
    std::map<std::string, std::vector<LedgerEntry>> by_stack;  // "" (unlabeled) first
    for (auto& e : r.entries) by_stack[e.stack].push_back(std::move(e));
    if (by_stack.empty()) by_stack[""];
    bool first = true;
    for (auto& [stack, entries] : by_stack) {
      SmokeHistory h = analyse_history(name, file, std::move(entries));
      h.stack = stack;
      if (first) h.skipped = std::move(r.skipped);  // said once per ledger
      first = false;
      out.push_back(std::move(h));
    }
  }
  return out;
}

std::string history_title(const SmokeHistory& h) {
  return h.stack.empty() ? h.smoke : h.smoke + " (stack " + h.stack + ")";
}

std::string render_history_text(const std::vector<SmokeHistory>& history) {
  std::ostringstream o;
  for (const SmokeHistory& h : history) {
    o << "history: " << history_title(h) << ": " << h.entries.size() << " night" << (h.entries.size() == 1 ? "" : "s");
    if (!h.entries.empty())
      o << ", " << h.entries.front().time_utc.substr(0, 10) << " .. " << h.entries.back().time_utc.substr(0, 10)
        << ", last verdict " << h.entries.back().verdict;
    o << " (" << h.file << ")\n";
    o << "  verdicts: " << trend_name(h.verdicts) << " (" << h.verdicts_reason << ")\n";
    for (const auto& s : h.skipped) o << "  skipped: " << s << "\n";
    size_t width = 6;
    for (const auto& m : h.metrics) width = std::max(width, m.name.size());
    for (const auto& m : h.metrics) {
      double last = kNaN;
      for (double u : m.use)
        if (!std::isnan(u)) last = u;
      o << "  " << std::left << std::setw(static_cast<int>(width + 1)) << m.name << std::setw(18) << trend_name(m.trend)
        << last_use_words(last) << "; " << m.trend_reason << "\n";
      if (m.first_change > 0) {
        const NightChange* c = nullptr;
        for (const auto& x : h.changes)
          if (x.night == static_cast<size_t>(m.first_change)) c = &x;
        o << "  " << std::string(width + 1, ' ') << "first changed on a stack seen before: "
          << night_label(h, static_cast<size_t>(m.first_change)) << "; that night: " << (c ? what_else(*c) : "") << "\n";
      } else if (h.entries.size() > 1) {
        bool moved = false;
        for (const auto& c : h.changes) moved = moved || std::count(c.metrics.begin(), c.metrics.end(), m.name) > 0;
        o << "  " << std::string(width + 1, ' ')
          << (moved ? "changed only with the stack" : "bit-identical every night") << "\n";
      }
    }
    if (!h.changes.empty()) {
      o << "  change points (" << h.changes.size() << "):\n";
      size_t shown = 0;
      for (const auto& c : h.changes) {
        if (++shown > 40) {
          o << "    ... and " << h.changes.size() - 40 << " more (--json lists them all)\n";
          break;
        }
        std::string metrics, unexplained;
        for (const auto& m : c.metrics) metrics += (metrics.empty() ? "" : ", ") + m;
        for (const auto& m : c.unexplained) unexplained += (unexplained.empty() ? "" : ", ") + m;
        o << "    " << night_label(h, c.night) << ": " << (metrics.empty() ? "values unchanged" : "values of " + metrics)
          << (unexplained.empty() ? "" : " (" + unexplained + " unlike the last night on this stack)") << "; "
          << what_else(c) << "\n";
      }
    }
  }
  return o.str();
}

std::string render_history_json(const std::vector<SmokeHistory>& history) {
  nlohmann::json smokes = nlohmann::json::array();
  for (const SmokeHistory& h : history) {
    nlohmann::json nights = nlohmann::json::array();
    for (const auto& e : h.entries)
      nights.push_back({{"time", e.time_utc}, {"commit", e.commit}, {"verdict", e.verdict}, {"exit", e.exit_code},
                        {"lane", e.lane}, {"golden", e.golden}, {"runner", e.ci.runner}, {"job_url", e.ci.job_url},
                        {"report_url", e.ci.report_url}, {"run_id", e.run_id}});
    nlohmann::json metrics = nlohmann::json::array();
    for (const auto& m : h.metrics) {
      nlohmann::json use = nlohmann::json::array();
      for (double u : m.use) use.push_back(std::isnan(u) ? nlohmann::json(nullptr) : double_to_json(u));
      metrics.push_back({{"name", m.name}, {"class", trend_name(m.trend)}, {"reason", m.trend_reason},
                         {"use", use}, {"first_change", m.first_change < 0 ? nlohmann::json(nullptr) : nlohmann::json(m.first_change)}});
    }
    nlohmann::json changes = nlohmann::json::array();
    for (const auto& c : h.changes)
      changes.push_back({{"night", c.night}, {"metrics", c.metrics}, {"unexplained", c.unexplained},
                         {"fingerprint", c.fingerprint}, {"inputs", c.inputs}, {"rules", c.rules}, {"platform", c.platform},
                         {"commits", c.commits}, {"golden_changed", c.golden_changed}, {"runner", c.runner},
                         {"platform_changed", c.platform_changed}});
    smokes.push_back({{"smoke", h.smoke}, {"stack", h.stack}, {"ledger", h.file}, {"verdicts", trend_name(h.verdicts)},
                      {"verdicts_reason", h.verdicts_reason}, {"nights", nights}, {"metrics", metrics},
                      {"changes", changes}, {"skipped", h.skipped}});
  }
  return pretty_dump(nlohmann::json{{"lockstep_report", "history"}, {"smokes", smokes}});
}

}  // namespace lockstep
