// The rows of `run`/`probe`'s flags (plan/run_flags.h): each writes its
// field as the parser reads it back (tests/cli/help_test.cpp parses them),
// a field at its default writes nothing, and the rows name each other
// consistently.
#include "plan/run_flags.h"

#include <gtest/gtest.h>

#include <set>

namespace lockstep {
namespace {

const RunFlag& row(const std::string& name) {
  for (const RunFlag& f : run_flags())
    if (f.name() == name) return f;
  throw std::runtime_error("no row " + name);
}

TEST(RunFlags, AFieldAtItsDefaultWritesNothing) {
  RunRequest r;
  for (const RunFlag& f : run_flags()) EXPECT_EQ(write_run_flag(f, r), std::vector<std::string>{}) << f.name();
  r.smoke = "smoke/a.json";
  EXPECT_EQ(run_request_args(r, true), (std::vector<std::string>{"run", "smoke/a.json"}));
  EXPECT_EQ(run_request_args(r, false), (std::vector<std::string>{"probe", "smoke/a.json"}));
}

TEST(RunFlags, EachKindOfFieldIsWrittenAsTheParserReadsIt) {
  RunRequest r;
  r.quiet = true;
  r.data_pass = false;  // a switch away from a true default
  r.then_variants = {"split2", "workers0"};
  r.overrides.lr_scale = 0.1;
  r.overrides.workers = 0;  // 0 is not the default (-1)
  r.stop_after = 1000000;
  r.node_rank = 0;
  EXPECT_EQ(write_run_flag(row("--quiet"), r), (std::vector<std::string>{"--quiet"}));
  EXPECT_EQ(write_run_flag(row("--no-data-pass"), r), (std::vector<std::string>{"--no-data-pass"}));
  EXPECT_EQ(write_run_flag(row("--then-variant"), r),
            (std::vector<std::string>{"--then-variant", "split2", "--then-variant", "workers0"}));
  EXPECT_EQ(write_run_flag(row("--lr-scale"), r), (std::vector<std::string>{"--lr-scale", "0.1"}));
  EXPECT_EQ(write_run_flag(row("--workers"), r), (std::vector<std::string>{"--workers", "0"}));
  EXPECT_EQ(write_run_flag(row("--stop-after"), r), (std::vector<std::string>{"--stop-after", "1000000"}));
  EXPECT_EQ(write_run_flag(row("--node-rank"), r), (std::vector<std::string>{"--node-rank", "0"}));
}

TEST(RunFlags, OverrideArgsAreTheOverrideRowsInOrder) {
  RunOverrides o;
  o.intra_op_threads = 2;
  o.world_size = 4;
  o.mode = "strict";
  EXPECT_EQ(override_args(o), (std::vector<std::string>{"--intra-op-threads", "2", "--world-size", "4",
                                                        "--determinism", "strict"}));
  std::vector<std::string> names;
  for (const RunFlag& f : run_flags())
    if (f.override_) names.push_back(f.name());
  EXPECT_EQ(names, (std::vector<std::string>{"--intra-op-threads", "--workers", "--world-size", "--lr-scale",
                                             "--perturb", "--determinism"}));
}

TEST(RunFlags, NamesAreUniqueAndEveryRelationNamesARowOfTheSameCommands) {
  std::set<std::string> names;
  for (const RunFlag& f : run_flags()) {
    EXPECT_TRUE(names.insert(f.name()).second) << f.name() << " twice";
    EXPECT_EQ(f.name().rfind("--", 0), 0u) << f.names_;
    EXPECT_NE(std::string(f.help_), "") << f.name();
  }
  for (const RunFlag& f : run_flags()) {
    std::vector<const char*> others = f.excludes_;
    if (f.needs_ != nullptr) others.push_back(f.needs_);
    for (const char* other : others) {
      ASSERT_EQ(names.count(other), 1u) << f.name() << " names " << other;
      // A row `probe` takes cannot need one it lacks.
      if (!f.run_only_) {
        EXPECT_FALSE(row(other).run_only_) << f.name() << " -> " << other;
      }
    }
  }
}

}  // namespace
}  // namespace lockstep
