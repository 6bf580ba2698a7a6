#include "history/ledger.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>
#include <set>
#include <utility>

#include "core/atomic_file.h"
#include "core/directory_lock.h"
#include "core/error.h"
#include "core/hash.h"
#include "core/json_io.h"
#include "record/platform_key.h"

namespace lockstep {

namespace {

namespace fs = std::filesystem;

const double kNaN = std::numeric_limits<double>::quiet_NaN();

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

const char* verdict_word(ExitCode code) {
  switch (code) {
    case ExitCode::kPass: return "pass";
    case ExitCode::kRegression: return "fail";
    case ExitCode::kNondeterministic: return "nondeterministic";
    case ExitCode::kBadInput: return "bad-input";
    case ExitCode::kEnvironment: return "environment";
  }
  return "fail";
}

double median(std::vector<double> v) {
  if (v.empty()) return kNaN;
  size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid), v.end());
  double hi = v[mid];
  if (v.size() % 2) return hi;
  double lo = *std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid));
  return (lo + hi) / 2;
}

// kLedgerPoints evenly spaced indices of n values, first and last included.
std::vector<size_t> kept_indices(size_t n) {
  std::vector<size_t> out;
  if (n <= kLedgerPoints) {
    for (size_t i = 0; i < n; ++i) out.push_back(i);
    return out;
  }
  for (size_t k = 0; k < kLedgerPoints; ++k)
    out.push_back(static_cast<size_t>(std::llround(static_cast<double>(k) * static_cast<double>(n - 1) /
                                                   static_cast<double>(kLedgerPoints - 1))));
  return out;
}


nlohmann::json number_or_null(double v) { return std::isnan(v) ? nlohmann::json(nullptr) : double_to_json(v); }

}  // namespace

CiFacts ci_facts_from_environment() {
  CiFacts ci;
  ci.pipeline = env("CI_PIPELINE_ID");
  ci.job = env("CI_JOB_ID");
  ci.job_url = env("CI_JOB_URL");
  ci.runner = env("CI_RUNNER_DESCRIPTION");
  ci.report_url = env("LOCKSTEP_REPORT_URL");
  return ci;
}

namespace {

// XXH3-128 of every step (int64) then every value (float64), as the
// little-endian bytes the host holds (as the sidecar).
// Every NaN hashes as the one quiet NaN: a NaN's sign and payload do not
// survive a ledger line ("nan"), and the hash must be checkable from it.
std::string points_hash(const std::vector<int64_t>& steps, const std::vector<double>& values) {
  std::string bytes(steps.size() * 8 + values.size() * 8, '\0');
  std::memcpy(bytes.data(), steps.data(), steps.size() * 8);
  const double quiet_nan = std::numeric_limits<double>::quiet_NaN();
  for (size_t i = 0; i < values.size(); ++i)
    std::memcpy(bytes.data() + steps.size() * 8 + i * 8, std::isnan(values[i]) ? &quiet_nan : &values[i], 8);
  return xxh3_128_hex(bytes.data(), bytes.size());
}

}  // namespace

std::string series_content_hash(const Series& series) { return points_hash(step_numbers(series), series.values); }

LedgerEntry ledger_entry(const RunRecord& run, const Verdict* verdict, const std::string& golden_hash,
                         const CiFacts& ci, const std::string& time_utc, const std::string& instance) {
  LedgerEntry e;
  std::string canon = canonical_dump(to_json(run));
  e.record_xxh3 = xxh3_128_hex(canon.data(), canon.size());
  if (!instance.empty()) canon += "\n" + instance;
  e.run_id = xxh3_128_hex(canon.data(), canon.size());
  e.time_utc = time_utc;
  e.smoke = run.smoke;
  e.platform = run.platform;
  // A value longer than kLedgerConfigValue bytes (a path, a forged or
  // runaway fingerprint value) is kept as its hash: a line stays bounded
  // whatever the record holds.
  auto bounded = [](const std::string& s) { return s.size() <= kLedgerConfigValue ? s : "xxh3 " + hex64(xxh3_64(s)); };
  e.stack = bounded(run.stack);
  auto fact = [&](const char* key) {
    auto it = run.fingerprint.find(key);
    return it == run.fingerprint.end() ? std::string() : bounded(it->second.value);
  };
  e.commit = fact("git.commit");
  e.branch = fact("git.branch");
  e.ci = ci;
  for (const auto& [key, field] : run.fingerprint)
    if (field.relevant || field.input) e.fingerprint[bounded(key)] = bounded(field.value);
  for (const auto& [key, value] : run.config) {
    if (e.config.size() >= kLedgerConfigFields) break;
    e.config[key.empty() ? "(empty)" : bounded(key)] = bounded(value);
  }
  e.verdict = verdict ? verdict_word(verdict->exit_code()) : "not compared";
  e.exit_code = verdict ? to_int(verdict->exit_code()) : 0;
  e.lane = verdict && verdict->lane != Lane::kNone ? lane_name(verdict->lane) : "";
  e.golden = verdict ? golden_hash : "";
  std::map<std::string, const SeriesResult*> results;
  if (verdict)
    for (const SeriesResult& r : verdict->results)
      if (r.section == Section::kTrain) results[r.name] = &r;
  for (const auto& [name, s] : run.series) {
    if (e.series.size() >= kLedgerSeries) break;
    LedgerSeries ls;
    std::vector<int64_t> steps = step_numbers(s);
    for (size_t i : kept_indices(s.values.size())) {
      ls.steps.push_back(steps[i]);
      ls.values.push_back(s.values[i]);
    }
    ls.count = s.values.size();
    ls.xxh3 = series_content_hash(s);
    auto r = results.find(name);
    ls.use = r == results.end() ? kNaN : r->second->max_use;
    ls.rule = r == results.end() ? "" : r->second->rule;
    e.series.emplace(name, std::move(ls));
  }
  for (const BatchProbe& p : run.probes) {
    if (e.probes.size() >= kLedgerProbes) break;
    e.probes.push_back(p.inputs.xxh3_128);
  }
  e.step_time_median_s = median(run.resources.step_time_s);
  e.peak_rss_bytes = run.resources.peak_rss_bytes;
  return e;
}

LedgerEntry stopped_entry(const std::string& smoke, const Verdict& verdict, const CiFacts& ci,
                          const std::string& time_utc, const std::string& instance) {
  LedgerEntry e;
  std::string id = smoke + "\n" + verdict.first_divergence + "\n" + instance;
  e.run_id = xxh3_128_hex(id.data(), id.size());
  e.time_utc = time_utc;
  e.smoke = smoke;
  e.ci = ci;
  e.verdict = verdict_word(verdict.exit_code());
  e.exit_code = to_int(verdict.exit_code());
  e.step_time_median_s = kNaN;
  return e;
}

bool is_ledger_smoke_name(const std::string& smoke) {
  if (smoke.empty() || smoke.size() > 100 || smoke[0] == '.') return false;
  return smoke.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") == std::string::npos;
}

std::string ledger_path(const std::string& dir, const std::string& smoke) {
  if (!is_ledger_smoke_name(smoke))
    throw BadInput(dir, "smoke", "a smoke name of 1 to 100 letters, digits, '.', '_' and '-', not starting with '.' "
                                 "(the ledger's file name), got \"" + smoke + "\"");
  return (fs::path(dir) / (smoke + ".jsonl")).string();
}

bool is_ledger_file_name(const std::string& name) {
  return name.size() > 6 && name.compare(name.size() - 6, 6, ".jsonl") == 0 && name[0] != '.';
}

std::vector<std::string> ledger_files(const std::string& dir) {
  std::vector<std::string> files;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::string name = it->path().filename().string();
    if (is_ledger_file_name(name)) files.push_back(it->path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::string ledger_line(const LedgerEntry& e) {
  nlohmann::json series = nlohmann::json::object();
  for (const auto& [name, s] : e.series) {
    nlohmann::json values = nlohmann::json::array();
    for (double v : s.values) values.push_back(double_to_json(v));
    series[name] = {{"steps", s.steps}, {"values", values}, {"count", s.count}, {"xxh3", s.xxh3},
                    {"use", number_or_null(s.use)}, {"rule", s.rule}};
  }
  nlohmann::json j = {{"schema", "lockstep.history/1"},
                      {"run_id", e.run_id},
                      {"record_xxh3", e.record_xxh3},
                      {"time", e.time_utc},
                      {"smoke", e.smoke},
                      {"platform", e.platform},
                      {"commit", e.commit},
                      {"branch", e.branch},
                      {"ci", {{"pipeline", e.ci.pipeline}, {"job", e.ci.job}, {"job_url", e.ci.job_url},
                              {"runner", e.ci.runner}, {"report_url", e.ci.report_url}}},
                      {"verdict", e.verdict},
                      {"exit", e.exit_code},
                      {"lane", e.lane},
                      {"golden", e.golden},
                      {"fingerprint", e.fingerprint},
                      {"series", series},
                      {"probes", e.probes},
                      {"step_time_median_s", number_or_null(e.step_time_median_s)},
                      {"peak_rss_bytes", e.peak_rss_bytes}};
  if (!e.stack.empty()) j["stack"] = e.stack;
  if (!e.config.empty()) j["config"] = e.config;
  if (e.prev) j["prev"] = *e.prev;
  return canonical_dump(j);  // a CI variable that is not UTF-8 is escaped, never an error
}

std::string ledger_line_hash(const std::string& line) { return xxh3_128_hex(line.data(), line.size()); }

namespace {

// One series of a ledger line: its kept points (steps increasing), count,
// hash, use and rule. Throws exit 2 naming the element that is wrong.
// `chained`: the line carries prev, so its writer hashed every NaN as the
// quiet NaN and a series holding one is checked too (a line from before
// the chain hashed a NaN's own bits, which its "nan" no longer has).
LedgerSeries parse_ledger_series(const JsonView& s, bool chained) {
  s.allow_keys({"steps", "values", "count", "xxh3", "use", "rule"});
  LedgerSeries ls;
  JsonView steps = s.at("steps"), values = s.at("values");
  steps.expect_array();
  values.expect_array();
  if (steps.size() != values.size() || steps.size() > kLedgerPoints)
    s.fail("as many steps as values, at most " + std::to_string(kLedgerPoints));
  // The raw arrays first (a year of nights is millions of values); a
  // JsonView, which names the element, only for one that is wrong.
  const nlohmann::json &raw_steps = steps.raw(), &raw_values = values.raw();
  ls.steps.reserve(raw_steps.size());
  ls.values.reserve(raw_values.size());
  for (size_t i = 0; i < raw_steps.size(); ++i) {
    const nlohmann::json& st = raw_steps[i];
    bool plain = st.is_number_integer() && !(st.is_number_unsigned() && st.get<uint64_t>() > INT64_MAX) &&
                 st.get<int64_t>() >= 0;
    ls.steps.push_back(plain ? st.get<int64_t>() : steps.at(i).as_int(0));
    if (i > 0 && ls.steps[i] <= ls.steps[i - 1]) steps.at(i).fail("steps in increasing order");
    const nlohmann::json& v = raw_values[i];
    ls.values.push_back(v.is_number() ? v.get<double>() : values.at(i).as_double());
  }
  ls.count = s.at("count").as_uint();
  // The writer keeps every value of a series of up to kLedgerPoints, else
  // exactly kLedgerPoints (kept_indices).
  const uint64_t kept = std::min<uint64_t>(ls.count, kLedgerPoints);
  if (ls.values.size() != kept)
    s.at("count").fail(ls.values.size() < kLedgerPoints
                           ? "the number of values kept (" + std::to_string(ls.values.size()) +
                                 "): a series of at most " + std::to_string(kLedgerPoints) + " keeps every value"
                           : "at least the number of values kept (" + std::to_string(ls.values.size()) + ")");
  ls.xxh3 = s.at("xxh3").as_string();
  if (!is_hex_digest(ls.xxh3, 32)) s.at("xxh3").fail("the series' XXH3-128 (32 hex digits)");
  // Every value kept: the hash can be checked (a value edited by hand with
  // the hash left stale is refused). A line from before the chain hashed a
  // NaN's own bits, which its "nan" no longer holds: its hash is made anew
  // from the values, as the chain's writer makes it (so a merge that
  // chains the line, and a night compared with it, agree).
  const bool has_nan = std::any_of(ls.values.begin(), ls.values.end(), [](double v) { return std::isnan(v); });
  if (ls.count == ls.values.size() && !chained && has_nan) {
    ls.xxh3 = points_hash(ls.steps, ls.values);
  } else if (ls.count == ls.values.size()) {
    if (points_hash(ls.steps, ls.values) != ls.xxh3)
      s.at("xxh3").fail("the XXH3-128 of the steps and values listed (every value is kept); they do not hash to " +
                        ls.xxh3 + " (a value edited by hand?)");
  }
  ls.use = s.at("use").raw().is_null() ? kNaN : s.at("use").as_double();
  if (!std::isnan(ls.use) && !(ls.use >= 0)) s.at("use").fail("a share of the tolerance, 0 or more (or null)");
  ls.rule = s.at("rule").as_string();
  return ls;
}

}  // namespace

namespace {

// A ledger line's night: which run, when, of which smoke on which platform
// and stack, from which commit and CI job, and its verdict, exit, lane and
// golden (parse_ledger_line).
void parse_night_outcome(const JsonView& v, LedgerEntry& e) {
  e.run_id = v.at("run_id").as_string();
  if (!is_hex_digest(e.run_id, 32)) v.at("run_id").fail("the run record's XXH3-128 (32 lowercase hex digits)");
  if (v.has("record_xxh3")) {
    e.record_xxh3 = v.at("record_xxh3").as_string();
    if (!e.record_xxh3.empty() && !is_hex_digest(e.record_xxh3, 32))
      v.at("record_xxh3").fail("the run record's own XXH3-128 (32 lowercase hex digits), or \"\"");
  }
  e.time_utc = v.at("time").as_string();
  if (!is_utc_time(e.time_utc))
    v.at("time").fail("an ISO 8601 UTC time such as 2026-12-03T02:00:00Z, got \"" + input_excerpt(e.time_utc) + "\"");
  // A night cannot have run later than now (a day of clock skew allowed):
  // the ledger's last line, which no chain protects, edited to sort last.
  if (e.time_utc > utc_now(86400))
    v.at("time").fail("a time at most a day ahead of this machine's clock (" + utc_now() + "), got " + e.time_utc +
                      ": its runner's clock ran ahead, or the line was edited");
  e.smoke = v.at("smoke").as_string();
  e.platform = v.at("platform").as_string();
  if (v.has("stack")) {
    e.stack = v.at("stack").as_string();
    if (!is_stack_label(e.stack))
      v.at("stack").fail("a stack label (1..40 letters, digits, '.', '_' and '-', starting with a letter or digit), "
                         "got \"" + input_excerpt(e.stack) + "\"");
  }
  e.commit = v.at("commit").as_string();
  e.branch = v.at("branch").as_string();
  JsonView ci = v.at("ci");
  ci.allow_keys({"pipeline", "job", "job_url", "runner", "report_url"});
  e.ci = {ci.at("pipeline").as_string(), ci.at("job").as_string(), ci.at("job_url").as_string(),
          ci.at("runner").as_string(), ci.at("report_url").as_string()};
  e.verdict = v.at("verdict").as_enum({"pass", "fail", "nondeterministic", "bad-input", "environment", "not compared"});
  e.exit_code = static_cast<int>(v.at("exit").as_int(0, 4));
  static const std::map<std::string, int> kExitOf = {{"pass", 0}, {"fail", 1}, {"bad-input", 2}, {"environment", 3},
                                                     {"nondeterministic", 4}, {"not compared", 0}};
  if (kExitOf.at(e.verdict) != e.exit_code)
    v.at("exit").fail(std::to_string(kExitOf.at(e.verdict)) + " for the verdict \"" + e.verdict + "\"");
  if (!is_ledger_smoke_name(v.at("smoke").as_string())) v.at("smoke").fail("a smoke name (letters, digits, '.', '_', '-')");
  e.lane = v.at("lane").as_enum({"", "same-stack", "cross-stack", "contract-mismatch"});
  e.golden = v.at("golden").as_string();
  if (!e.golden.empty() && !is_hex_digest(e.golden, 32)) v.at("golden").fail("a golden's content_hash (32 hex digits) or \"\"");
}

// What a ledger line's night measured: its fingerprint (whose device the
// platform key names), config values, series, probe hashes, step time and
// peak RSS, and the `prev` hash of the chain (parse_ledger_line).
void parse_night_measures(const JsonView& v, LedgerEntry& e) {
  JsonView fp = v.at("fingerprint");
  fp.expect_object();
  for (const std::string& key : fp.keys()) e.fingerprint[key] = fp.at(key).as_string();
  // The platform key is made from the device ("cpu-x86_64-avx2", "cuda-sm90").
  if (auto device = e.fingerprint.find("device");
      device != e.fingerprint.end() && e.platform.rfind(device->second + "-", 0) != 0)
    v.at("platform").fail("a platform key of the night's device " + input_excerpt(device->second) + " (\"" +
                          input_excerpt(device->second) + "-...\"), got \"" + input_excerpt(e.platform) + "\"");
  if (v.has("config")) {
    JsonView config = v.at("config");
    config.expect_object();
    if (config.keys().size() > kLedgerConfigFields)
      config.fail("at most " + std::to_string(kLedgerConfigFields) + " config value fields");
    for (const std::string& key : config.keys()) {
      if (key.empty() || key.size() > kLedgerConfigValue)
        config.fail("config value paths of 1 to " + std::to_string(kLedgerConfigValue) + " bytes, got one of " +
                    std::to_string(key.size()));
      e.config[key] = config.at(key).as_string();
      if (e.config[key].size() > kLedgerConfigValue)
        config.at(key).fail("a value of at most " + std::to_string(kLedgerConfigValue) + " bytes (a longer one is kept as its xxh3)");
    }
  }
  JsonView series = v.at("series");
  series.expect_object();
  if (series.keys().size() > kLedgerSeries) series.fail("at most " + std::to_string(kLedgerSeries) + " series");
  for (const std::string& name : series.keys()) e.series.emplace(name, parse_ledger_series(series.at(name), v.has("prev")));
  JsonView probes = v.at("probes");
  probes.expect_array();
  if (probes.size() > kLedgerProbes) probes.fail("at most " + std::to_string(kLedgerProbes) + " probe hashes");
  for (size_t i = 0; i < probes.size(); ++i) e.probes.push_back(probes.at(i).as_string());
  e.step_time_median_s = v.at("step_time_median_s").raw().is_null() ? kNaN : v.at("step_time_median_s").as_finite(0, 1e9);
  e.peak_rss_bytes = v.at("peak_rss_bytes").as_int(-1);
  if (v.has("prev")) {
    e.prev = v.at("prev").as_string();
    if (!e.prev->empty() && !is_hex_digest(*e.prev, 32))
      v.at("prev").fail("the XXH3-128 of the line before it (32 lowercase hex digits), or \"\" on the first line");
  }
}

}  // namespace

LedgerEntry parse_ledger_line(const std::string& line, const std::string& file, uint64_t line_number) {
  std::string where = file + ": line " + std::to_string(line_number);
  nlohmann::json doc = parse_json_text(line, where);
  JsonView v(doc, where);
  v.expect_object();
  v.allow_keys({"schema", "run_id", "record_xxh3", "time", "smoke", "platform", "stack", "commit", "branch", "ci", "verdict", "exit", "lane",
                "golden", "fingerprint", "config", "series", "probes", "step_time_median_s", "peak_rss_bytes", "prev"});
  if (v.at("schema").as_string() != "lockstep.history/1") v.at("schema").fail("\"lockstep.history/1\"");
  LedgerEntry e;
  parse_night_outcome(v, e);
  parse_night_measures(v, e);
  return e;
}

namespace {

// The chain's rule (docs/history.md): a line that carries `prev` names the
// hash of the line before it, `before_hash` of line `before` ("" and 0: it
// is the first); once a line carries it (`chained`), every later line does.
// Throws exit-2 Error naming `where`'s line `n` otherwise.
void check_prev(const LedgerEntry& e, const std::string& before_hash, uint64_t before, bool chained,
                const std::string& where, uint64_t n) {
  std::string field = "line " + std::to_string(n) + ": prev";
  if (!e.prev) {
    if (chained)
      throw BadInput(where, field, "the XXH3-128 of line " + std::to_string(before) + " (every line after a chained "
                                   "one carries prev; this one was written or edited by hand)");
    return;
  }
  if (*e.prev == before_hash) return;
  if (before == 0)
    throw BadInput(where, field, "\"\" on the first line; got " + *e.prev +
                                     ", the hash of a line before it: the ledger's first lines were deleted");
  if (e.prev->empty())
    throw BadInput(where, field, before_hash + ", the XXH3-128 of line " + std::to_string(before) +
                                     "; got \"\", a first line's: the lines before it were pasted in by hand");
  throw BadInput(where, field, before_hash + ", the XXH3-128 of line " + std::to_string(before) + " before it; got " +
                                   *e.prev + ": a line between them was deleted, or line " + std::to_string(before) +
                                   " was edited (the ledger is append-only)");
}

// One line's entry, held to everything but the chain: its size, its
// ending, its fields and the smoke `smoke` the ledger is named for.
LedgerEntry parse_checked_line(const std::string& line, const std::string& where, uint64_t n, const std::string& smoke) {
  const std::string at = "line " + std::to_string(n);
  if (line.size() > kLedgerLineBytes)
    throw BadInput(where, at, "a line of at most " + std::to_string(kLedgerLineBytes >> 20) + " MiB");
  if (line.back() == '\r')
    throw BadInput(where, at, "a line ending in \"\\n\", got \"\\r\\n\" (converted by git's autocrlf or an "
                              "editor? `*.jsonl -text` in .gitattributes keeps ledgers as written)");
  LedgerEntry e = parse_ledger_line(line, where, n);
  // <smoke>.jsonl holds that smoke's nights only (check and history add
  // append by the smoke's name).
  if (e.smoke != smoke)
    throw BadInput(where, at + ": smoke", "\"" + smoke + "\", the smoke this ledger is named for; got \"" + e.smoke + "\"");
  return e;
}

// The entries of one ledger's text, named `where` in messages, of smoke
// `smoke`: read_ledger's rules (see ledger.h).
LedgerRead read_ledger_text(const std::string& text, const std::string& where, const std::string& smoke, bool skip_bad) {
  // lockstep writes no byte-order mark: one means an editor saved the file
  // (and its first line's hash, which line 2's prev names, moved with it).
  if (text.rfind("\xEF\xBB\xBF", 0) == 0)
    throw BadInput(where, "line 1: byte 0",
                   "a ledger line ('{'), got a UTF-8 byte-order mark (the file was saved by an editor; lockstep "
                   "writes none): remove the 3 bytes, or restore the ledger");
  LedgerRead out;
  std::set<std::string> runs;
  std::string last_hash;  // of the last line read, which the next line's prev names
  uint64_t n = 0, last_line = 0;
  bool chained = false;
  size_t at = 0;
  // A line that is no entry: exit 2, or left out and said with skip_bad.
  auto refuse = [&](const std::string& why) {
    if (!skip_bad) throw BadInput(where, "line " + std::to_string(n), why);
    out.skipped.push_back(where + ": line " + std::to_string(n) + ": expected " + why);
  };
  while (at < text.size()) {
    size_t end = text.find('\n', at);
    ++n;
    if (end == std::string::npos) {
      // A last line without its newline was cut while being written by
      // something other than lockstep (whose writes are whole-file).
      refuse("a complete line ending in a newline (the file ends inside line " + std::to_string(n) + ")");
      break;
    }
    std::string line = text.substr(at, end - at);
    at = end + 1;
    if (line.empty()) {
      // lockstep writes no blank line: one is a line emptied by hand.
      refuse("an entry (lockstep writes no blank lines: was this line emptied?)");
      continue;
    }
    const std::string before_hash = std::exchange(last_hash, ledger_line_hash(line));
    const uint64_t before = std::exchange(last_line, n);
    LedgerEntry e;
    try {
      e = parse_checked_line(line, where, n, smoke);
    } catch (const Error& error) {
      if (!skip_bad || error.code() != ExitCode::kBadInput) throw;
      out.skipped.push_back(error.what());
      continue;
    }
    try {
      check_prev(e, before_hash, before, chained, where, n);
    } catch (const Error& gap) {
      if (!skip_bad) throw;
      out.skipped.push_back(std::string(gap.what()) + " (its entry is read; the lines lost are not)");
    }
    chained = chained || e.prev.has_value();
    // Never skipped: which of the two is the run's would be a guess.
    if (!runs.insert(e.run_id).second)
      throw BadInput(where, "line " + std::to_string(n), "each run once; run " + e.run_id + " is entered twice");
    out.entries.push_back(std::move(e));
  }
  out.last_line_hash = last_hash;
  return out;
}

// "digits-cnn" of ".../digits-cnn.jsonl".
std::string smoke_of_ledger(const std::string& file) {
  std::string stem = fs::path(file).filename().string();
  return stem.size() > 6 ? stem.substr(0, stem.size() - 6) : stem;
}

}  // namespace

std::string damaged_ledger_hint(const std::string& dir, bool appending) {
  return "; `lockstep history " + dir + " --skip-bad` reads the other lines, naming each one it leaves out" +
         (appending ? std::string("; a night is entered only into a ledger that reads whole: restore this one (its "
                                  "history branch, `lockstep history pull`, or the CI cache), or move it aside")
                    : std::string());
}

LedgerRead read_ledger_to_append(const std::string& file, const std::string& dir) {
  try {
    return read_ledger(file, false);
  } catch (const Error& e) {
    if (e.code() != ExitCode::kBadInput) throw;
    throw Error(ExitCode::kBadInput, e.what() + damaged_ledger_hint(dir, true));
  }
}

LedgerRead read_ledger(const std::string& file, bool skip_bad) {
  std::string text = read_file(file);
  // lockstep writes a ledger with its first night: an empty one was cut.
  if (text.empty())
    throw BadInput(file, "", "at least one night (lockstep never writes an empty ledger: was it truncated?)");
  return read_ledger_text(text, file, smoke_of_ledger(file), skip_bad);
}

std::string merge_ledgers(const std::string& name, const std::string& ours, const std::string& theirs,
                          const std::string& theirs_is) {
  std::vector<LedgerEntry> all;
  // run_id -> (its entry in `all`, its line without record_xxh3, which a
  // ledger written before it was kept lacks)
  std::map<std::string, std::pair<size_t, std::string>> seen;
  const std::string their_side = " (" + theirs_is + ")";
  for (const auto& [text, side] : {std::pair<const std::string*, std::string>{&theirs, their_side}, {&ours, ""}}) {
    // Each side held to what read_ledger holds a ledger to: a merge must not
    // launder a line the reader would refuse (nor chain over a gap).
    for (LedgerEntry& e : read_ledger_text(*text, name + side, smoke_of_ledger(name), false).entries) {
      // What must agree about one run: all but the chain (each side chains
      // in its own order), record_xxh3 (a line from before it was kept
      // lacks it), and when and from which job it was entered (`history
      // add` of one record in two clones: one run, the earlier entry kept).
      LedgerEntry bare = e;
      bare.record_xxh3.clear();
      bare.prev.reset();
      bare.time_utc.clear();
      bare.ci = {};
      std::string compared = ledger_line(bare);
      auto known = seen.find(e.run_id);
      if (known == seen.end()) {
        seen.emplace(e.run_id, std::make_pair(all.size(), compared));
        all.push_back(std::move(e));
      } else if (known->second.second == compared) {
        LedgerEntry& kept = all[known->second.first];
        // A run `check` entered (its run_id names the record and the
        // process, so it differs from record_xxh3) was entered once, at
        // one time, from one job: two copies that differ there are an
        // edit, not two clones' `history add` of one record.
        const bool checked = !e.record_xxh3.empty() && e.run_id != e.record_xxh3;
        if (checked && (e.time_utc != kept.time_utc || !(e.ci == kept.ci)))
          throw BadInput(name + side, "run " + e.run_id,
                         "the run as the other side has it; the two sides disagree about its time or CI job (" +
                             e.time_utc + " vs " + kept.time_utc + "): a run entered by check is entered once; was "
                             "one side edited by hand?");
        std::string record = kept.record_xxh3.empty() ? e.record_xxh3 : kept.record_xxh3;
        if (e.time_utc < kept.time_utc) kept = std::move(e);
        kept.record_xxh3 = record;
      } else {
        throw BadInput(name + side, "run " + e.run_id,
                       "the run as the other side has it; the two sides disagree about it (a ledger edited by hand?): "
                       "fix one before merging");
      }
    }
  }
  // Nights by time; none is dated more than a day ahead of this clock
  // (parse_ledger_line), so none can take the end, and its "last night".
  std::stable_sort(all.begin(), all.end(), [](const LedgerEntry& a, const LedgerEntry& b) { return a.time_utc < b.time_utc; });
  std::string out, last_hash;
  uint64_t n = 0;
  for (auto& e : all) {
    e.prev = last_hash;
    std::string line = ledger_line(e);
    ++n;
    // Every side read within the limit; a line from before the chain that
    // its `prev` takes past it would not read back: refused here instead.
    if (line.size() > kLedgerLineBytes)
      throw BadInput(name + " (merged)", "line " + std::to_string(n),
                     "a line of at most " + std::to_string(kLedgerLineBytes >> 20) + " MiB, which run " + e.run_id +
                         " exceeds once chained");
    last_hash = ledger_line_hash(line);
    out += line + "\n";
  }
  return out;
}

void append_entry(const std::string& dir, const LedgerEntry& entry, const std::function<void(int)>& on_wait) {
  std::string file = ledger_path(dir, entry.smoke);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw io_error(dir, "create the history folder", ec.value());
  // Read, append and rename under the folder's lock: two adds at once
  // (two nightlies, `history add` in a loop) would each rewrite the ledger
  // from what it held before the other's line.
  DirectoryLock lock(dir, /*wait=*/true, on_wait);
  std::string text;
  LedgerRead held;
  if (fs::exists(file, ec)) {
    text = read_file(file);
    held = read_ledger_text(text, file, smoke_of_ledger(file), false);
    for (const LedgerEntry& e : held.entries)
      if (e.run_id == entry.run_id)
        throw BadInput(file, "run_id", "a run not yet entered; run " + entry.run_id + " (" + e.time_utc +
                                           ") is already in the ledger");
  }
  LedgerEntry chained = entry;
  chained.prev = held.last_line_hash;  // "" for the first line
  const std::string line = ledger_line(chained);
  // Never a line the reader would refuse: the ledger would take no night more.
  if (line.size() > kLedgerLineBytes)
    throw BadInput(file, "run " + entry.run_id,
                   "an entry of at most " + std::to_string(kLedgerLineBytes >> 20) + " MiB; this one would be " +
                       std::to_string(line.size()) + " bytes (nothing was written)");
  write_file_atomically(file, text + line + "\n");
}

}  // namespace lockstep
