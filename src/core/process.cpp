#include "core/process.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

#include "core/error.h"

namespace lockstep {
namespace fs = std::filesystem;

std::string ProcessOutcome::describe(int64_t timeout_s) const {
  if (timed_out) return "timed out after " + std::to_string(timeout_s) + " s (killed with its process group)";
  if (signal != 0) {
    const char* name = strsignal(signal);
    return "was killed by signal " + std::to_string(signal) + (name ? std::string(" (") + name + ")" : "");
  }
  return "exited with status " + std::to_string(exit_status);
}

namespace {

bool executable_file(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(p.c_str(), X_OK) == 0;
}

}  // namespace

std::string resolve_program(const std::string& argv0, const std::string& cwd, const std::string& path_var,
                            const std::string& what) {
  if (argv0.find('/') != std::string::npos) {
    fs::path p(argv0);
    std::string full = (p.is_absolute() ? p : fs::path(cwd) / p).lexically_normal().string();
    std::error_code ec;
    if (!fs::exists(full, ec))
      throw BadUsage(what + ": " + argv0 + ": no such file (looked at " + full + ")");
    if (!executable_file(full))
      throw BadUsage(what + ": " + argv0 + ": not an executable file (" + full +
                     "; chmod +x it, or run it through its interpreter, e.g. [\"python3\", \"" + argv0 + "\"])");
    return full;
  }
  std::stringstream dirs(path_var);
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    std::string candidate = (fs::path(dir.empty() ? "." : dir) / argv0).string();
    if (executable_file(candidate)) return candidate;
  }
  throw BadUsage(what + ": " + argv0 + ": command not found on PATH (" + path_var + ")");
}

namespace {

// The process groups of the trainers running now, for the signal handler:
// a CI job cancelled (SIGTERM) or a Ctrl-C (SIGINT) must take the trainer
// and its DataLoader workers with it, though they run in groups of their own.
constexpr int kMaxGroups = 80;  // a trainer and its data pass, or up to 64 ranks
volatile sig_atomic_t g_groups[kMaxGroups];

// StopSignals: set while a command wants to clean up before it ends.
volatile sig_atomic_t g_stop_active = 0;
volatile sig_atomic_t g_stop_signal = 0;

// The line said before the signal ends the process, so a terminal or a
// cancelled job's log shows why the command stopped without a verdict
// (write(2) only: async-signal-safe).
void say_stopped_by(int sig, bool killed_some) {
  auto say = [](const char* text, size_t size) {
    ssize_t ignored = ::write(STDERR_FILENO, text, size);
    (void)ignored;
  };
  static constexpr char kStopped[] = "lockstep: stopped by ";
  static constexpr char kInt[] = "SIGINT", kTerm[] = "SIGTERM", kHup[] = "SIGHUP";
  static constexpr char kKilled[] = ": the runs and trainers it started were killed; no verdict\n";
  static constexpr char kNone[] = "; no verdict\n";
  say(kStopped, sizeof kStopped - 1);
  if (sig == SIGINT) say(kInt, sizeof kInt - 1);
  if (sig == SIGTERM) say(kTerm, sizeof kTerm - 1);
  if (sig == SIGHUP) say(kHup, sizeof kHup - 1);
  if (killed_some) say(kKilled, sizeof kKilled - 1);
  else say(kNone, sizeof kNone - 1);
}

extern "C" void kill_trainers_and_reraise(int sig) {
  bool killed_some = false;
  for (int i = 0; i < kMaxGroups; ++i)
    if (g_groups[i] > 0) killed_some = ::kill(-static_cast<pid_t>(g_groups[i]), SIGKILL) == 0 || killed_some;
  if (g_stop_active) {  // the command ends itself once it has cleaned up
    g_stop_signal = sig;
    return;
  }
  say_stopped_by(sig, killed_some);
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

// Installs the handler for SIGINT, SIGTERM and SIGHUP while trainers run.
// One registry for the process, shared by every thread that runs trainers
// (check -j, calibrate and bisect run them from several): the handler is
// installed by the first user and the previous one restored by the last;
// each user clears only the groups it added. The slots are written under
// the mutex and read by the handler without it (each one sig_atomic_t).
std::mutex g_groups_mutex;
int g_signal_users = 0;
struct sigaction g_old_actions[3];

class TrainerSignals {
 public:
  TrainerSignals() {
    std::lock_guard<std::mutex> lock(g_groups_mutex);
    if (g_signal_users++ > 0) return;
    struct sigaction sa {};
    sa.sa_handler = kill_trainers_and_reraise;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < 3; ++i) sigaction(kSignals[i], &sa, &g_old_actions[i]);
  }
  ~TrainerSignals() {
    std::lock_guard<std::mutex> lock(g_groups_mutex);
    for (int slot : slots_) g_groups[slot] = 0;
    if (--g_signal_users == 0)
      for (size_t i = 0; i < 3; ++i) sigaction(kSignals[i], &g_old_actions[i], nullptr);
  }
  TrainerSignals(const TrainerSignals&) = delete;
  TrainerSignals& operator=(const TrainerSignals&) = delete;
  void add(pid_t group) {
    std::lock_guard<std::mutex> lock(g_groups_mutex);
    for (int i = 0; i < kMaxGroups; ++i)
      if (g_groups[i] == 0) {
        g_groups[i] = group;
        slots_.push_back(i);
        return;
      }
  }

 private:
  static constexpr int kSignals[3] = {SIGINT, SIGTERM, SIGHUP};
  std::vector<int> slots_;  ///< the g_groups slots this user filled
};

}  // namespace

void say_when_stopped_by_a_signal() {
  struct sigaction sa {};
  sa.sa_handler = kill_trainers_and_reraise;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) {
    struct sigaction old {};
    // A signal ignored by whoever started us (nohup, a script's background
    // job) stays ignored.
    if (::sigaction(sig, nullptr, &old) == 0 && old.sa_handler != SIG_IGN) ::sigaction(sig, &sa, nullptr);
  }
}

StopSignals::StopSignals() {
  g_stop_signal = 0;
  g_stop_active = 1;
  struct sigaction sa {};
  sa.sa_handler = kill_trainers_and_reraise;
  sigemptyset(&sa.sa_mask);
  for (size_t i = 0; i < 3; ++i) sigaction(kStopSignals[i], &sa, &old_[i]);
}

StopSignals::~StopSignals() {
  g_stop_active = 0;
  for (size_t i = 0; i < 3; ++i) sigaction(kStopSignals[i], &old_[i], nullptr);
}

int StopSignals::received() { return g_stop_signal; }

void StopSignals::reraise() {
  int sig = g_stop_signal;
  g_stop_active = 0;
  if (sig) {
    ::signal(sig, SIG_DFL);
    ::raise(sig);
  }
}

namespace {

// The signal the watcher gets when this process dies (PR_SET_PDEATHSIG):
// one nobody else sends to a program's group.
constexpr int kParentDeathSignal = SIGUSR2;

// Closes every descriptor above stderr but `keep` (async-signal-safe:
// close_range(2), or close(2) one by one where the kernel lacks it).
void close_descriptors_but(int keep) {
  auto close_from_to = [](unsigned lo, unsigned hi) {
    if (lo > hi) return;
    if (::close_range(lo, hi, 0) == 0) return;
    for (unsigned fd = lo; fd <= hi && fd < 65536; ++fd) ::close(static_cast<int>(fd));
  };
  close_from_to(3, static_cast<unsigned>(keep) - 1);
  close_from_to(static_cast<unsigned>(keep) + 1, ~0U);
}

// The watcher's handler: every process of its group, itself included, dies.
extern "C" void kill_own_group(int) {
  ::kill(0, SIGKILL);
  ::_exit(137);
}

// In the program's process (the watcher's child): default signal
// dispositions and mask whatever ours are, stdin from /dev/null, stdout
// and stderr to their files, its folder, then the exec. A failure before
// the exec writes {step, errno} to `report` (step 0 the exec, 1..3
// stdin/stdout/stderr, 4 the chdir).
[[noreturn]] void exec_program(const ProcessSpec& spec, const std::string& program, std::vector<char*>& argv,
                               std::vector<char*>& envp, int report, pid_t lockstep) {
  auto fail = [&](int step) {
    int e[2] = {step, errno};
    ssize_t ignored = ::write(report, e, sizeof e);
    (void)ignored;
    ::_exit(127);
  };
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // with its watcher
  (void)lockstep;
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; ++sig) ::sigaction(sig, &dfl, nullptr);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  const int flags = O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW;
  int in = ::open("/dev/null", O_RDONLY);
  if (in < 0 || ::dup2(in, STDIN_FILENO) < 0) fail(1);
  if (!spec.stdout_path.empty()) {  // "": ours, inherited
    int out = ::open(spec.stdout_path.c_str(), flags, 0644);
    if (out < 0 || ::dup2(out, STDOUT_FILENO) < 0) fail(2);
  }
  int err = ::open(spec.stderr_path.c_str(), flags, 0644);
  if (err < 0 || ::dup2(err, STDERR_FILENO) < 0) fail(3);
  if (::chdir(spec.cwd.c_str()) != 0) fail(4);
  if (spec.cpus.any()) {
    cpu_set_t set;
    CPU_ZERO(&set);
    for (size_t c = 0; c < spec.cpus.size() && c < CPU_SETSIZE; ++c)
      if (spec.cpus.test(c)) CPU_SET(c, &set);
    if (::sched_setaffinity(0, sizeof set, &set) != 0) fail(6);
  }
  ::execve(program.c_str(), argv.data(), envp.data());
  fail(0);
  ::_exit(127);
}

// The watcher, in the forked child: leads the program's process group,
// kills the group when this process's parent dies (PR_SET_PDEATHSIG), else
// waits for the program and ends as it ended. Async-signal-safe calls only.
[[noreturn]] void run_watcher(const ProcessSpec& spec, const std::string& program, std::vector<char*>& argv,
                              std::vector<char*>& envp, int report, pid_t parent) {
  // The watcher: its own process group, so a timeout and our death kill
  // every process the program starts.
  ::setpgid(0, 0);
  // Only stdio and our report pipe: another thread's spawn may have its
  // report pipe open now, and its end would otherwise stay open in this
  // watcher (and the program) until this program ends.
  close_descriptors_but(report);
  struct sigaction on_parent_death {};
  on_parent_death.sa_handler = kill_own_group;
  sigemptyset(&on_parent_death.sa_mask);
  ::sigaction(kParentDeathSignal, &on_parent_death, nullptr);
  ::prctl(PR_SET_PDEATHSIG, kParentDeathSignal);
  if (::getppid() != parent) kill_own_group(0);  // we died before the line above
  // Signals to the group (a timeout's SIGTERM, a terminal's) are the
  // program's to act on; the watcher only waits for it.
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  for (int sig : {SIGTERM, SIGINT, SIGHUP, SIGQUIT}) ::sigaction(sig, &ignore, nullptr);
  const pid_t watched = ::fork();
  if (watched < 0) {
    int e[2] = {5, errno};
    ssize_t ignored = ::write(report, e, sizeof e);
    (void)ignored;
    ::_exit(127);
  }
  if (watched == 0) exec_program(spec, program, argv, envp, report, parent);
  ::close(report);
  int status = 0;
  while (::waitpid(watched, &status, 0) < 0)
    if (errno != EINTR) ::_exit(127);
  if (WIFEXITED(status)) ::_exit(WEXITSTATUS(status));
  // Ends as the program ended: by the same signal.
  const int sig = WTERMSIG(status);
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  ::sigaction(sig, &dfl, nullptr);
  sigset_t only;
  sigemptyset(&only);
  sigaddset(&only, sig);
  ::sigprocmask(SIG_UNBLOCK, &only, nullptr);
  ::kill(::getpid(), sig);
  ::_exit(128 + sig);
}

// Throws what a start that failed before the exec reported: `failed` is
// {what failed (0 the exec, 1..4 stdio or the folder, 5 the fork, 6 the CPU
// affinity), errno};
// returns for an errno of 0.
void raise_start_failure(const ProcessSpec& spec, const std::string& program, const std::string& starting,
                         const int failed[2]) {
  const int rc = failed[1];
  if (failed[0] != 0) {
    if (failed[0] == 5) throw EnvironmentError("cannot start " + starting + " " + program + ": fork: " + std::strerror(rc));
    if (failed[0] == 6)
      throw EnvironmentError("cannot start " + starting + " " + program + " pinned to its CPUs (run --vary affinity): " +
                             std::strerror(rc));
    const char* const what[] = {"", "/dev/null", spec.stdout_path.c_str(), spec.stderr_path.c_str(),
                                spec.cwd.c_str()};
    throw io_error(what[failed[0] >= 1 && failed[0] <= 4 ? failed[0] : 1],
                   failed[0] == 4 ? "enter the folder of " + starting : "open for " + starting, rc);
  }
  if (rc == ENOENT)  // the program exists (resolved above): its #! interpreter does not
    throw BadUsage(spec.what + ": " + program + ": cannot be executed: the interpreter on its #! line "
                   "was not found");
  if (rc == ENOEXEC || rc == EACCES)
    throw BadUsage(spec.what + ": " + program + ": cannot be executed (" + std::strerror(rc) + ")");
  if (rc != 0) throw EnvironmentError("cannot start " + starting + " " + program + ": " + std::strerror(rc));
}

// Starts `spec` in its own process group (under its watcher, the group's
// leader, whose pid this returns).
pid_t spawn(const ProcessSpec& spec) {
  if (spec.argv.empty()) throw BadUsage(spec.what + ": empty");
  std::string path_var = "/usr/local/bin:/usr/bin:/bin";
  for (const auto& e : spec.env)
    if (e.rfind("PATH=", 0) == 0) path_var = e.substr(5);
  std::error_code ec;
  if (!fs::is_directory(spec.cwd, ec))
    throw BadUsage((spec.what.rfind("trainer.", 0) == 0 ? std::string("trainer.cwd") : spec.what + ": folder") +
                   ": " + spec.cwd + ": no such folder");
  std::string program = resolve_program(spec.argv[0], spec.cwd, path_var, spec.what);
  const std::string starting = spec.what.rfind("trainer.", 0) == 0 ? "the trainer" : spec.what;

  std::vector<std::string> args = spec.argv;
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env = spec.env;
  std::vector<char*> envp;
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);

  // fork and exec rather than posix_spawn: the program must die with us,
  // and so must everything it starts (a wrapper script's children, the
  // DataLoader's workers). The forked watcher leads the program's process
  // group: it gets a signal when this process dies (PR_SET_PDEATHSIG, which
  // reaches a direct child only) and then kills the whole group; otherwise
  // it waits for the program and ends as it ended, so its pid stands for
  // the program's. From fork to exec only async-signal-safe calls are made
  // (this process may have threads); an errno before the exec comes back
  // through a close-on-exec pipe.
  int report[2];
  if (::pipe2(report, O_CLOEXEC) != 0)
    throw EnvironmentError("cannot start " + starting + ": pipe: " + std::strerror(errno));
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    int e = errno;
    ::close(report[0]);
    ::close(report[1]);
    throw EnvironmentError("cannot start " + starting + " " + program + ": fork: " + std::strerror(e));
  }
  if (pid == 0) run_watcher(spec, program, argv, envp, report[1], parent);
  ::setpgid(pid, pid);  // also here: the signal handler may kill the group before the child ran
  ::close(report[1]);
  int failed[2] = {0, 0};
  ssize_t n;
  while ((n = ::read(report[0], failed, sizeof failed)) < 0 && errno == EINTR) {
  }
  ::close(report[0]);
  if (n != static_cast<ssize_t>(sizeof failed)) return pid;  // the exec succeeded
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  raise_start_failure(spec, program, starting, failed);
  return pid;
}

}  // namespace

std::vector<pid_t> trainer_groups_registered() {
  std::lock_guard<std::mutex> lock(g_groups_mutex);
  std::vector<pid_t> out;
  for (int i = 0; i < kMaxGroups; ++i)
    if (g_groups[i] > 0) out.push_back(static_cast<pid_t>(g_groups[i]));
  return out;
}

namespace {

using Clock = std::chrono::steady_clock;

// One process of run_processes: its watcher's pid and its clocks.
struct Running {
  pid_t pid = 0;
  Clock::time_point start, deadline, kill_at;
  std::chrono::milliseconds kill_grace{5000};  ///< ProcessSpec::kill_grace_ms
  bool term_sent = false, done = false;
};

// One look at a running process: reaps it when it ended (and kills what it
// left in its group), sends its group SIGTERM at the deadline and SIGKILL
// its kill grace later. Returns true when it failed just now (ended not ok, or timed
// out). Throws exit-3 Error when waitpid fails.
bool poll_running(Running& r, ProcessOutcome& out) {
  int status = 0;
  pid_t got = waitpid(r.pid, &status, WNOHANG);
  if (got < 0 && errno != EINTR) throw EnvironmentError(std::string("waitpid: ") + std::strerror(errno));
  auto now = Clock::now();
  if (got == r.pid) {
    // Workers the trainer left behind must not outlive it.
    ::kill(-r.pid, SIGKILL);
    r.done = true;
    out.wall_s = std::chrono::duration<double>(now - r.start).count();
    if (WIFSIGNALED(status)) out.signal = WTERMSIG(status);
    else out.exit_status = WEXITSTATUS(status);
    return !out.ok();
  }
  if (!r.term_sent && now >= r.deadline) {
    out.timed_out = true;
    r.term_sent = true;
    ::kill(-r.pid, SIGTERM);
    r.kill_at = now + r.kill_grace;
    return true;
  }
  if (r.term_sent && now >= r.kill_at) {
    ::kill(-r.pid, SIGKILL);
    r.kill_at = now + std::chrono::hours(1);
  }
  return false;
}

}  // namespace

std::vector<ProcessOutcome> run_processes(const std::vector<ProcessSpec>& specs, bool stop_all_on_failure,
                                          std::chrono::milliseconds peer_grace) {
  std::vector<Running> running(specs.size());
  std::vector<ProcessOutcome> out(specs.size());
  TrainerSignals signals;
  auto kill_started = [&] {
    for (auto& r : running)
      if (r.pid > 0 && !r.done) {
        ::kill(-r.pid, SIGKILL);
        waitpid(r.pid, nullptr, 0);
      }
  };
  for (size_t i = 0; i < specs.size(); ++i) {
    try {
      running[i].pid = spawn(specs[i]);
      signals.add(running[i].pid);
    } catch (...) {
      kill_started();
      throw;
    }
    running[i].start = Clock::now();
    running[i].deadline = running[i].start + std::chrono::seconds(specs[i].timeout_s);
    running[i].kill_grace = std::chrono::milliseconds(std::max<int64_t>(0, specs[i].kill_grace_ms));
  }
  size_t left = specs.size();
  bool stopping = false, stopped = false;
  Clock::time_point stop_at;
  while (left > 0) {
    bool failed = false;
    for (size_t i = 0; i < specs.size(); ++i) {
      if (running[i].done) continue;
      try {
        failed = poll_running(running[i], out[i]) || failed;
      } catch (...) {
        kill_started();
        throw;
      }
      if (running[i].done) --left;
    }
    if (stop_all_on_failure && failed && !stopping) {
      // Everything still running only waits for the one that failed; a
      // grace first, for a process that is already on its way out with an
      // error of its own (a rank that closed its store connection on a
      // bad data file is still exiting when its peer reports the closed
      // connection): that exit, not the peer's, is the finding.
      stopping = true;
      stop_at = Clock::now() + peer_grace;
    }
    if (stopping && !stopped && Clock::now() >= stop_at) {
      stopped = true;
      for (size_t i = 0; i < specs.size(); ++i)
        if (!running[i].done && !out[i].timed_out) {
          out[i].stopped_for_peer = true;
          ::kill(-running[i].pid, SIGKILL);
        }
    }
    if (left > 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return out;
}

ProcessOutcome run_process(const ProcessSpec& spec) { return run_processes({spec}).front(); }

std::string tail_lines(const std::string& path, int n) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  in.seekg(0, std::ios::end);
  std::streamoff size = in.tellg();
  std::streamoff start = size > 65536 ? size - 65536 : 0;
  in.seekg(start);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  size_t idx = text.size();
  for (int i = 0; i < n; ++i) {
    size_t nl = idx == 0 ? std::string::npos : text.rfind('\n', idx - 1);
    if (nl == std::string::npos) return text;
    idx = nl;
  }
  return text.substr(idx + 1);
}

CpuSet allowed_cpus_mask() {
  CpuSet cpus;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) != 0) return cpus;
  for (size_t c = 0; c < cpus.size() && c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) cpus.set(c);
  return cpus;
}

std::string cpu_list(const CpuSet& cpus) {
  std::string out;
  for (size_t c = 0; c < cpus.size(); ++c)
    if (cpus.test(c)) out += (out.empty() ? "" : "+") + std::to_string(c);
  return out;
}

void pin_this_process(const CpuSet& cpus) {
  cpu_set_t set;
  CPU_ZERO(&set);
  for (size_t c = 0; c < cpus.size() && c < CPU_SETSIZE; ++c)
    if (cpus.test(c)) CPU_SET(c, &set);
  if (::sched_setaffinity(0, sizeof set, &set) != 0) {
    int err = errno;
    throw EnvironmentError("cannot pin this process to CPUs " + cpu_list(cpus) + ": " + std::strerror(err));
  }
}

}  // namespace lockstep
