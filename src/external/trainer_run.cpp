#include "external/trainer_run.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "core/atomic_file.h"
#include "core/error.h"
#include "spec/resume_contract.h"
#include "core/file_hash_cache.h"
#include "core/float_bits.h"
#include "core/install_paths.h"
#include "machine/machine_facts.h"
#include "core/process.h"
#include "external/trainer_report.h"
#include "ingest/metrics.h"
#include "ingest/module_trace_jsonl.h"
#include "ingest/probes_jsonl.h"
#include "record/platform_key.h"

extern char** environ;

namespace lockstep {
namespace fs = std::filesystem;

std::string expand_placeholders(const std::string& text, const std::map<std::string, std::string>& values) {
  std::string out;
  for (size_t i = 0; i < text.size();) {
    if (text[i] == '{') {
      size_t close = text.find('}', i);
      if (close != std::string::npos) {
        auto it = values.find(text.substr(i + 1, close - i - 1));
        if (it != values.end()) {
          out += it->second;
          i = close + 1;
          continue;
        }
      }
    }
    out += text[i++];
  }
  return out;
}

std::string helper_python_dir() {
  if (const char* p = std::getenv("LOCKSTEP_PYTHONPATH"); p && *p) return p;
  std::string dir = shipped_path("python", "python");
  if (dir.empty() || !fs::exists(fs::path(dir) / "lockstep" / "__init__.py"))
    throw EnvironmentError("the Python helper (lockstep/__init__.py) is neither in share/lockstep/python beside "
                           "this lockstep nor in its source tree; set LOCKSTEP_PYTHONPATH to its folder");
  return dir;
}

std::map<std::string, std::string> trainer_base_environment(const std::map<std::string, std::string>& extra,
                                                            const std::string& mode, int intra_op_threads) {
  std::map<std::string, std::string> env;
  for (char** e = environ; *e; ++e) {
    std::string entry = *e;
    size_t eq = entry.find('=');
    if (eq == std::string::npos) continue;
    std::string name = entry.substr(0, eq);
    if (name.rfind("LOCKSTEP_", 0) == 0 && name != "LOCKSTEP_DATA_DIR") continue;
    if (name == "RANK" || name == "WORLD_SIZE" || name == "LOCAL_RANK" || name == "LOCAL_WORLD_SIZE" ||
        name == "MASTER_ADDR" || name == "MASTER_PORT")
      continue;
    env[name] = entry.substr(eq + 1);
  }
  for (const auto& [k, v] : extra) env[k] = v;
  if (mode == "strict") {
    auto ws = env.find("CUBLAS_WORKSPACE_CONFIG");
    if (ws == env.end() || (ws->second != ":4096:8" && ws->second != ":16:8")) env["CUBLAS_WORKSPACE_CONFIG"] = ":4096:8";
  }
  env["OMP_NUM_THREADS"] = std::to_string(intra_op_threads);
  env["MKL_NUM_THREADS"] = std::to_string(intra_op_threads);
  env["PYTHONHASHSEED"] = "0";
  env["TZ"] = "UTC";
  env["LC_ALL"] = "C.UTF-8";
  std::string helper = helper_python_dir();
  auto pp = env.find("PYTHONPATH");
  env["PYTHONPATH"] = helper + (pp == env.end() || pp->second.empty() ? "" : ":" + pp->second);
  return env;
}

namespace {

// The environment of a trainer process: the base one (the contract) and
// the protocol's LOCKSTEP_* variables.
std::map<std::string, std::string> trainer_env(const SmokeConfig& c, uint64_t seed, const std::string& out,
                                               const std::string& pass) {
  std::map<std::string, std::string> env = trainer_base_environment(c.trainer.env, c.mode, c.intra_op_threads);
  env["LOCKSTEP_SEED"] = std::to_string(seed);
  env["LOCKSTEP_OUT"] = out;
  env["LOCKSTEP_DETERMINISM"] = c.mode;
  env["LOCKSTEP_INTRA_OP_THREADS"] = std::to_string(c.intra_op_threads);
  env["LOCKSTEP_INTER_OP_THREADS"] = std::to_string(c.inter_op_threads);
  env["LOCKSTEP_DEVICE"] = c.device;
  env["LOCKSTEP_STEPS"] = std::to_string(c.steps);
  env["LOCKSTEP_PASS"] = pass;
  env["LOCKSTEP_TRACE_STEPS"] = std::to_string(c.trace.steps);
  return env;
}

std::string join_args(const std::vector<std::string>& argv) {
  std::string out;
  for (const auto& a : argv) out += (out.empty() ? "" : " ") + (a.find(' ') == std::string::npos ? a : "'" + a + "'");
  return out;
}

// One trainer process: its argv, environment, fresh output folder, and
// what it is in a message ("data-only pass").
struct Pass {
  std::vector<std::string> argv;
  std::map<std::string, std::string> env;
  std::string out;
  std::string what;
  std::string port;  ///< MASTER_PORT of a multi-rank pass, else ""
};

// Whether a trainer's stderr says a socket could not be bound: c10d's
// TCPStore ("errno: 98 - Address already in use"), Python's OSError
// ("[Errno 98] Address already in use"), Gloo's and NCCL's own wording.
bool shows_bind_failure(const std::string& stderr_tail) {
  for (const char* s : {"Address already in use", "EADDRINUSE", "errno: 98", "[Errno 98]"})
    if (stderr_tail.find(s) != std::string::npos) return true;
  return false;
}

// The cause of a bind failure, for the message: which ports lockstep
// handed out, and the usual reason (a trainer that fixes its own port).
std::string bind_failure_cause(const std::vector<Pass>& passes, size_t failed) {
  std::string msg = "its rendezvous could not bind a port that is in use (\"Address already in use\"). ";
  if (!passes[failed].port.empty()) {
    std::vector<std::string> others;
    for (const Pass& p : passes)
      if (p.port != passes[failed].port && std::find(others.begin(), others.end(), p.port) == others.end())
        others.push_back(p.port);
    std::string list;
    for (const auto& o : others) list += (list.empty() ? "" : ", ") + o;
    msg += "lockstep gives every pass that runs at the same time its own MASTER_PORT (this one " + passes[failed].port +
           (list.empty() ? std::string() : "; the others " + list) + ", all on 127.0.0.1). ";
  } else {
    msg += "The data-only pass runs beside the training pass. ";
  }
  return msg + "A trainer that picks its port itself (os.environ[\"MASTER_PORT\"] = \"12355\", "
               "init_method=\"tcp://...:12355\") binds the same port in both passes: use init_process_group's "
               "env:// rendezvous (MASTER_ADDR and MASTER_PORT from the environment). Otherwise another program "
               "took the port";
}

// Runs `passes` side by side (the data-only pass beside the training pass:
// two processes on two cores cost the time of one), each in its own fresh
// output folder. A failure of the trainer itself is exit 1, quoting its
// stderr; the first pass in `passes` that failed is reported.
void run_passes(const SmokeConfig& c, const std::vector<Pass>& passes, bool ranks) {
  std::vector<ProcessSpec> specs;
  for (const Pass& pass : passes) {
    std::error_code ec;
    fs::remove_all(pass.out, ec);
    fs::create_directories(pass.out, ec);
    if (ec) throw io_error(pass.out, "create the trainer's output folder", ec.value());
    ProcessSpec p;
    p.argv = pass.argv;
    for (const auto& [k, v] : pass.env) p.env.push_back(k + "=" + v);
    p.cwd = c.trainer.resolved_cwd;
    p.stdout_path = pass.out + "/stdout.log";
    p.stderr_path = pass.out + "/stderr.log";
    p.timeout_s = c.trainer.timeout_s;
    specs.push_back(std::move(p));
  }
  std::vector<ProcessOutcome> outcomes = run_processes(specs, /*stop_all_on_failure=*/ranks);
  // The ranks of a run: one killed by a signal explains the others' errors
  // (a closed connection), so it is named first; peers stopped by us never.
  std::vector<size_t> order;
  for (size_t i = 0; i < passes.size(); ++i)
    if (outcomes[i].signal != 0 && !outcomes[i].stopped_for_peer) order.push_back(i);
  for (size_t i = 0; i < passes.size(); ++i)
    if (std::find(order.begin(), order.end(), i) == order.end()) order.push_back(i);
  for (size_t i : order) {
    const ProcessOutcome& o = outcomes[i];
    if (o.ok() || o.stopped_for_peer) continue;
    std::string tail = tail_lines(specs[i].stderr_path, 40);
    std::string quoted;
    size_t start = 0;
    while (start < tail.size()) {
      size_t nl = tail.find('\n', start);
      quoted += "\n  | " + tail.substr(start, nl == std::string::npos ? std::string::npos : nl - start);
      if (nl == std::string::npos) break;
      start = nl + 1;
    }
    std::string what = "the trainer " + o.describe(c.trainer.timeout_s) + " in the " + passes[i].what + ": `" +
                       join_args(passes[i].argv) + "` in " + specs[i].cwd;
    std::string stderr_part = quoted.empty() ? "; it wrote nothing to stderr"
                                             : "; the last lines of its stderr (" + specs[i].stderr_path + "):" + quoted;
    // A port in use is the machine's state, not the trainer's numbers.
    if (!o.timed_out && shows_bind_failure(tail))
      throw EnvironmentError(what + ": " + bind_failure_cause(passes, i) + stderr_part);
    throw Error(ExitCode::kRegression, what + stderr_part);
  }
}

// A path of the config (relative to its folder) after placeholders; it
// must stay inside the process's own output folder `out` (a "{out}/../x"
// would read another run's, or a stale, file).
std::string output_path(const SmokeConfig& c, const std::string& field, const std::string& text,
                        const std::map<std::string, std::string>& values) {
  fs::path p(expand_placeholders(text, values));
  std::string full = (p.is_absolute() ? p : fs::absolute(c.file).parent_path() / p).lexically_normal().string();
  const std::string& out = values.at("out");
  if (full.rfind(out + "/", 0) != 0)
    throw BadInput(c.file, field, "a path inside {out} (" + out + "), got \"" + input_excerpt(text) + "\" = " + full);
  return full;
}

// Each series must stay within [first, end) and reach the end of what was
// trained (its last step within one logging interval of end - 1): a
// trainer that stopped early without failing would otherwise pass on
// fewer steps.
void check_coverage(std::map<std::string, Series>& series, int64_t first, int64_t end, const std::string& file) {
  for (auto& [name, s] : series) {
    s.steps = step_numbers(s);
    if (s.steps.empty()) throw BadInput(file, name, "values for steps " + std::to_string(first) + ".." + std::to_string(end - 1));
    int64_t stride = s.steps.size() > 1 ? s.steps[1] - s.steps[0] : 1;
    if (s.steps.front() < first || s.steps.back() >= end)
      throw BadInput(file, name, "steps in " + std::to_string(first) + ".." + std::to_string(end - 1) +
                                     " (the steps this run trains), got step " +
                                     std::to_string(s.steps.front() < first ? s.steps.front() : s.steps.back()));
    if (s.steps.back() + stride < end)
      throw BadInput(file, name, "values up to step " + std::to_string(end - 1) + " (logged every " +
                                     std::to_string(stride) + "), the last is step " + std::to_string(s.steps.back()) +
                                     ": the trainer stopped early");
  }
}

// After a resume: the two halves must join on the same grid (the resumed
// run logging from the step the stopped one would have logged next).
void check_grid(const std::map<std::string, Series>& series, const std::string& part, const std::string& file) {
  for (const auto& [name, s] : series) {
    if (s.steps.size() < 2) continue;
    int64_t stride = s.steps[1] - s.steps[0];
    for (size_t i = 2; i < s.steps.size(); ++i)
      if (s.steps[i] - s.steps[i - 1] != stride)
        throw BadInput(file, name, "the resumed run to continue the steps of " + part + " every " +
                                       std::to_string(stride) + " step(s), got step " + std::to_string(s.steps[i]) +
                                       " after step " + std::to_string(s.steps[i - 1]));
  }
}

// Empty steps when they are exactly 0..n-1 (the record's dense form).
void compact_steps(Series& s) {
  bool dense = true;
  for (size_t i = 0; i < s.steps.size() && dense; ++i) dense = s.steps[i] == static_cast<int64_t>(i);
  if (dense) s.steps.clear();
}

std::string partial_path(const std::string& checkpoint) { return checkpoint + ".lockstep-part.json"; }

// `n` distinct TCP ports on 127.0.0.1 that are free now, one per pass
// that runs at the same time, for MASTER_PORT (torchrun's env://
// rendezvous; the kernel picks them, as torchrun does). All are bound
// before any is released, so no two passes get the same one. Exit 3 when
// no socket can be bound.
std::vector<std::string> free_loopback_ports(size_t n) {
  std::vector<int> fds;
  std::vector<std::string> ports;
  auto release = [&] {
    for (int fd : fds) ::close(fd);
  };
  for (size_t i = 0; i < n; ++i) {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      release();
      throw EnvironmentError(std::string("socket: ") + std::strerror(errno));
    }
    fds.push_back(fd);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = 0;
    socklen_t len = sizeof a;
    int rc = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
    if (rc == 0) rc = ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    if (rc != 0) {
      int err = errno;
      release();
      throw EnvironmentError(std::string("no free TCP port on 127.0.0.1 for MASTER_PORT: ") + std::strerror(err));
    }
    ports.push_back(std::to_string(ntohs(a.sin_port)));
  }
  release();
  return ports;
}

// The data-only passes at other DataLoader worker counts must give the
// batches of the first, bit for bit: a difference is exit 4 naming the
// batch (the trainer's batches depend on how many workers load them).
void require_same_batches(const std::vector<BatchProbe>& first, int first_workers, const std::vector<BatchProbe>& other,
                          int workers, const std::string& first_path, const std::string& path) {
  auto count = [](int w) { return std::to_string(w) + (w == 1 ? " DataLoader worker" : " DataLoader workers"); };
  const std::string why =
      ": the trainer's batches depend on its worker count (augmentation or noise drawn from a stream each worker "
      "has its own copy of: Python's global random, numpy's global RNG, a generator the dataset owns; draw from a "
      "generator seeded per sample instead, docs/trainers.md). Probes: " + first_path + ", " + path;
  for (size_t i = 0; i < std::min(first.size(), other.size()); ++i)
    if (std::string d = batch_content_difference(first[i], other[i]); !d.empty())
      throw Error(ExitCode::kNondeterministic,
                  "the data-only pass with " + count(workers) + " differs from the one with " + count(first_workers) +
                      " at batch " + std::to_string(i) +
                      (first[i].rank >= 0 ? " (rank " + std::to_string(first[i].rank) + ")" : std::string()) + ": " +
                      d + why);
  if (first.size() != other.size())
    throw Error(ExitCode::kNondeterministic, "the data-only pass with " + count(workers) + " probed " +
                                                 std::to_string(other.size()) + " batches, the one with " +
                                                 count(first_workers) + " " + std::to_string(first.size()) + why);
}

// A multi-rank trainer's ranks must log the same value of every series
// lockstep compares: `other` (rank r's) must equal `zero` (rank 0's) bit for bit.
void check_ranks_agree(const std::map<std::string, Series>& zero, const std::map<std::string, Series>& other, int r,
                       const std::string& path0, const std::string& path) {
  for (const auto& [name, s] : zero) {
    auto it = other.find(name);
    if (it == other.end())
      throw BadInput(path, name, "the series rank 0 logs (" + path0 + "): every rank that logs logs the same series");
    const Series& o = it->second;
    for (size_t i = 0; i < std::min(s.values.size(), o.values.size()); ++i) {
      double a = s.values[i], b = o.values[i];
      if (std::memcmp(&a, &b, sizeof a) != 0 || step_numbers(s)[i] != step_numbers(o)[i])
        throw Error(ExitCode::kRegression,
                    path + ": rank " + std::to_string(r) + " logged " + name + " = " + format_double(b) + " at step " +
                        std::to_string(step_numbers(o)[i]) + ", rank 0 logged " + format_double(a) + " at step " +
                        std::to_string(step_numbers(s)[i]) + " (" + path0 + "): a series lockstep compares is a "
                        "global one, the same on every rank (log the all-reduced value, not each rank's own)");
    }
    if (s.values.size() != o.values.size())
      throw Error(ExitCode::kRegression, path + ": rank " + std::to_string(r) + " logged " +
                                             std::to_string(o.values.size()) + " values of " + name + ", rank 0 " +
                                             std::to_string(s.values.size()) + " (" + path0 + ")");
  }
}


}  // namespace

TrainerRun run_trainer(const SmokeConfig& c, const TrainerRunOptions& o) {
  const TrainerConfig& t = c.trainer;
  if (!c.has_trainer()) throw BadUsage(c.file + ": no trainer section");
  // Plain variables, not a structured binding: the lambdas below capture
  // the seed (C++17 lets no lambda capture a structured binding; clang says so).
  const std::pair<uint64_t, bool> base = base_seed(c, o.seed.empty() ? nullptr : o.seed.c_str());
  const uint64_t seed = base.first;
  const bool overridden = base.second;
  TrainerRun result;
  RunRecord& rec = result.record;
  bool stopping = o.stop_after > 0;
  bool resuming = !o.resume.empty();
  if ((stopping || resuming) && t.resume_stop.empty())
    throw BadInput(c.file, "trainer.resume", "a resume section (how the command stops at a checkpoint and continues)");
  if (!o.train && !t.has_data_pass())
    throw BadUsage(c.file + ": `lockstep probe` runs the data-only pass, and this trainer has none (it writes no "
                   "batch probes: trainer.probes)");
  std::string work = fs::absolute(o.work_dir).lexically_normal().string();
  std::string data_dir_path = data_dir();
  std::string config_dir = fs::absolute(c.file).parent_path().lexically_normal().string();

  // The resumed run starts from what the stopped run recorded.
  RunRecord partial;
  int64_t resume_at = o.stop_after;
  if (resuming) {
    std::string part = partial_path(o.resume);
    std::error_code ec;
    if (!fs::exists(part, ec))
      throw BadUsage("--resume " + o.resume + ": no " + part + " beside it (it is written by `lockstep run --stop-after`)");
    std::string sum = part + ".xxh3";
    if (!fs::exists(sum, ec))
      throw BadInput(part, "", "its XXH3-128 in " + sum + " (missing: the stopped run was interrupted, or the file "
                                                          "was copied without it; stop the run again)");
    if (fs::file_size(sum, ec) > 64 || ec)  // 32 hex digits and a newline
      throw BadInput(sum, "", "the XXH3-128 of " + part + " (32 hex digits), got a file of another size or kind");
    std::string want = read_file(sum), got = file_xxh3(part);
    if (!want.empty() && want.back() == '\n') want.pop_back();
    if (want != got)
      throw BadInput(part, "", "XXH3-128 " + printable_message(want.substr(0, 40), false) + " as " + sum +
                                   " records, got " + got + " (the file changed after the run stopped)");
    partial = read_run_record(part);
    if (partial.smoke != c.name) throw BadInput(part, "smoke", "\"" + c.name + "\", got \"" + input_excerpt(partial.smoke) + "\"");
    if (partial.config_hash != c.config_hash)
      throw BadInput(part, "config_hash", c.config_hash + " (" + c.file + "'s), got " + partial.config_hash +
                                              ": the run was stopped under another config");
    if (partial.seed != seed)
      throw BadInput(part, "seed", std::to_string(seed) + ", got " + std::to_string(partial.seed));
    // The determinism contract (intra-op threads, mode, ...) of both halves is one.
    require_resume_contract(part, expected_contract(c), partial.contract, "this run's: " + c.file + " and the overrides");
    int64_t world = c.distributed.configured ? c.distributed.world_size : 1;
    auto w = partial.contract.find("distributed.world_size");
    std::string stopped_on = w == partial.contract.end() ? "1" : w->second;
    if (stopped_on != std::to_string(world))
      throw BadInput(part, "contract.distributed.world_size",
                     std::to_string(world) + " (this run's ranks, distributed.world_size or --world-size: a run "
                     "resumes on as many ranks as it stopped on), got " + stopped_on);
    // The step it stopped after: the series' last step + 1; its train
    // probes, when the trainer writes them, are every rank's, W per step.
    resume_at = 0;
    for (const auto& [name, s] : partial.series)
      if (!s.steps.empty()) resume_at = std::max(resume_at, s.steps.back() + 1);
    if (resume_at < 1 || resume_at >= c.steps)
      throw BadInput(part, "series", "steps 0 to at most " + std::to_string(c.steps - 2) + " (a run stopped before "
                                     "the last of the " + std::to_string(c.steps) + " steps), got " +
                                     std::to_string(resume_at) + " steps");
    size_t probes = t.probes.empty() ? 0 : static_cast<size_t>(resume_at * world);
    if (partial.train_probes.size() != probes)
      throw BadInput(part, "train_probes", std::to_string(probes) + " probes (" +
                                               (t.probes.empty() ? std::string("the trainer writes none")
                                                                 : "one per rank and step: " + std::to_string(world) +
                                                                       " x " + std::to_string(resume_at)) +
                                               "), got " + std::to_string(partial.train_probes.size()));
  }
  std::string checkpoint = stopping ? fs::absolute(o.checkpoint).string() : resuming ? fs::absolute(o.resume).string() : "";

  // A multi-rank trainer: `world` processes per pass, each with torchrun's
  // variables (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR,
  // MASTER_PORT: env:// rendezvous on 127.0.0.1, a port of its own per
  // pass) and its own output folder <pass>/rank-<r> ({out}); {rank} in
  // the command and paths.
  const bool multi = c.distributed.configured;
  const int world = multi ? c.distributed.world_size : 1;
  auto rank_dir = [&](const std::string& base, int r) { return multi ? base + "/rank-" + std::to_string(r) : base; };
  auto rank_env = [&](std::map<std::string, std::string> env, int r, const std::string& port) {
    if (!multi) return env;
    env["RANK"] = env["LOCAL_RANK"] = std::to_string(r);
    env["WORLD_SIZE"] = env["LOCAL_WORLD_SIZE"] = std::to_string(world);
    env["MASTER_ADDR"] = "127.0.0.1";
    env["MASTER_PORT"] = port;
    env["LOCKSTEP_DISTRIBUTED_BACKEND"] = c.distributed.backend;
    return env;
  };
  auto rank_word = [&](int r) { return multi ? " of rank " + std::to_string(r) : std::string(); };

  // {workers}: the training pass runs the first count, a data-only pass runs each.
  const std::vector<int> worker_counts = t.workers.empty() ? std::vector<int>{-1} : t.workers;
  auto values_for = [&](const std::string& out, int r, int workers) {
    std::map<std::string, std::string> values{{"steps", std::to_string(c.steps)},
                                              {"seed", std::to_string(seed)},
                                              {"out", out},
                                              {"data", data_dir_path},
                                              {"config_dir", config_dir},
                                              {"resume_at", std::to_string(resume_at)},
                                              {"checkpoint", checkpoint},
                                              {"rank", std::to_string(r)}};
    if (workers >= 0) values["workers"] = std::to_string(workers);
    return values;
  };
  auto argv_for = [&](const std::string& out, int r, int workers, const std::vector<std::string>& extra) {
    auto values = values_for(out, r, workers);
    std::vector<std::string> argv;
    for (const auto& a : t.command) argv.push_back(expand_placeholders(a, values));
    for (const auto& a : extra) argv.push_back(expand_placeholders(a, values));
    return argv;
  };

  // The processes: the data-only pass (the batches the trainer's
  //    DataLoader yields, probed; one per worker count) beside the
  //    training pass (whole, stopping at a checkpoint, or resuming). A run
  //    that stops at a checkpoint needs no data-only pass: the resumed run
  //    makes it.
  std::vector<Pass> passes;
  const bool data_pass = t.has_data_pass() && !stopping;
  std::vector<std::string> data_outs;  // one per worker count
  for (size_t k = 0; data_pass && k < worker_counts.size(); ++k)
    data_outs.push_back(work + (k == 0 ? std::string("/data") : "/data-workers-" + std::to_string(worker_counts[k])));
  const std::string data_out = data_pass ? data_outs.front() : work + "/data";
  const std::string out = work + "/train";
  const std::vector<std::string> ports =
      multi ? free_loopback_ports(data_outs.size() + (o.train ? 1 : 0)) : std::vector<std::string>{};
  auto port_of = [&](size_t pass) { return multi ? ports[pass] : std::string(); };
  if (multi) {  // rank folders live inside the pass folders, made fresh here
    std::error_code ec;
    for (const auto& d : data_outs) fs::remove_all(d, ec);
    fs::remove_all(out, ec);
  }
  for (size_t k = 0; k < data_outs.size(); ++k) {
    std::string with = t.workers.empty() ? "" : " with " + std::to_string(worker_counts[k]) + " workers";
    for (int r = 0; r < world; ++r)
      passes.push_back({argv_for(rank_dir(data_outs[k], r), r, worker_counts[k], t.data_only),
                        rank_env(trainer_env(c, seed, rank_dir(data_outs[k], r), "data"), r, port_of(k)),
                        rank_dir(data_outs[k], r), "data-only pass" + with + rank_word(r), port_of(k)});
  }
  const std::string train_port = port_of(data_outs.size());
  auto env = rank_env(trainer_env(c, seed, rank_dir(out, 0), "train"), 0, train_port);
  std::vector<std::string> extra = stopping ? t.resume_stop : resuming ? t.resume_continue : std::vector<std::string>{};
  for (int r = 0; o.train && r < world; ++r)
    passes.push_back({argv_for(rank_dir(out, r), r, worker_counts.front(), extra),
                      rank_env(trainer_env(c, seed, rank_dir(out, r), "train"), r, train_port), rank_dir(out, r),
                      (stopping   ? "run stopping at step " + std::to_string(resume_at)
                       : resuming ? "run resumed at step " + std::to_string(resume_at)
                                  : std::string("training pass")) + rank_word(r),
                      train_port});
  run_passes(c, passes, multi);
  // What the trainer says about itself, in every process: its contract
  //    must be the config's. The record keeps the training pass's report.
  auto checked_report = [&](const std::string& dir) {
    TrainerReport r = read_trainer_report(dir + "/" + kTrainerReportFile);
    if (std::string why = contract_mismatch(expected_contract(c), r.contract); !why.empty())
      throw EnvironmentError(dir + "/" + kTrainerReportFile + ": the trainer ran under another determinism "
                             "contract than " + c.file + " asks for (" + c.mode + "): " + why);
    return r;
  };
  std::string report_dir = rank_dir(o.train ? out : data_out, 0);
  for (int r = 0; r < world; ++r) {
    for (size_t k = 0; k < data_outs.size(); ++k)
      if (o.train || r > 0 || k > 0) checked_report(rank_dir(data_outs[k], r));
    if (o.train && r > 0) checked_report(rank_dir(out, r));
  }
  TrainerReport report = checked_report(report_dir);

  // The data-only passes' probes: one list, the same at every worker count.
  if (data_pass) {
    std::vector<BatchProbe> first;
    std::string first_path;
    for (size_t k = 0; k < data_outs.size(); ++k) {
      std::vector<std::vector<BatchProbe>> per_rank;
      std::string path;
      for (int r = 0; r < world; ++r) {
        std::string p = output_path(c, "trainer.probes", t.probes, values_for(rank_dir(data_outs[k], r), r, worker_counts[k]));
        if (path.empty()) path = p;
        per_rank.push_back(read_probes_jsonl(p));
      }
      std::vector<BatchProbe> probes =
          multi ? interleave_rank_probes(per_rank, data_outs[k] + " (data-only pass)") : std::move(per_rank.front());
      if (k == 0) {
        first = std::move(probes);
        first_path = path;
      } else {
        require_same_batches(first, worker_counts.front(), probes, worker_counts[k], first_path, path);
      }
    }
    rec.probes = std::move(first);
  } else if (!t.has_data_pass() && o.train) {
    result.notes.push_back(missing_data_pass_note(c));
  }

  // Metrics and the probes of the batches it trained on.
  if (o.train) {
    MetricsSpec spec;
    spec.format = parse_metrics_format(t.metrics_format);
    spec.path = output_path(c, "trainer.metrics.path", t.metrics_path, values_for(rank_dir(out, 0), 0, worker_counts.front()));
    spec.series = t.series;
    spec.step_key = t.step_key;
    spec.mllog_step = t.mllog_step;
    std::map<std::string, Series> series = read_metrics(spec);
    int64_t first = resuming ? resume_at : 0;
    int64_t end = stopping ? resume_at : c.steps;
    check_coverage(series, first, end, spec.path);
    // Other ranks: what they log must be the same global series (many
    // trainers log on rank 0 only: a rank without the file is not read).
    for (int r = 1; r < world; ++r) {
      MetricsSpec other = spec;
      other.path = output_path(c, "trainer.metrics.path", t.metrics_path, values_for(rank_dir(out, r), r, worker_counts.front()));
      std::error_code ec;
      if (other.path == spec.path || !fs::exists(other.path, ec)) {
        result.notes.push_back("rank " + std::to_string(r) + " logged no metrics (" + other.path +
                               "); rank 0's are the run's");
        continue;
      }
      std::map<std::string, Series> theirs = read_metrics(other);
      check_coverage(theirs, first, end, other.path);
      check_ranks_agree(series, theirs, r, spec.path, other.path);
    }
    if (!t.probes.empty()) {
      std::vector<std::vector<BatchProbe>> per_rank;
      int64_t trained = end - (resuming ? resume_at : 0);
      for (int r = 0; r < world; ++r) {
        std::string probes = output_path(c, "trainer.probes", t.probes, values_for(rank_dir(out, r), r, worker_counts.front()));
        per_rank.push_back(read_probes_jsonl(probes, resuming ? resume_at : 0));
        // One probe per step trained: a trainer that probes some batches only
        // would leave the others unchecked.
        if (static_cast<int64_t>(per_rank.back().size()) != trained)
          throw BadInput(probes, "", "one probe per step trained (" + std::to_string(trained) + "), got " +
                                         std::to_string(per_rank.back().size()));
      }
      rec.train_probes = multi ? interleave_rank_probes(per_rank, work + " (training pass)",
                                                        resuming ? resume_at * world : 0)
                               : std::move(per_rank.front());
    }
    // The module trace of the helper's ModuleTracer (rank 0's), when written.
    std::string trace_file = output_path(c, "trainer.module_trace", "{out}/module_trace.jsonl", values_for(rank_dir(out, 0), 0, worker_counts.front()));
    std::error_code trace_ec;
    // A link that leads nowhere is read too (and refused, naming the file).
    bool trace_present = fs::exists(trace_file, trace_ec) || fs::is_symlink(fs::symlink_status(trace_file, trace_ec));
    if (c.trace.steps > 0 && trace_present) {
      rec.module_trace = read_module_trace_jsonl(trace_file, c.trace.steps, resuming ? resume_at : 0);
      if (rec.module_trace.entries.empty() && (!resuming || resume_at < c.trace.steps))
        result.notes.push_back(trace_file + " holds no entry although trace.steps is " + std::to_string(c.trace.steps) +
                               ": call tracer.step(step) before each step's forward (python/lockstep ModuleTracer), "
                               "or set trace.steps to 0");
      if (multi)
        for (auto& e : rec.module_trace.entries) e.rank = 0;
    }
    if (resuming) {
      for (auto& [name, s] : series) {
        auto p = partial.series.find(name);
        if (p == partial.series.end()) throw BadInput(partial_path(o.resume), "series." + name, "the series the resumed run logs");
        Series merged = p->second;
        merged.steps = step_numbers(merged);
        if (merged.dtype != s.dtype)
          throw BadInput(spec.path, name, std::string(dtype_name(merged.dtype)) + " as before the checkpoint, got " + dtype_name(s.dtype));
        merged.values.insert(merged.values.end(), s.values.begin(), s.values.end());
        merged.steps.insert(merged.steps.end(), s.steps.begin(), s.steps.end());
        s = std::move(merged);
      }
      if (!partial.module_trace.entries.empty()) {
        ModuleTrace merged = partial.module_trace;
        merged.steps = c.trace.steps;
        for (auto& e : rec.module_trace.entries) merged.entries.push_back(std::move(e));
        rec.module_trace = std::move(merged);
      }
      std::vector<BatchProbe> probes = partial.train_probes;
      probes.insert(probes.end(), rec.train_probes.begin(), rec.train_probes.end());
      rec.train_probes = std::move(probes);
    }
    if (resuming) check_grid(series, partial_path(o.resume), spec.path);
    if (!stopping)
      for (auto& [name, s] : series) compact_steps(s);
    rec.series = std::move(series);
  }

  // The record: the machine's facts, the trainer's, the contract.
  MachineOptions m;
  m.device = c.device;
  m.repo_path = config_dir;
  m.env = env;
  m.use_env = true;
  m.threads_pinned = true;  // the trainer's contract pins them (expected_contract), read back in its report
  rec.fingerprint = machine_fingerprint(m);
  for (const auto& [k, v] : t.env) rec.fingerprint["trainer.env." + k] = {v, true};
  rec.fingerprint["trainer.command"] = {join_args(t.command), false};
  // The rest of what the trainer was handed (the numerics variables are env.*).
  rec.fingerprint["trainer.env.PYTHONHASHSEED"] = {env.at("PYTHONHASHSEED"), true};
  rec.fingerprint["trainer.env.PYTHONPATH"] = {env.at("PYTHONPATH"), false};
  add_trainer_facts(report, report_dir + "/" + kTrainerReportFile, rec);
  apply_package_relevance(t, rec.fingerprint);
  if (multi) {
    rec.contract["distributed.world_size"] = std::to_string(world);
    rec.contract["distributed.backend"] = c.distributed.backend;
  }
  rec.fingerprint["config.values_xxh3"] = {c.values_hash, false, true};
  rec.config = c.values_fields;
  rec.smoke = c.name;
  rec.config_hash = c.config_hash;
  rec.seed = seed;
  rec.seed_overridden = overridden;
  rec.device = c.device;
  rec.platform = platform_key(rec.fingerprint);
  rec.steps = c.steps;

  if (stopping) {
    write_run_record(partial_path(checkpoint), rec);
    // Its hash beside it: an edited or damaged partial record is refused on resume.
    write_file_atomically(partial_path(checkpoint) + ".xxh3", file_xxh3(partial_path(checkpoint)) + "\n");
    result.stopped_at_checkpoint = true;
  }
  return result;
}

}  // namespace lockstep
