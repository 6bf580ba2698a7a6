#include "external/trainer_run.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <set>

#include "core/atomic_file.h"
#include "core/error.h"
#include "spec/resume_contract.h"
#include "core/file_hash_cache.h"
#include "core/float_bits.h"
#include "core/install_paths.h"
#include "machine/machine_facts.h"
#include "core/process.h"
#include "external/trainer_inputs.h"
#include "external/trainer_report.h"
#include "ingest/metrics.h"
#include "ingest/module_trace_jsonl.h"
#include "ingest/probes_jsonl.h"
#include "ingest/series_builder.h"
#include "smoke/finish_record.h"

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
  if (c.trace.ops) env["LOCKSTEP_TRACE_OPS"] = "1";
  // A planted learning-rate change (`run --lr-scale`, calibrate's detection
  // search); python/lockstep's lr_scale() reads it.
  if (c.lr_scale != 1) env["LOCKSTEP_LR_SCALE"] = format_double(c.lr_scale);
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
    msg += "Other processes of the same trainer run at the same time (the data-only pass beside the first training "
           "pass; check's repeats and resume check with -j). ";
  }
  return msg + "A trainer that picks its port itself (os.environ[\"MASTER_PORT\"] = \"12355\", "
               "init_method=\"tcp://...:12355\") binds the same port in each of them: use init_process_group's "
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
    p.what = c.file + ": trainer.command[0]";
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

// A file the config says the trainer writes (`field`, at `path` inside its
// output folder `out`): exit 2 naming the config's field when the trainer
// exited 0 without writing it, with what the folder holds (a misspelt
// name shows there).
void require_written(const SmokeConfig& c, const std::string& field, const std::string& path, const std::string& out) {
  std::error_code ec;
  if (fs::exists(path, ec) || fs::is_symlink(fs::symlink_status(path, ec))) return;  // a dangling link is read, and named
  std::vector<std::string> held;
  size_t n = 0;
  for (fs::recursive_directory_iterator it(out, ec), end; !ec && it != end && n < 200; it.increment(ec), ++n)
    if (it->is_regular_file(ec)) held.push_back(fs::path(it->path()).lexically_relative(out).generic_string());
  std::sort(held.begin(), held.end());
  std::string list;
  for (size_t i = 0; i < held.size() && i < 10; ++i) list += (i ? ", " : "") + held[i];
  if (held.size() > 10) list += ", ...";
  throw BadInput(c.file, field,
                 "the path the trainer writes; it exited 0 without writing " + path +
                     (held.empty() ? std::string(" ({out} is empty)") : " ({out} holds " + list + ")"));
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
// before any is released, so no two passes get the same one, nor two runs
// of this process. Exit 3 when
// no socket can be bound.
std::vector<std::string> free_loopback_ports(size_t n) {
  std::vector<int> fds;
  std::vector<std::string> ports;
  int retries = 0;
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
    // Never a port this process handed out before: `check -j` runs several
    // trainers at once, and a port just released may come back from bind.
    static std::mutex given_mu;
    static std::set<int> given;
    std::lock_guard<std::mutex> lock(given_mu);
    if (!given.insert(ntohs(a.sin_port)).second && ++retries < 64) {
      --i;  // keep this socket bound (so the kernel moves on) and take another
      continue;
    }
    ports.push_back(std::to_string(ntohs(a.sin_port)));
  }
  release();
  return ports;
}

// The data-only passes at other DataLoader worker counts must give the
// batches of the first, bit for bit: a difference is exit 4 naming the
// batch (the trainer's batches depend on how many workers load them).
// Returns that message, "" when they agree.
std::string worker_count_difference(const std::vector<BatchProbe>& first, int first_workers,
                                    const std::vector<BatchProbe>& other, int workers, const std::string& first_path,
                                    const std::string& path) {
  auto count = [](int w) { return std::to_string(w) + (w == 1 ? " DataLoader worker" : " DataLoader workers"); };
  const std::string why =
      ": the trainer's batches depend on its worker count (augmentation or noise drawn from a stream each worker "
      "has its own copy of: torch's global generator (torch.randn, torch.rand), Python's global random, numpy's "
      "global RNG, a generator the dataset owns; draw from a "
      "generator seeded per sample instead, docs/trainers.md). Probes: " + first_path + ", " + path;
  for (size_t i = 0; i < std::min(first.size(), other.size()); ++i)
    if (std::string d = batch_content_difference(first[i], other[i]); !d.empty())
      return "the data-only pass with " + count(workers) + " differs from the one with " + count(first_workers) +
             " at batch " + std::to_string(i) +
             (first[i].rank >= 0 ? " (rank " + std::to_string(first[i].rank) + ")" : std::string()) + ": " + d + why;
  if (first.size() != other.size())
    return "the data-only pass with " + count(workers) + " probed " + std::to_string(other.size()) +
           " batches, the one with " + count(first_workers) + " " + std::to_string(first.size()) + why;
  return "";
}

// A worker-count difference (`deferred`) is only the cause when the
// batches repeat at one worker count: the training pass ran the first
// data-only pass's count, so batches it trained on that differ from that
// pass's are not fixed by the seed at all (a sampler or generator seeded
// from the clock or os.urandom), which is said instead. Throws exit 4.
[[noreturn]] void throw_data_pass_difference(const std::string& deferred, const std::vector<BatchProbe>& data,
                                             const std::vector<BatchProbe>* trained, int workers,
                                             const std::string& data_path, const std::string& trained_what) {
  if (trained)
    for (size_t i = 0; i < std::min(data.size(), trained->size()); ++i)
      if (std::string d = batch_content_difference(data[i], (*trained)[i]); !d.empty())
        throw Error(ExitCode::kNondeterministic,
                    "the training pass and the data-only pass, both with " + std::to_string(workers) +
                        (workers == 1 ? " DataLoader worker" : " DataLoader workers") + ", differ at batch " +
                        std::to_string(i) +
                        (data[i].rank >= 0 ? " (rank " + std::to_string(data[i].rank) + ")" : std::string()) + ": " +
                        d + ": the batches are not fixed by the seed (a sampler, shuffle or augmentation generator "
                        "seeded from the clock or os.urandom, or not seeded; docs/trainers.md); the passes at other "
                        "worker counts differ too. Probes: " + data_path + ", " + trained_what);
  throw Error(ExitCode::kNondeterministic, deferred);
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


// Where one trainer run's processes write and what they are handed: the
// placeholders of the config's arguments and paths, per pass, rank and
// worker count. A multi-rank trainer runs `world` processes per pass, each
// with torchrun's variables (RANK, WORLD_SIZE, LOCAL_RANK,
// LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT: env:// rendezvous on
// 127.0.0.1, a port of its own per pass) and its own output folder
// <pass>/rank-<r> ({out}); {rank} in the command and paths.
struct TrainerLayout {
  explicit TrainerLayout(const SmokeConfig& config) : c(config) {}
  const SmokeConfig& c;
  uint64_t seed = 0;
  std::string work, data_dir, config_dir, checkpoint;
  int64_t resume_at = 0;
  Fingerprint inputs;  ///< trainer.inputs' fields (external/trainer_inputs.h), hashed before any pass
  bool multi = false;
  int world = 1;
  /// {workers}: the training pass runs the first count, a data-only pass
  /// runs each; {-1}: no {workers} placeholder.
  std::vector<int> worker_counts;

  std::string rank_dir(const std::string& base, int r) const {
    return multi ? base + "/rank-" + std::to_string(r) : base;
  }
  std::string rank_word(int r) const { return multi ? " of rank " + std::to_string(r) : std::string(); }
  std::map<std::string, std::string> values(const std::string& out, int r, int workers) const {
    std::map<std::string, std::string> v{{"steps", std::to_string(c.steps)}, {"seed", std::to_string(seed)},
                                         {"out", out},                       {"data", data_dir},
                                         {"config_dir", config_dir},         {"resume_at", std::to_string(resume_at)},
                                         {"checkpoint", checkpoint},         {"rank", std::to_string(r)}};
    if (workers >= 0) v["workers"] = std::to_string(workers);
    return v;
  }
  std::vector<std::string> argv(const std::string& out, int r, int workers, const std::vector<std::string>& extra) const {
    auto v = values(out, r, workers);
    std::vector<std::string> args;
    for (const auto& a : c.trainer.command) args.push_back(expand_placeholders(a, v));
    for (const auto& a : extra) args.push_back(expand_placeholders(a, v));
    return args;
  }
  std::map<std::string, std::string> env(const std::string& out, const std::string& pass, int r,
                                         const std::string& port) const {
    std::map<std::string, std::string> e = trainer_env(c, seed, out, pass);
    if (!multi) return e;
    e["RANK"] = e["LOCAL_RANK"] = std::to_string(r);
    e["WORLD_SIZE"] = e["LOCAL_WORLD_SIZE"] = std::to_string(world);
    e["MASTER_ADDR"] = "127.0.0.1";
    e["MASTER_PORT"] = port;
    e["LOCKSTEP_DISTRIBUTED_BACKEND"] = c.distributed.backend;
    return e;
  }
  // The config path `text` of field `field` for the process writing to `out`.
  std::string path(const std::string& field, const std::string& text, const std::string& out, int r, int workers) const {
    return output_path(c, field, text, values(out, r, workers));
  }
};

// Where a resumed run starts: the stopped run's partial record, verified.
struct ResumePoint {
  RunRecord partial;
  int64_t at = 0;  ///< the step it stopped after (its series' last step + 1)
};

// The partial record beside checkpoint `resume` (written by `lockstep run
// --stop-after`): its XXH3-128, smoke, config, seed, determinism contract,
// rank count, steps and probes must be this run's. Exit 2 naming it.
ResumePoint read_resume_point(const SmokeConfig& c, const std::string& resume, uint64_t seed) {
  const TrainerConfig& t = c.trainer;
  std::string part = partial_path(resume);
  std::error_code ec;
  if (!fs::exists(part, ec))
    throw BadUsage("--resume " + resume + ": no " + part + " beside it (it is written by `lockstep run --stop-after`)");
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
  ResumePoint rp;
  RunRecord& partial = rp.partial;
  partial = read_run_record(part);
  if (partial.smoke != c.name) throw BadInput(part, "smoke", "\"" + c.name + "\", got \"" + input_excerpt(partial.smoke) + "\"");
  if (partial.config_hash != c.config_hash)
    throw BadInput(part, "config_hash", c.config_hash + " (" + c.file + "'s), got " + partial.config_hash +
                                            ": the run was stopped under another config");
  if (partial.seed != seed) throw BadInput(part, "seed", std::to_string(seed) + ", got " + std::to_string(partial.seed));
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
  for (const auto& [name, s] : partial.series)
    if (!s.steps.empty()) rp.at = std::max(rp.at, s.steps.back() + 1);
  if (rp.at < 1 || rp.at >= c.steps)
    throw BadInput(part, "series", "steps 0 to at most " + std::to_string(c.steps - 2) + " (a run stopped before "
                                   "the last of the " + std::to_string(c.steps) + " steps), got " +
                                   std::to_string(rp.at) + " steps");
  size_t probes = t.probes.empty() ? 0 : static_cast<size_t>(rp.at * world);
  if (partial.train_probes.size() != probes)
    throw BadInput(part, "train_probes", std::to_string(probes) + " probes (" +
                                             (t.probes.empty() ? std::string("the trainer writes none")
                                                               : "one per rank and step: " + std::to_string(world) +
                                                                     " x " + std::to_string(rp.at)) +
                                             "), got " + std::to_string(partial.train_probes.size()));
  return rp;
}

// The processes of one run and where they write.
struct PassPlan {
  std::vector<Pass> passes;
  std::vector<std::string> data_outs;  ///< a data-only pass per worker count; empty: none
  std::string train_out;               ///< the training pass's folder (rank 0's inside it when multi)
  std::map<std::string, std::string> train_env;  ///< rank 0's training environment, recorded
};

// The data-only pass (the batches the trainer's DataLoader yields, probed;
// one per worker count) beside the training pass (whole, stopping at a
// checkpoint, or resuming). A run that stops at a checkpoint needs no
// data-only pass: the resumed run makes it (unless the request's data_pass
// is false).
PassPlan plan_passes(const TrainerLayout& l, const RunPlan& run, bool stopping, bool resuming) {
  const TrainerConfig& t = l.c.trainer;
  PassPlan p;
  if (t.has_data_pass() && run.request.data_pass && !stopping)
    for (size_t k = 0; k < l.worker_counts.size(); ++k)
      p.data_outs.push_back(l.work + (k == 0 ? std::string("/data") : "/data-workers-" + std::to_string(l.worker_counts[k])));
  p.train_out = l.work + "/train";
  const std::vector<std::string> ports =
      l.multi ? free_loopback_ports(p.data_outs.size() + (run.train ? 1 : 0)) : std::vector<std::string>{};
  auto port_of = [&](size_t pass) { return l.multi ? ports[pass] : std::string(); };
  if (l.multi) {  // rank folders live inside the pass folders, made fresh here
    std::error_code ec;
    for (const auto& d : p.data_outs) fs::remove_all(d, ec);
    fs::remove_all(p.train_out, ec);
  }
  for (size_t k = 0; k < p.data_outs.size(); ++k) {
    std::string with = t.workers.empty() ? "" : " with " + std::to_string(l.worker_counts[k]) + " workers";
    for (int r = 0; r < l.world; ++r) {
      std::string dir = l.rank_dir(p.data_outs[k], r);
      p.passes.push_back({l.argv(dir, r, l.worker_counts[k], t.data_only), l.env(dir, "data", r, port_of(k)), dir,
                          "data-only pass" + with + l.rank_word(r), port_of(k)});
    }
  }
  const std::string train_port = run.train ? port_of(p.data_outs.size()) : std::string();  // probe: no training pass
  p.train_env = l.env(l.rank_dir(p.train_out, 0), "train", 0, train_port);
  std::vector<std::string> extra = stopping ? t.resume_stop : resuming ? t.resume_continue : std::vector<std::string>{};
  std::string what = stopping   ? "run stopping at step " + std::to_string(l.resume_at)
                     : resuming ? "run resumed at step " + std::to_string(l.resume_at)
                                : std::string("training pass");
  for (int r = 0; run.train && r < l.world; ++r) {
    std::string dir = l.rank_dir(p.train_out, r);
    p.passes.push_back({l.argv(dir, r, l.worker_counts.front(), extra), l.env(dir, "train", r, train_port), dir,
                        what + l.rank_word(r), train_port});
  }
  return p;
}

// What the trainer says about itself, in every process: its contract must
// be the config's (exit 3). Returns the report the record keeps (the
// training pass's, or the data-only pass's for `lockstep probe`) and its path.
std::pair<TrainerReport, std::string> check_reports(const TrainerLayout& l, const PassPlan& p, bool train) {
  auto checked = [&](const std::string& dir) {
    TrainerReport r = read_trainer_report(dir + "/" + kTrainerReportFile);
    if (std::string why = helper_mismatch(r); !why.empty())
      throw EnvironmentError(dir + "/" + kTrainerReportFile + ": " + why);
    if (std::string why = contract_mismatch(expected_contract(l.c), r.contract); !why.empty())
      throw EnvironmentError(dir + "/" + kTrainerReportFile + ": the trainer ran under another determinism "
                             "contract than " + l.c.file + " asks for (" + l.c.mode + "): " + why);
    return r;
  };
  std::string report_dir = l.rank_dir(train || p.data_outs.empty() ? p.train_out : p.data_outs.front(), 0);
  for (int r = 0; r < l.world; ++r) {
    for (size_t k = 0; k < p.data_outs.size(); ++k)
      if (train || r > 0 || k > 0) checked(l.rank_dir(p.data_outs[k], r));
    if (train && r > 0) checked(l.rank_dir(p.train_out, r));
  }
  return {checked(report_dir), report_dir + "/" + kTrainerReportFile};
}

// The data-only passes' probes: one list (every rank's, interleaved), the
// same at every worker count bit for bit. The first difference goes to
// `difference` (with the first pass's path in `first_path`), to be judged
// against the training pass's batches (throw_data_pass_difference).
std::vector<BatchProbe> read_data_probes(const TrainerLayout& l, const PassPlan& p, std::string& difference,
                                         std::string& first_path) {
  std::vector<BatchProbe> first;
  for (size_t k = 0; k < p.data_outs.size(); ++k) {
    std::vector<std::vector<BatchProbe>> per_rank;
    std::string path;
    for (int r = 0; r < l.world; ++r) {
      std::string file = l.path("trainer.probes", l.c.trainer.probes, l.rank_dir(p.data_outs[k], r), r, l.worker_counts[k]);
      if (path.empty()) path = file;
      require_written(l.c, "trainer.probes", file, l.rank_dir(p.data_outs[k], r));
      per_rank.push_back(read_probes_jsonl(file));
    }
    std::vector<BatchProbe> probes =
        l.multi ? interleave_rank_probes(per_rank, p.data_outs[k] + " (data-only pass)") : std::move(per_rank.front());
    if (k == 0) {
      first = std::move(probes);
      first_path = path;
    } else if (difference.empty()) {
      difference = worker_count_difference(first, l.worker_counts.front(), probes, l.worker_counts[k], first_path, path);
    }
  }
  return first;
}

// What the training pass wrote, for steps [first, end).
struct TrainedOutputs {
  std::map<std::string, Series> series;  ///< rank 0's metrics, every other rank's agreeing
  std::string metrics_path;              ///< rank 0's
  std::vector<BatchProbe> train_probes;  ///< one per rank and step trained
  ModuleTrace trace;                     ///< rank 0's, when written
};

// Rank 0's metrics, covering [first, end); every other rank that logs them
// must log the same global series (many trainers log on rank 0 only: a
// rank without the file is not read, and a note says so).
void read_metrics_of_ranks(const TrainerLayout& l, const PassPlan& p, int64_t first, int64_t end, TrainedOutputs& out,
                           std::vector<std::string>& notes) {
  const TrainerConfig& t = l.c.trainer;
  const int workers = l.worker_counts.front();
  MetricsSpec spec;
  spec.format = parse_metrics_format(t.metrics_format);
  spec.path = l.path("trainer.metrics.path", t.metrics_path, l.rank_dir(p.train_out, 0), 0, workers);
  spec.series = t.series;
  spec.step_key = t.step_key;
  spec.mllog_step = t.mllog_step;
  require_written(l.c, "trainer.metrics.path", spec.path, l.rank_dir(p.train_out, 0));
  try {
    out.series = read_metrics(spec);
  } catch (const MissingSeries& e) {  // the config's spelling, named where it is written
    throw BadInput(l.c.file, "trainer.metrics.series." + e.names.front(),
                   "a " + e.kind + " the trainer logs in " + spec.path + ", got '" + input_excerpt(e.key) +
                       "', which never appears" + e.hint);
  }
  out.metrics_path = spec.path;
  check_coverage(out.series, first, end, spec.path);
  for (int r = 1; r < l.world; ++r) {
    MetricsSpec other = spec;
    other.path = l.path("trainer.metrics.path", t.metrics_path, l.rank_dir(p.train_out, r), r, workers);
    std::error_code ec;
    if (other.path == spec.path || !fs::exists(other.path, ec)) {
      notes.push_back("rank " + std::to_string(r) + " logged no metrics (" + other.path + "); rank 0's are the run's");
      continue;
    }
    std::map<std::string, Series> theirs = read_metrics(other);
    check_coverage(theirs, first, end, other.path);
    check_ranks_agree(out.series, theirs, r, spec.path, other.path);
  }
}

// The probes of the batches trained on, one per rank and step (a trainer
// that probes some batches only would leave the others unchecked), and the
// module trace of the helper's ModuleTracer (rank 0's), when written.
void read_trained_batches_and_trace(const TrainerLayout& l, const PassPlan& p, int64_t first, int64_t end,
                                    TrainedOutputs& out, std::vector<std::string>& notes) {
  const TrainerConfig& t = l.c.trainer;
  const int workers = l.worker_counts.front();
  if (!t.probes.empty()) {
    std::vector<std::vector<BatchProbe>> per_rank;
    for (int r = 0; r < l.world; ++r) {
      std::string probes = l.path("trainer.probes", t.probes, l.rank_dir(p.train_out, r), r, workers);
      require_written(l.c, "trainer.probes", probes, l.rank_dir(p.train_out, r));
      per_rank.push_back(read_probes_jsonl(probes, first));
      if (static_cast<int64_t>(per_rank.back().size()) != end - first)
        throw BadInput(probes, "", "one probe per step trained (" + std::to_string(end - first) + "), got " +
                                       std::to_string(per_rank.back().size()));
    }
    out.train_probes = l.multi ? interleave_rank_probes(per_rank, l.work + " (training pass)", first * l.world)
                               : std::move(per_rank.front());
  }
  std::string trace_file =
      l.path("trainer.module_trace", "{out}/module_trace.jsonl", l.rank_dir(p.train_out, 0), 0, workers);
  std::error_code ec;
  // A link that leads nowhere is read too (and refused, naming the file).
  bool present = fs::exists(trace_file, ec) || fs::is_symlink(fs::symlink_status(trace_file, ec));
  if (l.c.trace.steps <= 0 || !present) return;
  out.trace = read_module_trace_jsonl(trace_file, l.c.trace.steps, first);
  if (out.trace.entries.empty() && first < l.c.trace.steps)
    notes.push_back(trace_file + " holds no entry although trace.steps is " + std::to_string(l.c.trace.steps) +
                    ": call tracer.step(step) before each step's forward (python/lockstep ModuleTracer), "
                    "or set trace.steps to 0");
  else if (l.c.trace.ops && out.trace.ops.empty() && out.trace.ops_not_traced.empty() && first < l.c.trace.steps)
    notes.push_back(trace_file + " holds no op entry although trace.ops is true: the helper records them with "
                    "ModuleTracer(..., ops=True) or LOCKSTEP_TRACE_OPS=1 (python/lockstep of this lockstep)");
  if (l.multi) {
    for (auto& e : out.trace.entries) e.rank = 0;
    for (auto& o : out.trace.ops) o.rank = 0;
  }
}

// A resumed run's outputs joined after the stopped run's: the series (the
// same dtype, on one grid), the module trace and the trained batches.
void merge_with_stopped_run(const ResumePoint& rp, const std::string& part, int trace_steps, TrainedOutputs& out) {
  for (auto& [name, s] : out.series) {
    auto p = rp.partial.series.find(name);
    if (p == rp.partial.series.end()) throw BadInput(part, "series." + name, "the series the resumed run logs");
    Series merged = p->second;
    merged.steps = step_numbers(merged);
    if (merged.dtype != s.dtype)
      throw BadInput(out.metrics_path, name, std::string(dtype_name(merged.dtype)) + " as before the checkpoint, got " +
                                                 dtype_name(s.dtype));
    merged.values.insert(merged.values.end(), s.values.begin(), s.values.end());
    merged.steps.insert(merged.steps.end(), s.steps.begin(), s.steps.end());
    s = std::move(merged);
  }
  if (!rp.partial.module_trace.entries.empty()) {
    ModuleTrace merged = rp.partial.module_trace;
    merged.steps = trace_steps;
    for (auto& e : out.trace.entries) merged.entries.push_back(std::move(e));
    for (auto& o : out.trace.ops) merged.ops.push_back(std::move(o));
    merged.ops_dropped += out.trace.ops_dropped;
    if (merged.ops_not_traced.empty()) merged.ops_not_traced = out.trace.ops_not_traced;
    if (!merged.ops.empty()) merged.ops_not_traced.clear();  // ops or the reason, never both
    out.trace = std::move(merged);
  }
  std::vector<BatchProbe> probes = rp.partial.train_probes;
  probes.insert(probes.end(), out.train_probes.begin(), out.train_probes.end());
  out.train_probes = std::move(probes);
  check_grid(out.series, part, out.metrics_path);
}

// The record's identity and stack: the machine's facts (under the
// environment the trainer was handed), the trainer's own (its report), the
// contract, the config's value hash and fields, the platform key.
void stamp_trainer_record(const TrainerLayout& l, const PassPlan& p, const TrainerReport& report,
                          const std::string& report_path, bool seed_overridden, RunRecord& rec) {
  const SmokeConfig& c = l.c;
  MachineOptions m;
  m.device = c.device;
  m.repo_path = l.config_dir;
  m.env = p.train_env;
  m.use_env = true;
  m.threads_pinned = true;  // the trainer's contract pins them (expected_contract), read back in its report
  rec.fingerprint = machine_fingerprint(m);
  for (const auto& [k, field] : l.inputs) rec.fingerprint[k] = field;
  for (const auto& [k, v] : c.trainer.env) rec.fingerprint["trainer.env." + k] = {v, true};
  rec.fingerprint["trainer.command"] = {join_args(c.trainer.command), false};
  // The rest of what the trainer was handed (the numerics variables are env.*).
  rec.fingerprint["trainer.env.PYTHONHASHSEED"] = {p.train_env.at("PYTHONHASHSEED"), true};
  rec.fingerprint["trainer.env.PYTHONPATH"] = {p.train_env.at("PYTHONPATH"), false};
  add_trainer_facts(report, report_path, rec);
  apply_package_relevance(c.trainer, rec.fingerprint);
  if (l.multi) {
    rec.contract["distributed.world_size"] = std::to_string(l.world);
    rec.contract["distributed.backend"] = c.distributed.backend;
  }
  finish_record(c, {{l.seed, seed_overridden}, c.steps}, rec);
}

// A Python trainer's script (`python3 train.py ...`: the first argument
// that is no option, unless -m or -c runs a module or a string) is checked
// before minutes are spent: a mistyped name is the config's error (exit 2,
// naming trainer.command[i]), not a trainer that exited with status 2.
// Options that take a value (-W, -X) skip it. Other launchers (torchrun,
// a shell wrapper) parse their own arguments and are left to run.
// The script found is fingerprinted: "trainer.script.<as written>", its
// XXH3-128, informational (a refactor that keeps the numbers passes), so a
// failing check after a code change names the script among the
// environment differences.
void check_python_script(TrainerLayout& l) {
  const SmokeConfig& c = l.c;
  const auto& cmd = c.trainer.command;
  if (cmd.size() < 2 || fs::path(cmd[0]).filename().string().rfind("python", 0) != 0) return;
  for (size_t i = 1; i < cmd.size(); ++i) {
    const std::string& a = cmd[i];
    if (a == "-" || a.rfind("-m", 0) == 0 || a.rfind("-c", 0) == 0) return;
    if (a == "-W" || a == "-X") {
      ++i;
      continue;
    }
    if (!a.empty() && a[0] == '-') continue;
    if (a.find("{out}") != std::string::npos || a.find("{checkpoint}") != std::string::npos) return;
    const fs::path full = trainer_path(a, c.trainer.resolved_cwd, l.data_dir, l.config_dir);
    std::error_code ec;
    if (fs::is_regular_file(full, ec)) {
      try {
        l.inputs["trainer.script." + a] = {cached_file_xxh3(full.string()), false};
      } catch (const Error& e) {
        throw BadInput(c.file, "trainer.command[" + std::to_string(i) + "]",
                       "a Python script lockstep can read to hash, got " + std::string(e.what()));
      }
      return;
    }
    if (fs::exists(full, ec)) return;  // a folder (python3 runs its __main__.py) or a special file: left to Python
    std::string cwd = fs::path(c.trainer.resolved_cwd).lexically_normal().string();
    if (cwd.size() > 1 && cwd.back() == '/') cwd.pop_back();
    throw BadInput(c.file, "trainer.command[" + std::to_string(i) + "]",
                   "the Python script the trainer runs, got \"" + input_excerpt(a) + "\" = " +
                       full.lexically_normal().string() + ", which does not exist (trainer.cwd is " + cwd + ")");
    return;
  }
}

}  // namespace

TrainerRun run_trainer(const RunPlan& run, const std::string& work_dir) {
  const SmokeConfig& c = run.config;
  const RunRequest& o = run.request;
  const TrainerConfig& t = c.trainer;
  if (!c.has_trainer()) throw BadUsage(c.file + ": no trainer section");
  const std::pair<uint64_t, bool> seed = base_seed(c, o.seed.empty() ? nullptr : o.seed.c_str());
  const bool stopping = o.stop_after > 0, resuming = !o.resume.empty();
  if ((stopping || resuming) && t.resume_stop.empty())
    throw BadInput(c.file, "trainer.resume", "a resume section (how the command stops at a checkpoint and continues)");
  if (!run.train && !t.has_data_pass())
    throw BadUsage(c.file + ": `lockstep probe` runs the data-only pass, and this trainer has none (it writes no "
                   "batch probes: trainer.probes)");
  // The resumed run starts from what the stopped run recorded.
  ResumePoint resume = resuming ? read_resume_point(c, o.resume, seed.first) : ResumePoint{{}, o.stop_after};
  TrainerLayout l(c);
  l.seed = seed.first;
  l.work = fs::absolute(work_dir).lexically_normal().string();
  l.data_dir = data_dir();
  l.config_dir = fs::absolute(c.file).parent_path().lexically_normal().string();
  l.checkpoint = stopping ? fs::absolute(o.checkpoint).string() : resuming ? fs::absolute(o.resume).string() : "";
  l.resume_at = resume.at;
  l.multi = c.distributed.configured;
  l.world = l.multi ? c.distributed.world_size : 1;
  l.worker_counts = t.workers.empty() ? std::vector<int>{-1} : t.workers;
  check_python_script(l);
  add_trainer_inputs(c, l.inputs);  // a pattern that matches nothing is refused before the trainer runs

  TrainerRun result;
  RunRecord& rec = result.record;
  PassPlan passes = plan_passes(l, run, stopping, resuming);
  run_passes(c, passes.passes, l.multi);
  auto [report, report_path] = check_reports(l, passes, run.train);
  std::string worker_difference, data_path;
  if (!passes.data_outs.empty()) rec.probes = read_data_probes(l, passes, worker_difference, data_path);
  else if (!t.has_data_pass() && run.train) result.notes.push_back(missing_data_pass_note(c));
  if (!worker_difference.empty() && (!run.train || resuming))
    throw_data_pass_difference(worker_difference, rec.probes, nullptr, 0, data_path, "");
  if (run.train) {
    const int64_t first = resuming ? resume.at : 0, end = stopping ? resume.at : c.steps;
    TrainedOutputs out;
    read_metrics_of_ranks(l, passes, first, end, out, result.notes);
    read_trained_batches_and_trace(l, passes, first, end, out, result.notes);
    if (!worker_difference.empty())
      throw_data_pass_difference(worker_difference, rec.probes, &out.train_probes, l.worker_counts.front(), data_path,
                                 "the training pass's batches (" + passes.train_out + ")");
    if (resuming) merge_with_stopped_run(resume, partial_path(o.resume), c.trace.steps, out);
    if (!stopping)
      for (auto& [name, s] : out.series) compact_steps(s);
    rec.series = std::move(out.series);
    rec.train_probes = std::move(out.train_probes);
    rec.module_trace = std::move(out.trace);
  }
  stamp_trainer_record(l, passes, report, report_path, seed.second, rec);
  if (stopping) {
    write_run_record(partial_path(l.checkpoint), rec);
    // Its hash beside it: an edited or damaged partial record is refused on resume.
    write_file_atomically(partial_path(l.checkpoint) + ".xxh3", file_xxh3(partial_path(l.checkpoint)) + "\n");
    result.stopped_at_checkpoint = true;
  }
  return result;
}

}  // namespace lockstep
