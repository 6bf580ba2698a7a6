#include "distributed/rank_progress.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>

namespace lockstep {

const char* rank_phase_name(RankPhase phase) {
  switch (phase) {
    case RankPhase::kStarting: return "starting";
    case RankPhase::kConnecting: return "reaching node 0's store";
    case RankPhase::kRendezvous: return "the rendezvous";
    case RankPhase::kDataPass: return "the data-only pass";
    case RankPhase::kBroadcast: return "the buffer broadcast";
    case RankPhase::kCompute: return "forward/backward";
    case RankPhase::kCollectives: return "the step's collectives";
    case RankPhase::kUpdated: return "after the update";
    case RankPhase::kDone: return "writing its record";
  }
  return "?";
}

std::string ProgressMark::describe() const {
  if (!known) return "not started";
  if (step < 0) return rank_phase_name(phase);
  return "step " + std::to_string(step) + ", " + rank_phase_name(phase);
}

std::string rank_progress_path(const std::string& rendezvous, int rank) {
  return rendezvous + "/rank-" + std::to_string(rank) + ".progress";
}

RankProgress::RankProgress(const std::string& rendezvous, int rank) {
  fd_ = ::open(rank_progress_path(rendezvous, rank).c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC,
               0644);
  mark(-1, RankPhase::kStarting);
}

RankProgress::~RankProgress() {
  if (fd_ >= 0) ::close(fd_);
}

void RankProgress::mark(int64_t step, RankPhase phase) {
  if (fd_ < 0) return;
  // Fixed width, so an overwrite never leaves a longer line's tail behind.
  char line[32];
  std::snprintf(line, sizeof line, "%20lld %2d\n", static_cast<long long>(step), static_cast<int>(phase));
  ssize_t n = ::pwrite(fd_, line, 24, 0);
  (void)n;
}

ProgressMark read_rank_progress(const std::string& rendezvous, int rank) {
  ProgressMark m;
  std::ifstream in(rank_progress_path(rendezvous, rank));
  long long step = 0;
  int phase = 0;
  if (in >> step >> phase && phase >= 0 && phase <= static_cast<int>(RankPhase::kDone) && step >= -1) {
    m.step = step;
    m.phase = static_cast<RankPhase>(phase);
    m.known = true;
  }
  return m;
}

}  // namespace lockstep
