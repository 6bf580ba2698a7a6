#include "calibrate/calibrate.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <optional>
#include <set>
#include <sstream>

#include "compare/compare.h"
#include "core/error.h"
#include "core/float_bits.h"
#include "core/json_io.h"
#include "gate/check.h"
#include "gate/smoke_outputs.h"
#include "machine/machine_facts.h"
#include "record/golden.h"
#include "record/platform_key.h"
#include "smoke/golden_store.h"

namespace lockstep {

namespace fs = std::filesystem;

namespace {

const std::vector<std::string>& axis_names() {
  static const std::vector<std::string> names = {"threads", "capability", "workers", "seed"};
  return names;
}

bool is_decimal(const std::string& s) { return !s.empty() && s.find_first_not_of("0123456789") == std::string::npos; }

// The value checked for its axis; "" when valid, else what was expected.
std::string axis_value_problem(const std::string& axis, const std::string& v) {
  if (axis == "threads") {
    if (!is_decimal(v) || v.size() > 4 || std::stoi(v) < 1 || std::stoi(v) > 1024) return "an intra-op thread count in [1, 1024]";
  } else if (axis == "workers") {
    if (!is_decimal(v) || v.size() > 2 || std::stoi(v) > 64) return "a DataLoader worker count in [0, 64]";
  } else if (axis == "seed") {
    if (!is_decimal(v) || v.size() > 20 || (v.size() == 20 && v > "18446744073709551615")) return "a decimal seed in [0, 2^64-1]";
  } else if (axis == "capability") {
    if (v != "default" && v != "avx2" && v != "avx512") return "an ATen CPU capability: default, avx2 or avx512";
  }
  return "";
}

// The label of a point: "threads=2 capability=avx2".
std::string point_label(const std::map<std::string, std::string>& point, const std::vector<CalibrateAxis>& axes) {
  std::string out;
  for (const auto& a : axes) {
    auto it = point.find(a.name);
    if (it != point.end()) out += (out.empty() ? "" : " ") + a.name + "=" + it->second;
  }
  return out.empty() ? "the config's point" : out;
}

// Every point of the axes' product, first axis slowest.
std::vector<std::map<std::string, std::string>> product(const std::vector<CalibrateAxis>& axes) {
  std::vector<std::map<std::string, std::string>> points = {{}};
  for (const auto& a : axes) {
    std::vector<std::map<std::string, std::string>> next;
    for (const auto& p : points)
      for (const auto& v : a.values) {
        auto q = p;
        q[a.name] = v;
        next.push_back(std::move(q));
      }
    points = std::move(next);
  }
  return points;
}

// The child run at `point`.
ChildRun child_at(const std::string& file, const std::map<std::string, std::string>& point) {
  ChildRun run;
  run.smoke = file;
  for (const auto& [axis, v] : point) {
    if (axis == "threads") run.overrides.intra_op_threads = std::stoi(v);
    if (axis == "workers") run.overrides.workers = std::stoi(v);
    if (axis == "seed") run.seed = v;
    if (axis == "capability") run.env.push_back("ATEN_CPU_CAPABILITY=" + v);
  }
  return run;
}

// Every run of `runs` through `launcher`, each started as soon as a slot
// per process is free (as check -j counts). A run of several intra-op
// threads beside another oversubscribes the cores for a moment, and
// OpenMP's spin-waiting threads would then take each other's CPU (user
// time doubled, wall time varying by 40 %): the runs get
// OMP_WAIT_POLICY=PASSIVE unless the environment sets a policy, which
// changes how idle threads wait, never what they compute
// (bench/calibrate_overhead.sh measures both).
std::vector<RunRecord> run_all(Launcher& launcher, std::vector<ChildRun> runs, JobSlots* slots, int processes) {
  std::vector<RunRecord> out(runs.size());
  std::vector<std::function<void()>> tasks;
  std::vector<int> need;
  const bool policy_set = std::getenv("OMP_WAIT_POLICY") != nullptr;
  for (size_t i = 0; i < runs.size(); ++i) {
    if (!policy_set) runs[i].env.push_back("OMP_WAIT_POLICY=PASSIVE");
    tasks.push_back([&, i] { out[i] = launcher.run(runs[i]); });
    need.push_back(processes);
  }
  run_pool(tasks, slots, need);
  return out;
}

// Records from other runners: files, or the run records in folders.
// "a, b, c" of at most 3 names, then how many more.
std::string some(const std::vector<std::string>& names) {
  std::string out;
  for (size_t i = 0; i < names.size() && i < 3; ++i) out += (i ? ", " : "") + names[i];
  if (names.size() > 3) out += ", and " + std::to_string(names.size() - 3) + " more";
  return out;
}

// Where a record from elsewhere ran: its runner, intra-op threads and CPU
// capability (as the fingerprint and contract say), so its spread is put
// down to the axis that moved, not to "repeat".
std::map<std::string, std::string> point_of(const RunRecord& r, const std::string& path) {
  std::map<std::string, std::string> p;
  auto runner = r.fingerprint.find("runner");
  p["runner"] = runner == r.fingerprint.end() ? path : runner->second.value;
  auto threads = r.contract.find("intra_op_threads");
  if (threads != r.contract.end()) p["threads"] = threads->second;
  for (const char* key : {"env.ATEN_CPU_CAPABILITY", "torch.cpu_capability", "python.torch.cpu_capability"}) {
    auto cap = r.fingerprint.find(key);
    if (cap != r.fingerprint.end() && cap->second.value != "(unset)") {
      std::string v = cap->second.value;
      std::transform(v.begin(), v.end(), v.begin(), [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
      p["capability"] = v;
      break;
    }
  }
  return p;
}

// The files `path` (a --records argument) names: itself, or the .json
// files of a folder, sorted; what a folder holds that is not a regular
// file goes to `left_out`. Throws BadUsage when `path` does not exist.
std::vector<std::string> record_files(const std::string& path, bool folder, std::vector<std::string>& left_out) {
  std::vector<std::string> files;
  std::error_code ec;
  if (folder) {
    for (fs::directory_iterator it(path, ec), end; !ec && it != end; it.increment(ec)) {
      if (it->path().extension() != ".json") continue;
      if (it->is_regular_file(ec)) files.push_back(it->path().string());
      else left_out.push_back(it->path().filename().string() + " (not a regular file)");
    }
    if (ec) throw io_error(path, "list the records folder", ec.value());
    std::sort(files.begin(), files.end());
  } else if (path.empty() || !fs::exists(path, ec)) {
    throw BadUsage("--records '" + path + "': no such file or folder");
  } else {
    files.push_back(path);
  }
  return files;
}

// One file of --records as a run of this smoke and this version of its
// config. In a folder of CI artifacts, JSON that is no run record (a
// report) and a golden (a record blessed, not a run of this spread) are
// left out, said in `left_out` as `name`; named by itself, a golden or
// another smoke's record is refused. A file that is not valid JSON, a
// record that does not read back, or one of another config version is bad
// input anywhere (exit 2 naming the file).
std::optional<RunRecord> read_calibration_record(const std::string& f, bool folder, const std::string& name,
                                                 const SmokeConfig& cfg, std::vector<std::string>& left_out) {
  nlohmann::json doc = parse_json_file(f);  // exit 2 naming the byte
  const bool golden = doc.is_object() && doc.contains("content_hash") && doc.contains("provenance");
  if (golden && !folder)
    throw BadInput(f, "", "a run record (lockstep run, check's run-N.json); this is a golden (provenance, "
                          "content_hash): calibrate measures runs");
  if (folder && (!doc.is_object() || !doc.contains("series") || !doc.contains("fingerprint"))) {
    left_out.push_back(name + " (JSON, but no run record)");
    return std::nullopt;
  }
  if (golden) {
    left_out.push_back(name + " (a golden, not a run record)");
    return std::nullopt;
  }
  RunRecord r = read_run_record(f);
  if (r.smoke != cfg.name) {
    if (!folder) throw BadInput(f, "smoke", "a record of smoke '" + cfg.name + "', got '" + r.smoke + "'");
    left_out.push_back(name + " (smoke " + r.smoke + ")");
    return std::nullopt;
  }
  auto values = r.fingerprint.find("config.values_xxh3");
  std::string theirs = values == r.fingerprint.end() ? "(none)" : values->second.value;
  if (theirs != cfg.values_hash)
    throw BadInput(f, "fingerprint.config.values_xxh3",
                   cfg.values_hash + ", the value hash of " + cfg.file + " now (a record of this version of the "
                   "smoke's config; another version's spread is a change, not noise), got " + theirs);
  return r;
}

// Records from other runners: files, or the run records in folders, of
// this smoke and this version of its config, each file once.
std::vector<CalibrationRun> read_records(const std::vector<std::string>& paths, const SmokeConfig& cfg,
                                         std::vector<std::string>& notes) {
  std::vector<CalibrationRun> out;
  std::set<std::string> seen_paths, seen_content;
  for (const auto& path : paths) {
    std::error_code ec;
    const bool folder = fs::is_directory(path, ec);
    std::vector<std::string> left_out;
    size_t taken = 0;
    for (const auto& f : record_files(path, folder, left_out)) {
      std::string canonical = fs::weakly_canonical(f, ec).string();
      if (!seen_paths.insert(canonical).second) {
        notes.push_back("--records " + f + ": given more than once, counted once");
        continue;
      }
      std::optional<RunRecord> r =
          read_calibration_record(f, folder, folder ? fs::path(f).filename().string() : f, cfg, left_out);
      if (!r) continue;
      if (!seen_content.insert(to_json(*r).dump()).second) {
        notes.push_back("--records " + f + ": the same record as one read before, counted once");
        continue;
      }
      CalibrationRun c;
      c.point = point_of(*r, f);
      c.label = f;
      c.source = f;
      c.record = std::move(*r);
      out.push_back(std::move(c));
      ++taken;
    }
    if (folder && taken == 0)
      throw BadUsage("--records " + path + ": no run record of smoke '" + cfg.name + "' in this folder" +
                     (left_out.empty() ? "" : ": " + some(left_out)));
    if (!left_out.empty())
      notes.push_back("--records " + path + ": " + std::to_string(left_out.size()) + " file(s) left out: " +
                      some(left_out));
  }
  // Records at one point are repeats of it (two that differ are
  // nondeterminism there, said in a note).
  std::map<std::map<std::string, std::string>, int> repeats;
  for (auto& c : out) c.repeat = ++repeats[c.point];
  return out;
}

// The series a planted change of the learning rate moves by definition.
const std::vector<std::string>& lr_series() {
  static const std::vector<std::string> names = {"lr", "learning_rate", "learning-rate"};
  return names;
}

// The detection search: lr x (1 + f) and x (1 - f) at the first run's
// point, each compared with that run (or the multi-seed golden) under the
// recommended rules; caught when both fail. `training_only` (a trainer
// smoke, whose data-only pass is a process of its own): the planted runs
// make no data-only pass and take the first run's, which a learning rate
// cannot change (launcher.h, take_data_pass): half the processes.
Detection search_detection(const std::string& file, const CalibrateOptions& o, const Calibration& c,
                           const std::map<std::string, std::string>& point, const std::string& dir,
                           Launcher& launcher, int per_run, bool training_only) {
  Detection d;
  std::map<std::string, std::vector<double>> sd;
  RunRecord golden = c.seeds_vary ? multi_seed_golden(c.runs, sd) : c.runs.front().record;
  ChildRun base = child_at(file, point);
  int n = 0;
  std::string first_change;  // "" while every planted run was bit-identical to the reference
  auto caught = [&](double f) {
    std::vector<ChildRun> runs;
    for (double sign : {1.0, -1.0}) {
      ChildRun r = base;
      r.overrides.lr_scale = 1 + sign * f;
      r.out = dir + "/detect-" + std::to_string(++n) + ".json";
      r.data_pass = !training_only;
      runs.push_back(r);
    }
    std::vector<RunRecord> got = run_all(launcher, runs, o.slots, per_run);
    for (size_t i = 0; training_only && i < got.size(); ++i)
      take_data_pass(got[i], c.runs.front().record, runs[i].out);
    d.runs += 2;
    bool both = true;
    std::string why;
    for (const auto& r : got) {
      std::string fail = first_failing_value(r, golden, c.recommended, lr_series(), c.seeds_vary ? &sd : nullptr);
      if (fail.empty()) both = false;
      else if (why.empty()) why = fail;
      if (first_change.empty()) first_change = first_bit_difference(r, c.runs.front().record);
    }
    d.tried.push_back({f, both});
    if (both) d.caught_by = why;
    return both;
  };
  double lo = 1e-9, hi = 0.1;
  if (!caught(hi)) {
    d.why_not = first_change.empty() && !c.seeds_vary
                    ? "lr x (1 +- 0.1) left every value bit-identical: the run does not apply the planted "
                      "learning rate (a trainer multiplies its lr by lockstep.lr_scale(), docs/trainers.md)"
                    : "the recommended rules miss even lr x (1 +- 0.1)";
    d.misses = hi;
    return d;
  }
  d.measured = true;
  std::string caught_at_hi = d.caught_by;
  if (caught(lo)) {
    d.catches = lo;
    return d;
  }
  for (int i = 0; i < o.detect_rounds; ++i) {
    double mid = std::sqrt(lo * hi);
    if (caught(mid)) {
      hi = mid;
      caught_at_hi = d.caught_by;
    } else {
      lo = mid;
    }
  }
  d.catches = hi;
  d.misses = lo;
  d.caught_by = caught_at_hi;
  return d;
}

// The configured rules as recommendations, key by key (for the same
// comparisons as the recommended ones).
std::map<std::string, Recommendation> configured_rules(const Calibration& c, const TolerancePolicy& policy) {
  std::map<std::string, Recommendation> out;
  for (const auto& [id, r] : c.recommended) {
    Recommendation x = r;
    x.measured = true;
    x.tolerance = r.probe ? policy.for_probe(r.key) : policy.for_series(r.key);
    out[id] = x;
  }
  return out;
}

// The recommended rules, and the configured ones, over the calibration
// runs: each against each other one (seeds varying: against the runs'
// mean and std, series only, as a multi-seed golden holds them).
void self_check(Calibration& c, const TolerancePolicy& policy) {
  std::map<std::string, std::vector<double>> sd;
  RunRecord mean = c.seeds_vary ? multi_seed_golden(c.runs, sd) : RunRecord{};
  auto series_only = [&](std::map<std::string, Recommendation> rules) {
    if (c.seeds_vary)
      for (auto it = rules.begin(); it != rules.end();) it = it->second.probe ? rules.erase(it) : std::next(it);
    return rules;
  };
  std::map<std::string, Recommendation> recommended = series_only(c.recommended);
  std::map<std::string, Recommendation> configured = series_only(configured_rules(c, policy));
  const TolerancePolicy recommended_policy = policy_with(policy, c.recommended);
  const TolerancePolicy configured_policy = policy_with(policy, {});
  for (size_t i = 0; i < c.runs.size(); ++i)
    for (size_t j = 0; j < c.runs.size(); ++j) {
      if (i == j || (c.seeds_vary && j > 0)) continue;
      const RunRecord& golden = c.seeds_vary ? mean : c.runs[j].record;
      std::string against = c.runs[i].label + " against " + (c.seeds_vary ? "the mean" : c.runs[j].label) + ": ";
      ++c.self_comparisons;
      // Without seeds varying, each pair as check would judge it (its lane
      // included); a multi-seed golden's sigma rules against the mean.
      std::string why = c.seeds_vary ? first_failing_value(c.runs[i].record, golden, recommended, {}, &sd)
                                     : check_failure(c.runs[i].record, golden, recommended_policy);
      if (!why.empty() && c.self_failed++ == 0) c.self_example = against + why;
      why = c.seeds_vary ? first_failing_value(c.runs[i].record, golden, configured, {}, &sd)
                         : check_failure(c.runs[i].record, golden, configured_policy);
      if (!why.empty() && c.configured_failed++ == 0) c.configured_example = against + why;
    }
  for (const auto& [id, r] : c.recommended) {
    Tolerance was = r.probe ? policy.for_probe(r.key) : policy.for_series(r.key);
    if (r.measured && r.tolerance.rule == Tolerance::Rule::kClose && was.rule == Tolerance::Rule::kClose &&
        (r.tolerance.atol > was.atol || r.tolerance.rtol > was.rtol))
      ++c.looser;
  }
}

}  // namespace

CalibrateAxis parse_axis(const std::string& text) {
  size_t eq = text.find('=');
  std::string name = text.substr(0, eq);
  if (eq == std::string::npos || name.empty())
    throw BadUsage("--axis " + text + ": expected NAME=V1,V2,... with NAME one of threads, capability, workers, seed");
  if (std::find(axis_names().begin(), axis_names().end(), name) == axis_names().end())
    throw BadUsage("--axis " + text + ": unknown axis '" + name + "' (threads, capability, workers or seed)");
  CalibrateAxis a;
  a.name = name;
  std::stringstream in(text.substr(eq + 1));
  std::string v;
  while (std::getline(in, v, ',')) {
    if (std::string want = axis_value_problem(name, v); !want.empty())
      throw BadUsage("--axis " + text + ": '" + v + "' is not " + want);
    if (name != "capability") v = std::to_string(std::stoull(v));  // "01" is 1: one value, one spelling
    if (std::find(a.values.begin(), a.values.end(), v) != a.values.end())
      throw BadUsage("--axis " + text + ": '" + v + "' is given twice");
    a.values.push_back(v);
  }
  if (a.values.empty() || text.back() == ',') throw BadUsage("--axis " + text + ": expected at least one value after '='");
  return a;
}

std::vector<std::string> supported_capabilities(const std::string& isa_flags) {
  std::set<std::string> flags;
  std::stringstream in(isa_flags);
  for (std::string f; in >> f;) flags.insert(f);
  std::vector<std::string> out = {"default"};
  if (flags.count("avx2") && flags.count("fma")) out.push_back("avx2");
  if (flags.count("avx512f") && flags.count("avx512bw") && flags.count("avx512vl") && flags.count("avx512dq") &&
      flags.count("fma"))
    out.push_back("avx512");
  return out;
}

std::string calibrate_records_dir(const std::string& file, const std::string& out_dir) {
  try {
    return (fs::path(out_dir) / load_smoke_config(file).name / "calibrate").string();
  } catch (const Error&) {
    return "";
  }
}

namespace {

// The options' numbers, refused before anything else.
void check_numbers(const CalibrateOptions& o) {
  if (o.repeats < 1 || o.repeats > 100) throw BadUsage("--repeat: a run count in [1, 100]");
  auto finite_in = [](double v, double lo, double hi) { return std::isfinite(v) && v >= lo && v <= hi; };
  if (!finite_in(o.rules.multiplier, 1, 1000)) throw BadUsage("--multiplier: a number in [1, 1000]");
  if (!finite_in(o.rules.rtol_floor, 0, 1)) throw BadUsage("--rtol-floor: a number in [0, 1]");
  if (!finite_in(o.rules.atol_floor, 0, 1e6)) throw BadUsage("--atol-floor: a number in [0, 1e6]");
  if (o.seeds < 1 || o.seeds > 100) throw BadUsage("--seed-count: a seed count in [1, 100]");
}

// The axes into c.axes: as given, else threads {n, 2n} x every capability
// here; --seed-count as a seed axis; each checked against the smoke and CPU.
void choose_axes(const SmokeConfig& cfg, const CalibrateOptions& o, Calibration& c) {
  std::string isa = o.isa_flags.empty() ? cpu_isa_flags() : o.isa_flags;
  std::vector<std::string> capabilities = supported_capabilities(isa);
  c.axes = o.axes;
  if (c.axes.empty() && o.records.empty()) {
    c.axes.push_back({"threads", {std::to_string(cfg.intra_op_threads), std::to_string(2 * cfg.intra_op_threads)}});
    c.axes.push_back({"capability", capabilities});
  }
  std::set<std::string> seen;
  for (const auto& a : c.axes) {
    if (!seen.insert(a.name).second) throw BadUsage("--axis " + a.name + ": the axis is given twice");
    if (a.name == "workers" && cfg.has_trainer())
      throw BadUsage("--axis workers: a trainer smoke's DataLoader workers are its command's (trainer.workers "
                     "holds the data-only pass to several counts)");
    if (a.name == "capability")
      for (const auto& v : a.values)
        if (std::find(capabilities.begin(), capabilities.end(), v) == capabilities.end())
          throw EnvironmentError("--axis capability=" + v + ": this CPU cannot run it (cpu.isa: " + isa +
                                 "; it runs " + some(capabilities) + ")");
  }
  if (o.seeds > 1) {
    if (seen.count("seed")) throw BadUsage("--seed-count with --axis seed=...: give the seeds one way");
    CalibrateAxis s{"seed", {}};
    uint64_t base = base_seed(cfg).first;
    for (int i = 0; i < o.seeds; ++i) s.values.push_back(std::to_string(base + static_cast<uint64_t>(i)));
    c.axes.push_back(s);
  }
  c.seeds_vary = std::any_of(c.axes.begin(), c.axes.end(),
                             [](const CalibrateAxis& a) { return a.name == "seed" && a.values.size() > 1; });
}

// --records inside `dir`, which this calibration clears, are refused.
void refuse_own_records(const std::vector<std::string>& records, const std::string& dir) {
  std::error_code ec;
  std::string own = fs::weakly_canonical(fs::absolute(dir), ec).string() + "/";
  for (const auto& r : records)
    if ((fs::weakly_canonical(fs::absolute(r), ec).string() + "/").rfind(own, 0) == 0)
      throw BadUsage("--records " + r + ": inside " + dir + ", which this calibration clears and fills with its own "
                     "runs (records from elsewhere are evidence; copy them out first)");
}

// The runs here: `repeats` at every point, into c.runs, records in `dir`.
void run_points(const std::string& file, const std::vector<std::map<std::string, std::string>>& points,
                const CalibrateOptions& o, const std::string& dir, int per_run, Launcher& launcher, Calibration& c) {
  std::vector<ChildRun> children;
  for (const auto& p : points)
    for (int r = 1; r <= o.repeats; ++r) {
      ChildRun run = child_at(file, p);
      run.out = dir + "/calibrate-" + std::to_string(children.size() + 1) + ".json";
      children.push_back(run);
      CalibrationRun cr;
      cr.point = p;
      cr.repeat = r;
      cr.label = point_label(p, c.axes) + " #" + std::to_string(r);
      cr.source = run.out;
      c.runs.push_back(std::move(cr));
    }
  std::vector<RunRecord> made = run_all(launcher, children, o.slots, per_run);
  for (size_t i = 0; i < made.size(); ++i) c.runs[i].record = std::move(made[i]);
}

// The golden `check` compares such runs with (their platform and stack
// label, golden_store.h find_golden), and whether run 1 holds against it
// under the recommended rules; a note when the runs carry several stack
// labels (their spread then includes the stack change).
void note_golden(const SmokeConfig& cfg, const std::string& file, Calibration& c) {
  if (c.runs.empty()) return;
  std::set<std::string> labels;
  for (const auto& r : c.runs) labels.insert(r.record.stack.empty() ? "(none)" : r.record.stack);
  if (labels.size() > 1) {
    std::string named;
    for (const auto& l : labels) named += (named.empty() ? "" : ", ") + l;
    c.notes.push_back("the runs carry several stack labels (" + named +
                      "): their spread includes the stack change, as the cross-stack lane's tolerance does");
  }
  const RunRecord& first = c.runs.front().record;
  auto found = find_golden(goldens_root(file, ""), cfg.name, first.platform, first.stack);
  if (!found) {
    c.notes.push_back("no golden yet for platform " + golden_key(first.platform, first.stack) +
                      ": check will ask for one (lockstep bless)");
    return;
  }
  try {
    Golden g = read_filed_golden(*found, cfg.name);
    std::string why = first_failing_value(first, g.record, c.recommended, {}, nullptr);
    std::string stand_in = stand_in_note(*found, first.platform, first.stack);
    c.notes.push_back("check compares these runs with " + found->path +
                      (stand_in.empty() ? "" : " (" + stand_in + ")") +
                      "; run 1 against it under the recommended rules: " +
                      (why.empty() ? "within them" : "fails first at " + why));
  } catch (const Error& e) {
    c.notes.push_back(std::string("the golden check would use cannot be read: ") + e.what());
  }
}

// The runners the runs came from, and a note when two runs at one point
// differ (the gate's repeat check would fail there).
void note_runners_and_repeats(Calibration& c) {
  std::set<std::string> runners;
  for (const auto& r : c.runs) {
    auto it = r.record.fingerprint.find("runner");
    std::string who = it == r.record.fingerprint.end() ? "(unknown runner)" : it->second.value;
    if (runners.insert(who).second) c.runners.push_back(who);
  }
  for (size_t i = 0; i < c.runs.size(); ++i)
    for (size_t j = i + 1; j < c.runs.size(); ++j) {
      const CalibrationRun &a = c.runs[i], &b = c.runs[j];
      if (a.source == b.source || a.point != b.point || a.repeat == b.repeat) continue;
      if (std::string d = first_bit_difference(b.record, a.record); !d.empty()) {
        c.notes.push_back("runs at one point differ (" + a.label + ", " + b.label + ": " + d +
                          "): this runner is nondeterministic for the smoke, and check would exit 4 here");
        return;
      }
    }
}

}  // namespace

Calibration calibrate_smoke(const std::string& file, const CalibrateOptions& o, Launcher& launcher) {
  SmokeConfig cfg = load_smoke_config(file);
  Calibration c;
  c.smoke = cfg.name;
  c.file = file;
  c.date = utc_now();
  c.rules = o.rules;
  c.repeats = o.repeats;
  c.configured = cfg.tolerance;
  check_numbers(o);
  choose_axes(cfg, o, c);

  // Everything that can be refused is refused before a run starts.
  std::string dir = (fs::path(o.out_dir) / cfg.name / "calibrate").string();
  refuse_own_records(o.records, dir);
  std::vector<CalibrationRun> records = read_records(o.records, cfg, c.notes);
  std::vector<std::map<std::string, std::string>> points = product(c.axes);
  if (c.axes.empty()) points.clear();  // --records alone: nothing to run here
  size_t total = points.size() * static_cast<size_t>(o.repeats) + records.size();
  if (total < 2)
    throw BadUsage(file + ": calibration needs at least 2 runs (axis points x --repeat, plus --records), got " +
                   std::to_string(total));

  // The runs here, in parallel while slots are free, then the records.
  clear_smoke_outputs(dir);
  const int per_run = processes_per_run(cfg);
  run_points(file, points, o, dir, per_run, launcher, c);
  // A trainer whose training pass consumed other batches than its data-only
  // pass is refused here as check refuses it (exit 2, or 4 when its repeats
  // differ): its spread would be calibrated on a data stream the gate
  // never accepts.
  for (const CalibrationRun& run : c.runs) {
    // Its point's runs, when they repeated bit for bit (else 1: "whether it repeats was not checked").
    int runs = 0;
    bool repeated = true;
    for (const CalibrationRun& other : c.runs)
      if (other.point == run.point) {
        ++runs;
        repeated = repeated && first_bit_difference(other.record, run.record).empty();
      }
    if (auto [code, why] = data_pass_mismatch(cfg, run.record, repeated ? runs : 1, dir); !why.empty())
      throw Error(code, file + ": " + run.label + ": " + why);
  }
  for (auto& r : records) c.runs.push_back(std::move(r));
  note_runners_and_repeats(c);

  c.spreads = measure_spreads(c.runs, c.seeds_vary);
  c.recommended = recommend(c.spreads, c.rules, c.seeds_vary);
  self_check(c, cfg.tolerance);
  note_golden(cfg, file, c);
  c.false_alarm = leave_one_out(c.runs, c.rules, c.seeds_vary, c.configured);
  if (c.false_alarm.runs == 0)
    c.notes.push_back("no false-alarm estimate: leave-one-out needs 3 runs or more, there are " +
                      std::to_string(c.runs.size()));
  if (!o.detect) c.detection.why_not = "not searched (--no-detect)";
  else if (points.empty()) c.detection.why_not = "not searched: no run made here (--records only)";
  else if (shares_data_pass(cfg))
    c.detection = search_detection(file, o, c, points.front(), dir, launcher, processes_per_run(cfg, false), true);
  else c.detection = search_detection(file, o, c, points.front(), dir, launcher, per_run, false);
  return c;
}

}  // namespace lockstep
