// The one process runner every feature uses (a team's trainer, the ranks
// of a multi-rank run, the child `lockstep run` of check and bless): argv,
// environment and working folder given, stdout and stderr to files, a
// wall-clock timeout, its own process group killed when it is exceeded
// (DataLoader workers included), the child killed with this process
// (PR_SET_PDEATHSIG, and SIGINT/SIGTERM/SIGHUP forwarded to the groups
// while they run), and how it ended.
//
//   ProcessSpec p;
//   p.argv = {"python3", "train.py", "--steps", "10"};
//   p.env = {"PATH=/usr/bin", "LOCKSTEP_SEED=7"};
//   p.cwd = "/repo/examples/pytorch-trainer";
//   p.stdout_path = "out/train.stdout.log";  p.stderr_path = "out/train.stderr.log";
//   p.timeout_s = 600;
//   ProcessOutcome o = run_process(p);   // exit 2 if argv[0] cannot be found or run
//   if (!o.ok()) std::cerr << o.describe() << "\n" << tail_lines(p.stderr_path, 40);
#pragma once

#include <signal.h>

#include <bitset>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace lockstep {

/// A set of CPU numbers (0 .. 1023, as the kernel's cpu_set_t): an
/// affinity mask that lives in place, allocating nothing.
using CpuSet = std::bitset<1024>;

/// What to run.
struct ProcessSpec {
  std::vector<std::string> argv;  ///< argv[0]: a path (relative to cwd) or a name found on the env's PATH
  std::vector<std::string> env;   ///< "NAME=value" entries, the whole environment
  std::string cwd;                ///< working folder (must exist)
  std::string stdout_path;        ///< created/truncated; the child's stdout ("": ours, inherited)
  std::string stderr_path;        ///< created/truncated; the child's stderr
  int64_t timeout_s = 600;        ///< wall-clock seconds before SIGTERM, then SIGKILL kill_grace_ms later
  /// Milliseconds between the SIGTERM of a timeout and the SIGKILL: the
  /// time a trainer gets to flush and exit on its own (5 s; tests shorten it).
  int64_t kill_grace_ms = 5000;
  /// What argv[0] is, for messages: the config field it came from
  /// ("trainer.command[0]") or what it is ("lockstep run").
  std::string what = "trainer.command[0]";
  /// Any set: the process (and all it starts) is pinned to these CPUs
  /// before it execs (`run --vary affinity`).
  CpuSet cpus;
};

/// How the process ended.
struct ProcessOutcome {
  int exit_status = -1;   ///< exit status when it exited, else -1
  int signal = 0;         ///< the signal that killed it, else 0
  bool timed_out = false; ///< killed by us after timeout_s
  /// run_processes with stop_all_on_failure: killed by us because another
  /// process of the set failed first (its outcome is not its own fault).
  bool stopped_for_peer = false;
  double wall_s = 0;      ///< seconds from start to end
  bool ok() const { return exit_status == 0 && signal == 0 && !timed_out; }
  /// "exited with status 1", "was killed by signal 9 (Killed)", "timed out after 600 s (killed)".
  std::string describe(int64_t timeout_s) const;
};

/// The absolute path argv0 runs as: with a '/', relative to `cwd`; else the
/// first executable match on `path_var` (a PATH value). Throws exit-2
/// BadUsage naming it (as `what`) when it does not exist or is not executable.
std::string resolve_program(const std::string& argv0, const std::string& cwd, const std::string& path_var,
                            const std::string& what = "trainer.command[0]");

/// From now on SIGINT, SIGTERM and SIGHUP end this process with one line
/// on stderr before it dies of the signal: "lockstep: stopped by SIGINT:
/// the runs and trainers it started were killed; no verdict" (or, with
/// none running, "lockstep: stopped by SIGINT; no verdict"), so a terminal
/// or a cancelled job's log says why a command ended without one. Called
/// once, first thing in main(); run_process's handler is the same one. A
/// signal this process was started ignoring (nohup) stays ignored.
void say_when_stopped_by_a_signal();

/// While one is alive, SIGINT, SIGTERM and SIGHUP no longer end this
/// process at once: the running children's groups are killed (their runs
/// then fail), and received() says which signal came, so a long command
/// (bisect) can remove its temporary files before it ends with reraise().
///
///   StopSignals stop;
///   for (...) { if (StopSignals::received()) break; run_process(...); }
///   cleanup();  StopSignals::reraise();   // ends as the signal would have
class StopSignals {
 public:
  StopSignals();
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;
  /// The signal received since construction, or 0.
  static int received();
  /// Ends this process with the signal received (default action); returns
  /// when none was.
  static void reraise();

 private:
  static constexpr int kStopSignals[3] = {2 /*SIGINT*/, 15 /*SIGTERM*/, 1 /*SIGHUP*/};
  struct sigaction old_[3];
};

/// Runs `spec` to completion (or its timeout). Throws exit-2 for a program
/// that cannot be found or executed, exit-3 when the process cannot be
/// started (fork/spawn failure) or a log file cannot be created.
ProcessOutcome run_process(const ProcessSpec& spec);

/// How long the others of a set that lost a process get to end on their
/// own before they are killed (run_processes, stop_all_on_failure).
inline constexpr std::chrono::milliseconds kPeerExitGrace{1500};

/// Runs every spec at the same time (each with its own timeout) and waits
/// for all: a trainer's data-only pass runs beside its training pass. The
/// same errors as run_process(); when one cannot be started, those already
/// started are killed. With `stop_all_on_failure` (the ranks of one
/// multi-rank run), the first process that fails (non-zero exit, signal,
/// timeout) gets the others killed `peer_grace` later (stopped_for_peer): they
/// would only wait for it. Processes that end before then are judged on
/// their own, so a rank's own error is not lost behind the peer that saw
/// its connection close first.
std::vector<ProcessOutcome> run_processes(const std::vector<ProcessSpec>& specs, bool stop_all_on_failure = false,
                                          std::chrono::milliseconds peer_grace = kPeerExitGrace);

/// The process groups the signal handler would kill now (the processes
/// every thread's run_process/run_processes has started and not yet
/// finished with): for tests and diagnostics.
std::vector<pid_t> trainer_groups_registered();

/// The CPUs this process may run on (its affinity mask); none set when the
/// mask cannot be read.
CpuSet allowed_cpus_mask();

/// Pins this process (its threads started from now on, and every process
/// it starts) to `cpus` (sched_setaffinity); allocates nothing. Throws
/// EnvironmentError (exit 3) naming the CPUs when the kernel refuses.
void pin_this_process(const CpuSet& cpus);

/// "1+3": the CPUs of `cpus`, ascending, joined by '+'.
std::string cpu_list(const CpuSet& cpus);

/// The last `n` lines of the text file at `path` (at most the last 64 KiB
/// read); "" when it is missing or empty.
std::string tail_lines(const std::string& path, int n);

}  // namespace lockstep
