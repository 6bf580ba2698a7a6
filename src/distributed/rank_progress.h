// Where each rank of a multi-rank run is, so that when a run hangs or a
// rank dies the coordinator can say which rank stopped, at which step and
// doing what. Each rank overwrites one small file in the rendezvous folder
// in place (a pwrite of a fixed-width line: no allocation, no rename, cheap
// enough for every step); the coordinator reads them after the run.
//
//   RankProgress p(rendezvous, rank);        // creates <rendezvous>/rank-<r>.progress
//   p.mark(3, RankPhase::kCompute);
//   ProgressMark m = read_rank_progress(rendezvous, 1);   // {3, kCompute} or {-1, kStarting}
#pragma once

#include <cstdint>
#include <string>

namespace lockstep {

/// What a rank is doing; later phases of the same step compare greater.
enum class RankPhase : int {
  kStarting = 0,     ///< process started, before the rendezvous
  kConnecting = 1,   ///< several machines: reaching the TCPStore node 0 serves
  kRendezvous = 2,   ///< joining the process group (the store reached)
  kDataPass = 3,     ///< the data-only pass
  kBroadcast = 4,    ///< receiving rank 0's buffers before the step's forward
  kCompute = 5,      ///< forward and backward of the step
  kCollectives = 6,  ///< in the step's all-gathers and all-reduce
  kUpdated = 7,      ///< optimiser step done, parameter check passed
  kDone = 8,         ///< writing its record
};

/// "forward/backward", "the step's collectives", ...
const char* rank_phase_name(RankPhase phase);

/// A rank's last mark: step -1 before training.
struct ProgressMark {
  int64_t step = -1;
  RankPhase phase = RankPhase::kStarting;
  bool known = false;  ///< false when the file is missing or unreadable
  /// "step 3, forward/backward", "the rendezvous", "not started".
  std::string describe() const;
  bool operator<(const ProgressMark& o) const {
    return step != o.step ? step < o.step : static_cast<int>(phase) < static_cast<int>(o.phase);
  }
};

/// The progress file of `rank` in `rendezvous`.
std::string rank_progress_path(const std::string& rendezvous, int rank);

/// The writer a rank keeps. Never throws: progress is a diagnostic, a
/// failed write leaves the mark unknown.
class RankProgress {
 public:
  RankProgress(const std::string& rendezvous, int rank);
  ~RankProgress();
  RankProgress(const RankProgress&) = delete;
  RankProgress& operator=(const RankProgress&) = delete;
  void mark(int64_t step, RankPhase phase);

 private:
  int fd_ = -1;
};

/// Reads the mark of `rank`; known = false when missing or malformed.
ProgressMark read_rank_progress(const std::string& rendezvous, int rank);

}  // namespace lockstep
