// The progress files the coordinator reads when a run hangs or a rank dies.
#include "distributed/rank_progress.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace lockstep {
namespace {
namespace fs = std::filesystem;

TEST(RankProgress, MarksAreReadBackAndOrdered) {
  fs::path d = fs::temp_directory_path() / ("lockstep-progress-" + std::to_string(::getpid()));
  fs::create_directories(d);
  {
    RankProgress p(d.string(), 1);
    EXPECT_EQ(read_rank_progress(d.string(), 1).describe(), "starting");
    p.mark(12, RankPhase::kCollectives);
    p.mark(3, RankPhase::kCompute);  // a shorter line overwrites a longer one whole
  }
  ProgressMark m = read_rank_progress(d.string(), 1);
  EXPECT_TRUE(m.known);
  EXPECT_EQ(m.describe(), "step 3, forward/backward");
  EXPECT_EQ(read_rank_progress(d.string(), 0).describe(), "not started");
  ProgressMark later{3, RankPhase::kCollectives, true};
  EXPECT_TRUE(m < later);
  EXPECT_FALSE(later < m);
  std::ofstream(rank_progress_path(d.string(), 2)) << "garbage\n";
  EXPECT_FALSE(read_rank_progress(d.string(), 2).known);
  fs::remove_all(d);
}

}  // namespace
}  // namespace lockstep
