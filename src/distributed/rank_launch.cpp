#include "distributed/rank_launch.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/directory_lock.h"
#include "core/child_error.h"
#include "core/error.h"
#include "core/install_paths.h"
#include "distributed/rank_progress.h"
#include "core/process.h"
#include "core/torch_start.h"

extern char** environ;

namespace lockstep {
namespace fs = std::filesystem;

namespace {

constexpr const char* kMarker = ".lockstep-ranks";

// A fresh rendezvous folder: a stale FileStore from an earlier run would
// join this run's ranks to a dead group. Only a folder lockstep made (it
// holds the marker) is ever removed.
void fresh_rendezvous(const std::string& dir) {
  std::error_code ec;
  if (fs::exists(fs::symlink_status(dir, ec))) {
    if (fs::is_symlink(dir, ec) || !fs::is_directory(dir, ec) || !fs::exists(fs::path(dir) / kMarker, ec))
      throw BadUsage(dir + ": exists and is not a rendezvous folder lockstep made; refusing to remove it "
                     "(move it away, or choose another --record)");
    fs::remove_all(dir, ec);
    if (ec) throw io_error(dir, "remove the previous run's rendezvous folder", ec.value());
  }
  fs::create_directories(dir, ec);
  if (ec) throw io_error(dir, "create the rendezvous folder", ec.value());
  std::ofstream(fs::path(dir) / kMarker) << "ranks of one lockstep run; removed by the next run\n";
}

std::string log_path(const std::string& dir, int rank) { return dir + "/rank-" + std::to_string(rank) + ".log"; }

// The rank's error message: its last "lockstep: error: " line and the
// quoted lines under it.
std::string rank_error(const std::string& dir, int rank) {
  std::ifstream in(log_path(dir, rank), std::ios::binary);
  std::string line;
  ChildErrorReader err;
  while (std::getline(in, line)) err.feed(line);
  std::string reason = err.reason();
  if (reason.empty()) {
    std::string tail = tail_lines(log_path(dir, rank), 5);
    reason = tail.empty() ? "(no error message)" : "(no lockstep error line; its log ends:)\n  | " + tail;
  }
  return reason;
}

// Lower is blamed first among ranks that failed on their own.
int blame_order(const ProcessOutcome& o) {
  if (o.signal != 0) return 0;
  if (o.exit_status == 1) return 1;
  if (o.exit_status == 2) return 2;
  if (o.exit_status == 3) return 3;
  return 4;
}

int local_ranks(const RankLaunch& l) { return l.world_size / std::max(1, l.nnodes); }
int first_rank(const RankLaunch& l) { return l.node_rank * local_ranks(l); }

// " (node 1 of 2)" on several machines, "" on one.
std::string node_label(const RankLaunch& l) {
  return l.nnodes > 1 ? " (node " + std::to_string(l.node_rank) + " of " + std::to_string(l.nnodes) + ")" : "";
}

// The timeout on one node of several: it sees only its own ranks, so it
// says where each was and what that means, rather than guessing a culprit.
[[noreturn]] void throw_node_timeout(const RankLaunch& l, const std::vector<ProgressMark>& marks,
                                     const ProgressMark& lowest, bool all_alike) {
  std::string limit = "distributed.timeout_s = " + std::to_string(l.timeout_s) + " s";
  std::string here = "the ranks of " + l.smoke + " on this node" + node_label(l);
  std::string logs = " (logs: " + l.rendezvous + ")";
  if (all_alike && lowest.known && lowest.phase == RankPhase::kConnecting && l.node_rank == 0)
    throw Error(ExitCode::kRegression,
                here + " could not reach the store rank 0 serves at " + l.master + " within " + limit +
                    ": does --master name this machine (node 0), at an address its ranks reach?" + logs);
  if (all_alike && lowest.known && lowest.phase == RankPhase::kConnecting)
    throw Error(ExitCode::kRegression,
                here + " could not reach node 0's store at " + l.master + " within " + limit +
                    ": nothing answered there. Rank 0, on node 0, serves it: start the same `lockstep run` with "
                    "--node-rank 0 and this --master there, and check that this host reaches that address and port" +
                    logs);
  if (all_alike && lowest.known && lowest.phase == RankPhase::kRendezvous)
    throw Error(ExitCode::kRegression,
                here + " waited at the rendezvous (" + l.master + ") for " +
                    std::to_string(l.world_size - local_ranks(l)) +
                    " rank(s) of the other nodes, and they did not all come within " + limit +
                    "; start the same `lockstep run` with --nnodes " + std::to_string(l.nnodes) +
                    ", this --master and each --node-rank on every node" +
                    (l.node_rank > 0 ? " (if node 0 was running, something other than its store may be answering at "
                                       "that address)"
                                     : std::string()) +
                    logs);
  std::string where;
  for (size_t i = 0; i < marks.size(); ++i)
    where += (i ? "; " : "") + std::string("rank ") + std::to_string(first_rank(l) + static_cast<int>(i)) + " at " +
             marks[i].describe();
  throw Error(ExitCode::kRegression,
              here + " did not finish within " + limit + " and were killed; they were at: " + where +
                  ". A rank in the buffer broadcast or the step's collectives waits for the others; a rank "
                  "anywhere else was working or stopped. If every rank here was waiting, the one that stopped is on another node: see the other "
                  "nodes' job logs" + logs);
}

[[noreturn]] void throw_timeout(const RankLaunch& l) {
  // Only this node's ranks have progress files here.
  std::vector<ProgressMark> marks;
  for (int i = 0; i < local_ranks(l); ++i) marks.push_back(read_rank_progress(l.rendezvous, first_rank(l) + i));
  ProgressMark lowest = *std::min_element(marks.begin(), marks.end());
  std::vector<int> behind, others;
  for (int i = 0; i < local_ranks(l); ++i)
    (marks[static_cast<size_t>(i)] < lowest || lowest < marks[static_cast<size_t>(i)] ? others : behind)
        .push_back(first_rank(l) + i);
  if (l.nnodes > 1) throw_node_timeout(l, marks, lowest, others.empty());
  std::string limit = "distributed.timeout_s = " + std::to_string(l.timeout_s) + " s";
  if (others.empty())
    throw Error(ExitCode::kRegression,
                "no rank of " + l.smoke + " finished within " + limit + " (every rank at " + lowest.describe() +
                    "); all ranks were killed (the timeout counts from process start: LibTorch, the rendezvous and the "
                "data-only pass too; logs: " + l.rendezvous + ")");
  std::string who;
  for (size_t i = 0; i < behind.size(); ++i) who += (i ? ", " : "") + std::to_string(behind[i]);
  std::string waited;
  for (size_t i = 0; i < others.size(); ++i)
    waited += (i ? "; " : "") + std::string("rank ") + std::to_string(others[i]) + " at " +
              marks[static_cast<size_t>(others[i] - first_rank(l))].describe();
  throw Error(ExitCode::kRegression,
              std::string(behind.size() == 1 ? "rank " : "ranks ") + who + " of " + std::to_string(l.world_size) +
                  " stopped (last seen: " + lowest.describe() + ") and did not finish within " + limit +
                  "; the other ranks waited for it (" + waited + "); all ranks were killed (the timeout counts from process start: LibTorch, the rendezvous and the "
                "data-only pass too; logs: " + l.rendezvous +
                  ")");
}

// One process per rank of this node: `executable argv(r, <rendezvous>/rank-<r>.json)`,
// logs in the rendezvous folder.
std::vector<ProcessSpec> rank_specs(const RankLaunch& l, const std::vector<std::string>& records) {
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) env.emplace_back(*e);
  env = with_torch_start_tunables(std::move(env));  // a faster LibTorch start-up (core/torch_start.h)
  if (l.reverse_environment) std::reverse(env.begin(), env.end());
  std::string cwd = fs::current_path().string();
  std::vector<ProcessSpec> specs;
  for (int i = 0; i < local_ranks(l); ++i) {
    int r = first_rank(l) + i;
    ProcessSpec p;
    p.what = "lockstep-torch (rank " + std::to_string(r) + ")";
    p.argv = {l.executable};
    for (auto& arg : l.argv(r, records[static_cast<size_t>(r)])) p.argv.push_back(std::move(arg));
    p.env = env;  // the rank dies with this coordinator (core/process.h)
    p.cwd = cwd;
    p.stdout_path = l.rendezvous + "/rank-" + std::to_string(r) + ".stdout.log";
    p.stderr_path = log_path(l.rendezvous, r);
    p.timeout_s = l.timeout_s;
    specs.push_back(std::move(p));
  }
  return specs;
}

// The one verdict for a run whose rank `culprit` (global) failed on its
// own (see the header's order): a signal, its error by class, or another exit.
[[noreturn]] void throw_rank_failure(const RankLaunch& l, int culprit, const ProcessOutcome& o) {
  std::string who = "rank " + std::to_string(culprit) + " of " + std::to_string(l.world_size) + node_label(l);
  if (o.signal != 0) {
    ProgressMark mark = read_rank_progress(l.rendezvous, culprit);
    // Before the data-only pass a rank has only loaded LibTorch and talked
    // to the store: a crash there is the environment's (something else at
    // the --master port, a broken install), not the training's.
    if (mark.step < 0 && mark.phase < RankPhase::kDataPass) {
      std::string tail = tail_lines(log_path(l.rendezvous, culprit), 3);
      throw EnvironmentError(who + " " + o.describe(l.timeout_s) + " at " + mark.describe() +
                             ", before any training" +
                             (l.nnodes > 1 ? " (is something other than node 0's lockstep serving " + l.master + "?)"
                                           : std::string()) +
                             "; the other ranks were stopped (logs: " + l.rendezvous + ")" +
                             (tail.empty() ? std::string() : "; its log ends:\n  | " + tail));
    }
    throw Error(ExitCode::kRegression, who + " " + o.describe(l.timeout_s) + " at " + mark.describe() +
                                           "; the other ranks were stopped (logs: " + l.rendezvous + ")");
  }
  std::string reason = rank_error(l.rendezvous, culprit);
  if (o.exit_status == 1) throw Error(ExitCode::kRegression, reason);  // names the rank itself
  // A rank's own message may already begin with its name: said once.
  if (std::string own = "rank " + std::to_string(culprit) + " of " + std::to_string(l.world_size) + ": ";
      reason.rfind(own, 0) == 0)
    reason = reason.substr(own.size());
  if (o.exit_status == 2 || o.exit_status == 3)
    throw Error(static_cast<ExitCode>(o.exit_status), who + ": " + reason);
  throw Error(ExitCode::kEnvironment, who + " " + o.describe(l.timeout_s) + ": " + reason);
}

}  // namespace

std::vector<std::string> run_ranks(const RankLaunch& l) {
  // Said once, as what it is, rather than as W ranks that could not start.
  if (::access(l.executable.c_str(), X_OK) != 0) {
    int err = errno;
    throw EnvironmentError("the ranks of " + l.smoke + " run in " + l.executable + ", which cannot be started: " +
                           std::strerror(err) + " " + missing_torch_hint());
  }
  // Two runs with one record path would share (and remove) one rendezvous.
  DirectoryLock lock(l.rendezvous + ".lock", /*wait=*/true, [&](int pid) {
    throw EnvironmentError(l.rendezvous + ": another `lockstep run` with this record path is running" +
                           (pid > 0 ? " (pid " + std::to_string(pid) + ")" : std::string()) +
                           "; give one of them another --record");
  });
  fresh_rendezvous(l.rendezvous);
  std::vector<std::string> records;
  for (int r = 0; r < l.world_size; ++r) records.push_back(l.rendezvous + "/rank-" + std::to_string(r) + ".json");
  std::vector<ProcessOutcome> out =
      run_processes(rank_specs(l, records), /*stop_all_on_failure=*/true, std::chrono::milliseconds(l.peer_grace_ms));

  int culprit = -1;  // index into out (local)
  bool timed_out = false;
  for (int i = 0; i < local_ranks(l); ++i) {
    const ProcessOutcome& o = out[static_cast<size_t>(i)];
    if (o.ok() || o.stopped_for_peer) continue;
    if (o.timed_out) {
      timed_out = true;
      continue;
    }
    if (culprit < 0 || blame_order(o) < blame_order(out[static_cast<size_t>(culprit)])) culprit = i;
  }
  // A signal or a rank's own error explains a run better than the deadline.
  if (culprit < 0 && timed_out) throw_timeout(l);
  if (culprit < 0) return l.node_rank == 0 ? records : std::vector<std::string>{};
  throw_rank_failure(l, first_rank(l) + culprit, out[static_cast<size_t>(culprit)]);
}

}  // namespace lockstep
