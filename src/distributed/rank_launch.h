// The coordinator of a multi-rank run: starts one fresh `lockstep-torch run
// --rank R --rendezvous DIR` process per rank, waits for all of them within
// the smoke's timeout, and turns any failure into one verdict naming the
// rank. Torch-free: the ranks load LibTorch, the coordinator only waits.
//
//   RankLaunch l;
//   l.executable = sibling_executable("lockstep-torch");
//   l.rendezvous = "lockstep-out/digits-cnn-2rank.run.json.ranks";
//   l.argv = [&](int r, const std::string& record) {      // rank r's RunRequest, written
//     return run_request_args(rank_request(r, record), /*train=*/true);   // by plan/'s writer
//   };
//   l.world_size = 2;  l.timeout_s = 120;
//   std::vector<std::string> records = run_ranks(l);   // <rendezvous>/rank-<r>.json, rank order
//
// How a failed run is judged (the first match):
//   1. a rank killed by a signal it was not sent by us: exit 1, "rank R of W
//      was killed by signal N at step S, <phase>";
//   2. the deadline passed: exit 1 naming the rank(s) furthest behind (from
//      the progress files, distributed/rank_progress.h) and where the
//      others waited;
//   3. a rank's own error, by class: exit 1 (a cross-rank check, whose
//      message every rank computes alike), then 2, then 3, the lowest rank
//      first, with its message;
// ranks killed because another failed first are never blamed. Every rank's
// process group is killed before run_ranks returns or throws: no orphans.
// On several machines each node's coordinator judges its own ranks; a rank
// that fails on one node shows on the others as a peer that went away.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/process.h"

namespace lockstep {

/// One multi-rank run to start.
struct RankLaunch {
  std::string executable;         ///< the LibTorch executable (lockstep-torch)
  /// The arguments (after `executable`) of rank r's process, which writes
  /// its record to `record` (<rendezvous>/rank-<r>.json) and joins the
  /// group in `rendezvous` (and, on several machines, at `master`): the
  /// caller writes the rank's whole request (cli/'s rank producer, through
  /// plan/'s run_request_args); nothing is appended here.
  std::function<std::vector<std::string>(int rank, const std::string& record)> argv;
  std::string rendezvous;         ///< folder for the store, progress files, rank records and logs
  int world_size = 1;
  int64_t timeout_s = 120;        ///< the whole run, every rank
  std::string smoke;              ///< the smoke's name, for messages
  /// Several machines: this coordinator starts node_rank's share of the
  /// ranks (world_size / nnodes of them, global ranks from node_rank *
  /// world_size / nnodes), which meet the other nodes' at `master`
  /// ("HOST:PORT", node 0's TCPStore). nnodes 1: every rank, FileStore.
  int nnodes = 1;
  int node_rank = 0;
  std::string master;
  /// How long the other ranks get to end on their own once one failed
  /// (core/process.h kPeerExitGrace; tests use less): a rank's own error
  /// that is still on its way out outranks the peer that saw it go.
  int64_t peer_grace_ms = kPeerExitGrace.count();
  /// `run --vary env-order`: each rank's environment in reverse order.
  bool reverse_environment = false;
};

/// Runs the ranks (see above). Returns the rank records' paths in rank
/// order: every rank's on node 0 (rank 0 writes the other nodes' ones into
/// this node's rendezvous folder), none on another node. Throws Error: exit 1 for a dead, hung or failed-check rank; a
/// rank's own exit 2 or 3 with its message ("rank R: ..."); exit 2 when the
/// rendezvous folder exists and is not one lockstep made; exit 3 when a
/// process cannot be started (`executable` missing or not executable: said
/// before any rank starts).
std::vector<std::string> run_ranks(const RankLaunch& launch);

}  // namespace lockstep
