// One rank's handle on the run's c10d process group (Gloo on the CPU): the
// collectives the multi-rank trainer needs, with the rank and step they
// belong to in every error.
//
//   RankGroup g(me, std::chrono::seconds(60));     // rendezvous: <rendezvous>/store
//   g.allreduce_sum(flat_grads);                  // in place, float32 [N]
//   torch::Tensor all = g.allgather(mine);        // [world_size, ...mine.sizes()]
//
// The process group itself is c10d::ProcessGroupGloo (torch_compat.h has
// the 1.13 / 2.x difference); its rendezvous is a c10d FileStore in the
// run's rendezvous folder, fresh for every run, or, for ranks on several
// machines, a TCPStore that rank 0 serves at the --master address.
#pragma once

#include <torch/types.h>

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "spec/distributed_spec.h"

namespace lockstep {

class RankProgress;

/// What every node of a run on several machines must agree on before its
/// ranks join (run/smoke_run.cpp fills it): each node read its own copy of
/// the config and data, with its own overrides, LOCKSTEP_SEED and lockstep.
struct NodeFacts {
  std::string file;  ///< this node's smoke config, named in the error
  std::vector<std::pair<std::string, std::string>> facts;  ///< {"config_hash", "..."}, ...; compared in this order
};

/// A joined process group. Not copyable; destroying it leaves the group.
class RankGroup {
 public:
  /// Joins the group of `me` (rendezvous folder, rank, world size) within
  /// `timeout`. On several machines (me.nnodes > 1) the store is node 0's
  /// TCPStore, `progress` (optional) is marked when it is reached, and every
  /// rank first publishes `facts` and compares them with rank 0's: the
  /// first difference is exit-2 BadInput on every rank ("<file>: <fact>:
  /// expected the same on every node; rank R (node K) has ..."), before
  /// any rank waits in Gloo for ranks that will never come; rank 0, which
  /// serves the store, stops only once every rank read that verdict (at
  /// most 10 s more). Throws exit-3
  /// Error when this build has no Gloo (built without gloo headers) or the
  /// rendezvous fails or times out.
  RankGroup(const RankIdentity& me, std::chrono::milliseconds timeout, RankProgress* progress = nullptr,
            const NodeFacts& facts = {});
  ~RankGroup();
  RankGroup(const RankGroup&) = delete;
  RankGroup& operator=(const RankGroup&) = delete;

  int rank() const { return me_.rank; }
  int world_size() const { return me_.world_size; }

  /// Sums `t` (a contiguous CPU tensor) over all ranks, in place; every
  /// rank receives the same bits. Throws exit-3 Error when a peer is gone
  /// or the collective times out (`what` names it).
  void allreduce_sum(torch::Tensor& t, const std::string& what);

  /// Every rank's `t` (contiguous CPU, same shape on every rank), stacked
  /// in rank order: [world_size, ...t.sizes()]. Same errors.
  torch::Tensor allgather(const torch::Tensor& t, const std::string& what);

  /// Overwrites `t` (contiguous CPU) on every rank with rank 0's. Same errors.
  void broadcast_from_rank0(torch::Tensor& t, const std::string& what);

  /// Rank 0 gathers `mine` of ranks `first`..world_size-1 through the
  /// group's store (each publishes it under `key`; ranks below `first`
  /// publish nothing): {rank, value} on rank 0, {} on the others. E.g. the
  /// rank records of the other nodes of a run on several machines, which
  /// node 0 merges with its own. Rank 0 blocks until they have all
  /// published, within the group's timeout. Throws exit-3 Error when the
  /// store is gone or the wait times out.
  std::map<int, std::string> gather_to_rank0(const std::string& key, const std::string& mine, int first);

  /// "gloo <header version>, <loaded library path>" for the fingerprint.
  static std::string gloo_version();

 private:
  std::string peer_hint() const;  // where to look when a peer vanished on another node
  struct Impl;
  RankIdentity me_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace lockstep
