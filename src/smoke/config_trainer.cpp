// The "trainer" section: a team's own trainer run as a command
// (smoke/config_sections.h, docs/trainers.md).
#include "smoke/config_sections.h"

#include <algorithm>
#include <charconv>
#include <cctype>
#include <cstdlib>
#include <filesystem>

#include "core/error.h"
#include "core/hash.h"
#include "core/json_io.h"
#include "machine/driver_version.h"
#include "smoke/config_keys.h"
#include "smoke/golden_store.h"

namespace lockstep {
namespace fs = std::filesystem;

namespace {

// A list of command-line arguments: strings, at most 4096 of them.
std::vector<std::string> read_args(const JsonView& list, bool nonempty) {
  list.expect_array();
  if (nonempty && list.size() == 0) list.fail("a non-empty list of arguments");
  if (list.size() > 4096) list.fail("at most 4096 arguments");
  std::vector<std::string> out;
  for (size_t i = 0; i < list.size(); ++i) {
    out.push_back(list.at(i).as_string());
    if (out.back().find('\0') != std::string::npos) list.at(i).fail("an argument without NUL bytes");
  }
  return out;
}

// Placeholders an argument may hold; anything else in braces is a typo.
// {resume_at} and {checkpoint} belong to trainer.resume, {workers} to a
// trainer with a `workers` list.
void check_placeholders(const JsonView& node, const std::string& text, bool resume, bool workers) {
  static const std::vector<std::string> names = {"steps", "seed", "out", "data", "config_dir", "rank"};
  for (size_t open = text.find('{'); open != std::string::npos; open = text.find('{', open + 1)) {
    size_t close = text.find('}', open);
    if (close == std::string::npos) node.fail("a closed placeholder such as {out}, got \"" + input_excerpt(text) + "\"");
    std::string name = text.substr(open + 1, close - open - 1);
    if (name == "workers" && !workers)
      node.fail("{workers} only with a trainer.workers list (the DataLoader worker counts to run the data-only "
                "pass at), got \"" + input_excerpt(text) + "\"");
    bool known = std::find(names.begin(), names.end(), name) != names.end() || (workers && name == "workers") ||
                 (resume && (name == "resume_at" || name == "checkpoint"));
    if (!known)
      node.fail("placeholders {steps}, {seed}, {out}, {data}, {config_dir}, {rank}" +
                std::string(workers ? ", {workers}" : "") +
                std::string(resume ? ", {resume_at}, {checkpoint}" : "") + ", got {" + name + "}");
  }
}

// A distribution name as PEP 503 normalises it: lower case, runs of -_. as "-".
std::string normalized_distribution(const std::string& name) {
  std::string out;
  for (char ch : name) {
    if (ch == '-' || ch == '_' || ch == '.') {
      if (out.empty() || out.back() != '-') out += '-';
    } else {
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    }
  }
  return out;
}

// trainer.workers: 1 to 8 distinct DataLoader worker counts, 0 to 64 each.
std::vector<int> read_worker_counts(const JsonView& list) {
  list.expect_array();
  if (list.size() == 0 || list.size() > 8) list.fail("1 to 8 DataLoader worker counts, e.g. [2, 0]");
  std::vector<int> out;
  for (size_t i = 0; i < list.size(); ++i) {
    int w = static_cast<int>(list.at(i).as_int(0, 64));
    if (std::find(out.begin(), out.end(), w) != out.end())
      list.at(i).fail("a worker count not already in the list (" + std::to_string(w) + " is)");
    out.push_back(w);
  }
  return out;
}

// trainer.packages: {"relevant": [names], "informational": [names]}.
void read_packages(const JsonView& p, TrainerConfig& tc) {
  p.allow_keys(keys_under("trainer.packages"));
  for (const char* kind : {"relevant", "informational"}) {
    if (!p.has(kind)) continue;
    JsonView list = p.at(kind);
    list.expect_array();
    if (list.size() > 4096) list.fail("at most 4096 distribution names");
    auto& into = std::string(kind) == "relevant" ? tc.packages_relevant : tc.packages_informational;
    for (size_t i = 0; i < list.size(); ++i) {
      std::string name = list.at(i).as_string();
      // PEP 508: letters, digits, '-', '_' and '.', starting and ending with a letter or digit.
      bool ok = !name.empty() && name.size() <= 200 && std::isalnum(static_cast<unsigned char>(name.front())) &&
                std::isalnum(static_cast<unsigned char>(name.back()));
      for (char ch : name) ok = ok && (std::isalnum(static_cast<unsigned char>(ch)) || ch == '-' || ch == '_' || ch == '.');
      if (!ok) list.at(i).fail("a Python distribution name such as \"scikit-learn\", got \"" + input_excerpt(name) + "\"");
      std::string normal = normalized_distribution(name);
      if (std::find(into.begin(), into.end(), normal) != into.end())
        list.at(i).fail("a distribution named once; \"" + normal + "\" is already listed");
      into.push_back(normal);
    }
  }
  for (const auto& n : tc.packages_relevant)
    if (std::find(tc.packages_informational.begin(), tc.packages_informational.end(), n) !=
        tc.packages_informational.end())
      p.fail("a distribution in one list only; \"" + n + "\" is both relevant and informational");
}

// A path the trainer writes into its {out}: no NUL byte, and not a file
// of lockstep's own there (the process's logs, the helper's report, the
// module trace), which the trainer would overwrite or lockstep misread.
void require_own_output_path(const JsonView& node, const std::string& path) {
  if (path.find('\0') != std::string::npos) node.fail("a path without NUL bytes");
  static const std::vector<std::string> own = {"stdout.log", "stderr.log", "lockstep-trainer.json",
                                               "module_trace.jsonl"};
  for (const auto& name : own)
    if (path == "{out}/" + name)
      node.fail("a file of the trainer's own under {out}; " + name + " there is lockstep's (the process's log, "
                "the helper's report or module trace)");
}

// trainer.metrics: the format, the path under {out}, the series and the
// step key of the trainer's own metric log (ingest/metrics.h).
void read_trainer_metrics(const JsonView& m, TrainerConfig& tc, bool workers) {
  m.allow_keys(keys_under("trainer.metrics"));
  tc.metrics_format = m.at("format").as_enum({"tensorboard", "jsonl", "mllog", "csv"});
  tc.metrics_path = m.at("path").as_string();
  if (tc.metrics_path.empty()) m.at("path").fail("a file or folder");
  check_placeholders(m.at("path"), tc.metrics_path, false, workers);
  require_own_output_path(m.at("path"), tc.metrics_path);
  // Each process writes into its own folder: a fixed path would be shared
  // by the data-only and training passes, and by the runs of one check.
  if (tc.metrics_path.find("{out}") == std::string::npos)
    m.at("path").fail("a path under {out} (each trainer process's own output folder), e.g. \"{out}/metrics.jsonl\"");
  JsonView series = m.at("series");
  series.expect_object();
  if (series.keys().empty()) series.fail("at least one series, e.g. {\"loss\": \"train/loss\"}");
  for (const auto& k : series.keys()) {
    if (!is_series_name(k)) series.at(k).fail("a series name without spaces or quotes (1 to 200 characters)");
    tc.series[k] = series.at(k).as_string();
    if (tc.series[k].empty() || tc.series[k].find('\0') != std::string::npos)
      series.at(k).fail("the tag, key or column to read (no NUL bytes)");
  }
  if (m.has("step")) {
    if (tc.metrics_format != "jsonl" && tc.metrics_format != "csv")
      m.at("step").fail("no step key for format " + tc.metrics_format + " (jsonl and csv only)");
    tc.step_key = m.at("step").as_string();
    if (tc.step_key.find('\0') != std::string::npos) m.at("step").fail("a step field name without NUL bytes");
  }
  if (m.has("mllog_step")) {
    if (tc.metrics_format != "mllog") m.at("mllog_step").fail("no mllog_step for format " + tc.metrics_format);
    tc.mllog_step = m.at("mllog_step").as_enum({"epoch_num", "samples_count", "step"});
  }
}

// trainer.inputs: 1 to 64 glob patterns, {data} and {config_dir} the only
// placeholders (external/trainer_inputs.h expands and hashes them).
void read_inputs(const JsonView& in, TrainerConfig& tc) {
  in.expect_array();
  if (in.size() == 0 || in.size() > 64)
    in.fail("1 to 64 glob patterns of the data files the trainer reads, got " + std::to_string(in.size()));
  for (size_t i = 0; i < in.size(); ++i) {
    std::string pattern = in.at(i).as_string();
    std::string rest = pattern;
    for (const char* allowed : {"{data}", "{config_dir}"})
      for (size_t at; (at = rest.find(allowed)) != std::string::npos;) rest.erase(at, std::string(allowed).size());
    if (pattern.empty() || pattern.find('\0') != std::string::npos || rest.find_first_of("{}") != std::string::npos)
      in.at(i).fail("a glob pattern relative to trainer.cwd (no NUL bytes; placeholders {data} and {config_dir} "
                    "only), e.g. \"data/*.bin\", got \"" + input_excerpt(pattern) + "\"");
    tc.inputs.push_back(pattern);
  }
}

// trainer.env: extra variables, none that carries lockstep's contract.
void read_env(const JsonView& e, TrainerConfig& tc) {
  e.expect_object();
  for (const auto& k : e.keys()) {
    if (k.empty() || k.find('=') != std::string::npos || k.find('\0') != std::string::npos)
      e.at(k).fail("an environment variable name (no '=', no NUL)");
    static const std::vector<std::string> contract_vars = {"OMP_NUM_THREADS", "MKL_NUM_THREADS", "PYTHONHASHSEED",
                                                           "TZ", "LC_ALL", "CUBLAS_WORKSPACE_CONFIG"};
    if (k.rfind("LOCKSTEP_", 0) == 0 ||
        std::find(contract_vars.begin(), contract_vars.end(), k) != contract_vars.end())
      e.at(k).fail("a variable lockstep does not set itself (LOCKSTEP_*, OMP_NUM_THREADS, MKL_NUM_THREADS, "
                   "PYTHONHASHSEED, TZ, LC_ALL and CUBLAS_WORKSPACE_CONFIG carry the contract)");
    tc.env[k] = e.at(k).as_string();
    if (tc.env[k].find('\0') != std::string::npos) e.at(k).fail("a value without NUL bytes");
  }
}

}  // namespace

void read_trainer(const JsonView& t, SmokeConfig& c) {
  TrainerConfig& tc = c.trainer;
  t.allow_keys(keys_under("trainer"));
  if (t.has("workers")) tc.workers = read_worker_counts(t.at("workers"));
  const bool workers = !tc.workers.empty();
  JsonView cmd = t.at("command");
  tc.command = read_args(cmd, true);
  for (size_t i = 0; i < tc.command.size(); ++i) check_placeholders(cmd.at(i), tc.command[i], false, workers);
  if (tc.command.front().empty()) cmd.at(0).fail("a program name or path");
  fs::path config_dir = fs::absolute(c.file).parent_path();
  if (t.has("cwd")) {
    tc.cwd = t.at("cwd").as_string();
    if (tc.cwd.find('\0') != std::string::npos || tc.cwd.find_first_of("{}") != std::string::npos)
      t.at("cwd").fail("a folder without NUL bytes or placeholders (relative to the config's folder), got \"" +
                       input_excerpt(tc.cwd) + "\"");
  }
  fs::path cwd(tc.cwd);
  tc.resolved_cwd = (cwd.is_absolute() ? cwd : config_dir / cwd).lexically_normal().string();
  if (t.has("timeout_s")) tc.timeout_s = t.at("timeout_s").as_int(1, 7 * 24 * 3600);
  read_trainer_metrics(t.at("metrics"), tc, workers);
  if (t.has("probes")) {
    tc.probes = t.at("probes").as_string();
    check_placeholders(t.at("probes"), tc.probes, false, workers);
    require_own_output_path(t.at("probes"), tc.probes);
    if (tc.probes == tc.metrics_path)
      t.at("probes").fail("a file other than trainer.metrics.path (" + input_excerpt(tc.metrics_path) + ")");
    if (tc.probes.find("{out}") == std::string::npos)
      t.at("probes").fail("a path under {out} (each trainer process's own output folder), e.g. \"{out}/probes.jsonl\"");
  }
  // The data-only pass runs whenever the trainer writes probes; its own
  // arguments may be none ([]: the trainer reads LOCKSTEP_PASS=data).
  if (t.has("data_only")) {
    tc.data_only = read_args(t.at("data_only"), false);
    if (tc.probes.empty()) t.at("data_only").fail("a \"probes\" file beside it (the data-only pass writes probes)");
    for (size_t i = 0; i < tc.data_only.size(); ++i)
      check_placeholders(t.at("data_only").at(i), tc.data_only[i], false, workers);
  }
  if (workers) {
    if (tc.probes.empty())
      t.at("workers").fail("a \"probes\" file beside it (the data-only passes at each worker count compare "
                           "their batches)");
    bool used = false;
    for (const auto* args : {&tc.command, &tc.data_only})
      for (const auto& a : *args) used = used || a.find("{workers}") != std::string::npos;
    if (!used)
      t.at("workers").fail("{workers} in command or data_only (how the trainer is told its DataLoader's "
                           "num_workers; without it every pass would run the same count)");
  }
  if (t.has("resume")) {
    JsonView r = t.at("resume");
    r.allow_keys(keys_under("trainer.resume"));
    tc.resume_stop = read_args(r.at("stop"), true);
    tc.resume_continue = read_args(r.at("continue"), true);
    for (size_t i = 0; i < tc.resume_stop.size(); ++i)
      check_placeholders(r.at("stop").at(i), tc.resume_stop[i], true, workers);
    for (size_t i = 0; i < tc.resume_continue.size(); ++i)
      check_placeholders(r.at("continue").at(i), tc.resume_continue[i], true, workers);
  }
  if (t.has("packages")) read_packages(t.at("packages"), tc);
  if (t.has("inputs")) read_inputs(t.at("inputs"), tc);
  if (t.has("env")) read_env(t.at("env"), tc);
}

}  // namespace lockstep
