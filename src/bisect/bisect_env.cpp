#include "bisect/bisect_env.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <regex>
#include <set>

#include "compare/compare.h"
#include "core/atomic_file.h"
#include "core/json_io.h"
#include "smoke/smoke_config.h"

namespace lockstep {

namespace fs = std::filesystem;

namespace {

std::vector<std::string> folder_list(const JsonView& v, const std::string& field) {
  v.expect_array();
  std::vector<std::string> out;
  for (size_t i = 0; i < v.size(); ++i) {
    std::string f = v.at(i).as_string();
    if (f.empty() || f[0] != '/') v.at(i).fail("an absolute folder path");
    if (f.find('\0') != std::string::npos) v.at(i).fail("a folder path without NUL");
    f = fs::path(f).lexically_normal().string();
    if (f.size() > 1 && f.back() == '/') f.pop_back();  // "/tmp/" is "/tmp"
    if (f.find(':') != std::string::npos) v.at(i).fail("one folder (no ':'; list each folder in " + field + ")");
    if (std::find(out.begin(), out.end(), f) != out.end()) v.at(i).fail("a folder listed once in " + field);
    out.push_back(f);
  }
  return out;
}

std::string joined(const std::vector<std::string>& a, const std::string& tail) {
  std::string out;
  for (const auto& x : a) out += (out.empty() ? "" : ":") + x;
  if (!tail.empty()) out += (out.empty() ? "" : ":") + tail;
  return out;
}

std::string set_text(const std::vector<EnvDifference>& d) {
  std::string out;
  for (const auto& x : d) out += (out.empty() ? "" : ", ") + x.label();
  return "{" + out + "}";
}

}  // namespace

StackEnv read_stack_env(const std::string& path) {
  nlohmann::json doc = parse_json_file(path);
  JsonView v(doc, path);
  v.expect_object();
  v.allow_keys({"env", "library_path", "python_path", "python"});
  StackEnv s;
  s.file = path;
  if (v.has("env")) {
    JsonView e = v.at("env");
    e.expect_object();
    static const std::regex kName("[A-Za-z_][A-Za-z0-9_]*");
    for (const auto& k : e.keys()) {
      if (!std::regex_match(k, kName)) e.at(k).fail("a variable name of letters, digits and '_' (not starting with a digit)");
      if (k == "LD_LIBRARY_PATH" || k == "PYTHONPATH")
        e.at(k).fail(std::string("no ") + k + " here: list its folders in " +
                     (k == "PYTHONPATH" ? "\"python_path\"" : "\"library_path\"") + ", each one a difference");
      s.env[k] = e.at(k).as_string();
      if (s.env[k].find('\0') != std::string::npos) e.at(k).fail("a value without NUL");
    }
  }
  if (v.has("library_path")) s.library_path = folder_list(v.at("library_path"), "library_path");
  if (v.has("python_path")) s.python_path = folder_list(v.at("python_path"), "python_path");
  if (v.has("python")) {
    s.python = v.at("python").as_string();
    if (s.python.empty() || s.python[0] != '/' || s.python.find('\0') != std::string::npos)
      v.at("python").fail("an absolute path to a Python interpreter");
  }
  return s;
}

void write_stack_env(const std::string& path, const StackEnv& s) {
  nlohmann::json j = nlohmann::json::object();
  j["env"] = s.env;
  if (!s.library_path.empty()) j["library_path"] = s.library_path;
  if (!s.python_path.empty()) j["python_path"] = s.python_path;
  if (!s.python.empty()) j["python"] = s.python;
  write_file_atomically(path, j.dump(2) + "\n");
}

size_t settable_differences(const std::vector<FieldDiff>& diffs, StackEnv& record, StackEnv& here,
                            std::vector<std::string>& left_out) {
  static const std::regex kName("[A-Za-z_][A-Za-z0-9_]*");
  size_t used = 0;
  auto value = [](const std::string& v, std::map<std::string, std::string>& env, const std::string& name) {
    if (v == "(unset)" || v == "(missing)" || v.rfind("(absent", 0) == 0) return;
    env[name] = v == "(set, empty)" ? "" : v;
  };
  for (const auto& d : diffs) {
    std::string name;
    if (d.name.rfind("trainer.env.", 0) == 0) name = d.name.substr(12);
    else if (d.name.rfind("env.", 0) == 0) name = d.name.substr(4);
    if (d.name == "python.executable" && d.golden.rfind("/", 0) == 0 && d.run.rfind("/", 0) == 0) {
      record.python = d.golden;
      here.python = d.run;
      ++used;
      continue;
    }
    if (name.empty() || name == "PYTHONPATH" || name == "LD_LIBRARY_PATH" || !std::regex_match(name, kName) ||
        d.golden.find('\0') != std::string::npos || d.run.find('\0') != std::string::npos) {
      left_out.push_back(d.name);
      continue;
    }
    value(d.golden, record.env, name);
    value(d.run, here.env, name);
    ++used;
  }
  return used;
}

std::string EnvDifference::label() const {
  switch (kind) {
    case Kind::kVariable:
      return inherit ? name + " as inherited" : name + "=" + value;
    case Kind::kLibraryFolder:
      return (inherit ? "without library folder " : "library folder ") + name;
    case Kind::kPythonFolder:
      return (inherit ? "without Python folder " : "Python folder ") + name;
    case Kind::kInterpreter:
      return "interpreter " + name;
  }
  return name;
}

std::vector<EnvDifference> env_differences(const StackEnv& good, const StackEnv& bad) {
  std::vector<EnvDifference> out;
  std::set<std::string> names;
  for (const auto& [k, _] : good.env) names.insert(k);
  for (const auto& [k, _] : bad.env) names.insert(k);
  for (const auto& k : names) {
    auto g = good.env.find(k), b = bad.env.find(k);
    if (g != good.env.end() && b != bad.env.end() && g->second == b->second) continue;
    EnvDifference d;
    d.name = k;
    d.inherit = b == bad.env.end();
    d.value = d.inherit ? "" : b->second;
    out.push_back(d);
  }
  auto folders = [&](const std::vector<std::string>& g, const std::vector<std::string>& b, EnvDifference::Kind kind) {
    for (const auto& f : b)
      if (std::find(g.begin(), g.end(), f) == g.end()) out.push_back({kind, f, "", false});
    for (const auto& f : g)
      if (std::find(b.begin(), b.end(), f) == b.end()) out.push_back({kind, f, "", true});
  };
  folders(good.library_path, bad.library_path, EnvDifference::Kind::kLibraryFolder);
  folders(good.python_path, bad.python_path, EnvDifference::Kind::kPythonFolder);
  if (good.python != bad.python && !bad.python.empty())
    out.push_back({EnvDifference::Kind::kInterpreter, bad.python, "", false});
  return out;
}

ChildRun apply_differences(const ChildRun& base, const StackEnv& good, const std::vector<EnvDifference>& all,
                           const std::vector<size_t>& applied) {
  ChildRun run = base;
  std::map<std::string, std::string> vars = good.env;
  std::vector<std::string> libs, pys, lib_added, py_added;
  std::set<std::string> lib_removed, py_removed;
  std::string python = good.python;
  for (size_t i : applied) {
    const EnvDifference& d = all[i];
    switch (d.kind) {
      case EnvDifference::Kind::kVariable:
        if (d.inherit) vars.erase(d.name);
        else vars[d.name] = d.value;
        break;
      case EnvDifference::Kind::kLibraryFolder:
        if (d.inherit) lib_removed.insert(d.name);
        else lib_added.push_back(d.name);
        break;
      case EnvDifference::Kind::kPythonFolder:
        if (d.inherit) py_removed.insert(d.name);
        else py_added.push_back(d.name);
        break;
      case EnvDifference::Kind::kInterpreter:
        python = d.name;
        break;
    }
  }
  for (const auto& f : lib_added) libs.push_back(f);
  for (const auto& f : good.library_path)
    if (!lib_removed.count(f)) libs.push_back(f);
  for (const auto& f : py_added) pys.push_back(f);
  for (const auto& f : good.python_path)
    if (!py_removed.count(f)) pys.push_back(f);
  for (const auto& [k, v] : vars) run.env.push_back(k + "=" + v);
  auto inherited = [](const char* name) {
    const char* v = std::getenv(name);
    return std::string(v ? v : "");
  };
  if (!libs.empty()) run.env.push_back("LD_LIBRARY_PATH=" + joined(libs, inherited("LD_LIBRARY_PATH")));
  if (!pys.empty()) run.env.push_back("PYTHONPATH=" + joined(pys, inherited("PYTHONPATH")));
  run.python = python;
  return run;
}

std::vector<size_t> ddmin(size_t n, const std::function<bool(const std::vector<size_t>&)>& fails) {
  std::map<std::vector<size_t>, bool> cache;
  auto test = [&](std::vector<size_t> s) {
    std::sort(s.begin(), s.end());
    auto it = cache.find(s);
    if (it != cache.end()) return it->second;
    bool f = !s.empty() && fails(s);
    cache[s] = f;
    return f;
  };
  std::vector<size_t> c(n);
  for (size_t i = 0; i < n; ++i) c[i] = i;
  size_t parts = 2;
  while (c.size() >= 2) {
    // The subsets and their complements, `parts` of them.
    std::vector<std::vector<size_t>> subsets(parts);
    for (size_t i = 0; i < c.size(); ++i) subsets[i * parts / c.size()].push_back(c[i]);
    bool reduced = false;
    for (const auto& s : subsets)
      if (test(s)) {
        c = s;
        parts = 2;
        reduced = true;
        break;
      }
    if (reduced) continue;
    for (const auto& s : subsets) {
      std::vector<size_t> complement;
      for (size_t x : c)
        if (std::find(s.begin(), s.end(), x) == s.end()) complement.push_back(x);
      if (parts > 2 && test(complement)) {
        c = complement;
        parts = std::max<size_t>(parts - 1, 2);
        reduced = true;
        break;
      }
    }
    if (reduced) continue;
    if (parts >= c.size()) break;
    parts = std::min(c.size(), parts * 2);
  }
  return c;
}

namespace {

// The smoke configs of `o`, each once, by file; refuses an interpreter
// difference for a built-in smoke and two configs of one smoke.
std::map<std::string, SmokeConfig> load_configs(const EnvBisectOptions& o, const StackEnv& good,
                                                const std::vector<EnvDifference>& differences) {
  for (const auto& smoke : o.smokes)
    if (smoke.empty()) throw BadUsage("bisect-env SMOKE '': a smoke config or folder, got an empty path");
  std::vector<std::string> files = expand_smoke_args(o.smokes);
  std::set<std::string> given;
  for (const auto& f : files)
    if (!given.insert(fs::weakly_canonical(f).string()).second)
      throw BadUsage("bisect-env SMOKE " + f + " is given twice: name each smoke config once");
  bool interpreter = !good.python.empty() || std::any_of(differences.begin(), differences.end(), [](const EnvDifference& d) {
                       return d.kind == EnvDifference::Kind::kInterpreter;
                     });
  std::map<std::string, SmokeConfig> configs;
  for (const auto& f : files) {
    SmokeConfig c = load_smoke_config(f);
    if (interpreter && !c.has_trainer())
      throw BadUsage(f + ": a built-in smoke has no interpreter to set (\"python\" in " + o.good_env + " or " +
                     o.bad_env + "); bisect a trainer smoke, or leave \"python\" out");
    for (const auto& [other, oc] : configs)
      if (oc.name == c.name)
        throw BadUsage("bisect-env: " + f + " and " + other + " are both smoke '" + c.name +
                       "' (their records would overwrite each other); name each smoke once");
    configs[f] = std::move(c);
  }
  return configs;
}

// The runs of the search: each tested set of differences, its runs held
// bit for bit and compared with the good stack's record (the first set's).
class EnvSearch {
 public:
  EnvSearch(const EnvBisectOptions& o, Launcher& launcher, const StackEnv& good,
            std::map<std::string, SmokeConfig> configs, EnvBisectResult& r)
      : o_(o), launcher_(launcher), good_(good), configs_(std::move(configs)), r_(r) {}

  /// Runs the smokes with `applied`, notes the test, and says whether its
  /// runs settled (agreed and ran); `t.failed` whether they fail.
  bool run_set(const std::vector<size_t>& applied, EnvTest& t) {
    bool settled = run(applied, t);
    note(t);
    return settled;
  }

 private:
  bool run(const std::vector<size_t>& applied, EnvTest& t) {
    t.applied = applied;
    std::string dir = o_.out_dir + "/bisect-env/set-" + std::to_string(++sets_);
    for (const auto& [file, cfg] : configs_) {
      ChildRun base;
      base.smoke = file;
      base.share_data_pass = shares_data_pass(cfg);
      ChildRun run = apply_differences(base, good_, r_.differences, applied);
      std::vector<RunRecord> runs;
      try {
        runs = run_children(launcher_, run, dir, cfg.name, o_.repeats, o_.slots, processes_per_run(cfg));
      } catch (const Error& e) {
        t.why = cfg.name + ": exit " + std::to_string(to_int(e.code())) + ": " + e.what();
        t.failed = false;
        return false;
      }
      t.runs += static_cast<int>(runs.size());
      if (auto [i, diff] = first_repeat_difference(runs); !diff.empty()) {
        t.why = cfg.name + ": run " + std::to_string(i + 1) + " differs from run 1: " + diff;
        t.failed = false;
        return false;
      }
      auto ref = reference_.find(file);
      if (ref == reference_.end()) {
        reference_[file] = runs.front();
        continue;
      }
      Verdict v = compare_records(runs.front(), ref->second, cfg.tolerance,
                                  {dir + "/" + cfg.name + "-1.json", "the good stack's record", "good stack", "run"});
      if (!v.passed() && !t.failed) {
        t.failed = true;
        t.why = cfg.name + ": " + v.first_divergence;
      }
    }
    return true;
  }

  void note(const EnvTest& t) {
    r_.tests.push_back(t);
    r_.runs += t.runs;
    if (!o_.on_test) return;
    std::vector<EnvDifference> set;
    for (size_t i : t.applied) set.push_back(r_.differences[i]);
    std::string which = t.applied.empty() ? "the good stack (" + o_.good_env + ")"
                        : t.applied.size() == r_.differences.size() ? "the bad stack, all of " + set_text(set)
                                                                    : set_text(set);
    std::string verdict = t.failed ? "fails" : t.runs == 0 || !t.why.empty() ? "did not settle" : "passes";
    o_.on_test(which + ": " + verdict + " (" + std::to_string(t.runs) + " runs)" +
               (t.why.empty() ? "" : "\n  " + (t.why.size() > 160 ? t.why.substr(0, 157) + "..." : t.why)));
  }

  const EnvBisectOptions& o_;
  Launcher& launcher_;
  const StackEnv& good_;
  std::map<std::string, SmokeConfig> configs_;
  EnvBisectResult& r_;
  std::map<std::string, RunRecord> reference_;  // the good stack's, by config file
  int sets_ = 0;
};

// An end whose runs did not settle: flaky (exit 4) or not runnable (3).
ExitCode unsettled(const EnvTest& t) {
  return t.why.find(" differs from run 1") != std::string::npos ? ExitCode::kNondeterministic : ExitCode::kEnvironment;
}

}  // namespace

EnvBisectResult bisect_env(const EnvBisectOptions& o, Launcher& launcher) {
  if (o.smokes.empty()) throw BadUsage("bisect-env: name a smoke config");
  if (o.repeats < 1 || o.repeats > 20) throw BadUsage("--repeat: a run count in [1, 20]");
  StackEnv good = read_stack_env(o.good_env), bad = read_stack_env(o.bad_env);
  EnvBisectResult r;
  r.differences = env_differences(good, bad);
  EnvSearch search(o, launcher, good, load_configs(o, good, r.differences), r);
  if (r.differences.empty()) {
    r.code = ExitCode::kBadInput;
    r.message = "nothing to search: " + o.good_env + " and " + o.bad_env + " set the same";
    return r;
  }
  std::error_code ec;
  fs::remove_all(o.out_dir + "/bisect-env", ec);

  // The ends: the good stack (the reference), then every difference.
  EnvTest g, b;
  if (!search.run_set({}, g)) {
    r.code = unsettled(g);
    r.message = "the good stack (" + o.good_env + ") cannot serve as the reference: " + g.why;
    return r;
  }
  std::vector<size_t> all(r.differences.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = i;
  if (!search.run_set(all, b)) {
    r.code = unsettled(b);
    r.message = "the bad stack (" + o.bad_env + ") is flaky or does not run here: " + b.why;
    return r;
  }
  if (!b.failed) {
    r.code = ExitCode::kBadInput;
    r.message = "nothing to search: with every difference of " + o.bad_env + " applied the smokes pass against " +
                o.good_env + "'s record";
    return r;
  }
  std::map<std::vector<size_t>, std::string> why = {{all, b.why}};
  std::vector<size_t> found = ddmin(all.size(), [&](const std::vector<size_t>& s) {
    if (s == all) return true;
    EnvTest t;
    search.run_set(s, t);
    why[s] = t.why;
    return t.failed;
  });
  for (size_t i : found) r.culprit.push_back(r.differences[i]);
  r.divergence = why[found];
  r.code = ExitCode::kRegression;
  r.message = "the curve moves with " + set_text(r.culprit) +
              (r.culprit.size() == 1 ? " alone" : " together (each alone, or any smaller set, does not move it)");
  return r;
}

}  // namespace lockstep
