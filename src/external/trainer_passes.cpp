#include "external/trainer_passes.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <set>

#include "core/error.h"
#include "core/float_bits.h"
#include "core/process.h"

namespace lockstep {
namespace fs = std::filesystem;

TrainerLayout::TrainerLayout(const SmokeConfig& config, uint64_t run_seed, const std::string& work_dir)
    : c(config),
      seed(run_seed),
      work(fs::absolute(work_dir).lexically_normal().string()),
      data_dir(lockstep::data_dir()),
      config_dir(fs::absolute(config.file).parent_path().lexically_normal().string()),
      multi(config.distributed.configured),
      world(config.distributed.configured ? config.distributed.world_size : 1),
      worker_counts(config.trainer.workers.empty() ? std::vector<int>{-1} : config.trainer.workers) {}

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
  // A planted one-ULP change (run --perturb, selftest): the helper's
  // ModuleTracer makes it before step 0's forward.
  if (!c.perturb.empty()) env["LOCKSTEP_PERTURB"] = c.perturb;
  // A varied run (run --vary, check's perturbed repeat): the helper makes
  // the heap hole and starts the thread pools on import; malloc reads
  // MALLOC_PERTURB_ at the trainer's start.
  if (!c.vary.empty()) env["LOCKSTEP_VARY"] = variation_spec(c.vary);
  if (c.vary.malloc_perturb > 0) env["MALLOC_PERTURB_"] = std::to_string(c.vary.malloc_perturb);
  return env;
}

std::string join_args(const std::vector<std::string>& argv) {
  std::string out;
  for (const auto& a : argv) out += (out.empty() ? "" : " ") + (a.find(' ') == std::string::npos ? a : "'" + a + "'");
  return out;
}

namespace {

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

}  // namespace

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
    p.env = ordered_environment(std::move(p.env), c.vary);
    p.cpus = c.vary.affinity;
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

std::string output_path(const SmokeConfig& c, const std::string& field, const std::string& text,
                        const std::map<std::string, std::string>& values) {
  fs::path p(expand_placeholders(text, values));
  std::string full = (p.is_absolute() ? p : fs::absolute(c.file).parent_path() / p).lexically_normal().string();
  const std::string& out = values.at("out");
  if (full.rfind(out + "/", 0) != 0)
    throw BadInput(c.file, field, "a path inside {out} (" + out + "), got \"" + input_excerpt(text) + "\" = " + full);
  return full;
}

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

}  // namespace lockstep
