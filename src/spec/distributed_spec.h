// The "distributed" section of a smoke config and the identity of one rank,
// as plain data with no LibTorch: the config parser (torch-free), the rank
// coordinator (distributed/rank_launch.h) and the trainer share them.
//
//   "distributed": {"world_size": 2, "backend": "gloo", "timeout_s": 60,
//                   "self_test": {"fault": "skip_allreduce", "rank": 1, "step": 3}}
//
//   DistributedSpec d;  d.world_size = 2;
//   RankIdentity me{/*rank=*/1, /*world_size=*/2, "out/run.json.ranks"};
//
// The multi-rank contract (docs/distributed.md) in one place:
//   - every rank starts from the same base seed; the sampler draws one global
//     permutation per epoch from the "sampler" stream and rank r takes
//     positions r, r + W, r + 2W, ... of its first floor(n / W) * W entries
//     (torch DistributedSampler with drop_last), so every rank has the same
//     batch shape; augmentation and dropout streams carry the rank in their key;
//   - parameters are initialised identically on every rank (checked by an
//     all-gather of their hashes before step 0);
//   - after backward, all gradients are flattened in parameter registration
//     order into one float32 bucket, all-reduced (sum) and divided by W: the
//     bucketing is part of the contract (splitting or fusing buckets changes
//     the bits);
//   - buffers (BatchNorm running statistics) are rank 0's, broadcast before
//     each forward and after the last step (DDP's broadcast_buffers=True);
//   - every rank's loss and a non-finite flag are all-gathered each step;
//     the global loss is float32(sum of float64(local losses) in rank
//     order / W); a non-finite loss or gradient on any rank stops the run at
//     that step naming the rank;
//   - after the update every rank's per-parameter XXH3-64 hashes are
//     all-gathered: a rank whose parameters differ from rank 0's stops the
//     run naming the step, the rank and the first parameter.
#pragma once

#include <cstdint>
#include <string>

namespace lockstep {

/// A deliberate failure on one rank, so a team can prove the cross-rank
/// checks on its own stack (config "distributed.self_test").
struct RankFault {
  /// "" (none); "skip_allreduce": the rank joins the gradient all-reduce but
  /// keeps its local gradients (a desync); "nan_loss": its loss becomes NaN
  /// before backward; "kill": it sends itself SIGKILL; "hang": it stops
  /// responding (sleeps) before the step's collectives.
  std::string fault;
  int rank = 1;       ///< the rank that misbehaves
  int64_t step = 0;   ///< the 0-based step at which it does
};

/// The "distributed" section. Absent: a single process, as before.
struct DistributedSpec {
  bool configured = false;  ///< the section is present (world_size 1 still runs through c10d)
  int world_size = 1;       ///< rank processes per run, 1..64
  std::string backend = "gloo";  ///< "gloo" (device cpu) or "nccl" (device cuda)
  /// Seconds a run may take before every rank is killed and the run is
  /// exit 1 naming the rank that stopped; also the rendezvous and
  /// collective timeout inside each rank (plus a margin, so the
  /// coordinator's verdict comes first).
  int64_t timeout_s = 120;
  RankFault self_test;
};

/// Where the ranks of a run on several machines meet: the c10d TCPStore
/// that global rank 0 serves (torchrun's MASTER_ADDR and MASTER_PORT).
/// Empty on one machine, where the store is a FileStore in the rendezvous
/// folder.
struct MasterAddress {
  std::string host;  ///< a name or address every node reaches node 0 by
  int port = 0;      ///< 1..65535; 0: one machine
  bool set() const { return port > 0; }
  /// "host:port", "[::1]:port" for an IPv6 address (parse_master_address reads it back).
  std::string describe() const {
    return (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" + std::to_string(port);
  }
};

/// Which rank this process is (set only in a rank process started by the
/// coordinator with --rank/--rendezvous).
struct RankIdentity {
  int rank = -1;          ///< -1: not a rank process; else the global rank
  int world_size = 1;
  std::string rendezvous; ///< this node's rendezvous folder (FileStore "store" on one machine, progress files, logs)
  int nnodes = 1;         ///< machines the ranks are spread over; the first world_size / nnodes ranks are node 0's
  MasterAddress master;   ///< set when nnodes > 1
  bool active() const { return rank >= 0; }
  /// Ranks per node: node k runs ranks k * local_ranks() .. (k + 1) * local_ranks() - 1.
  int local_ranks() const { return world_size / (nnodes > 0 ? nnodes : 1); }
};

/// Parses "HOST:PORT" (IPv6 as "[::1]:PORT"). Returns nullopt-like (port 0)
/// with `error` set when it is not one: empty host, a port outside
/// 1..65535, or no colon.
MasterAddress parse_master_address(const std::string& text, std::string* error);

}  // namespace lockstep
