#include "compare/change_summary.h"

#include <gtest/gtest.h>

#include "../record_builder.h"

namespace lockstep {
namespace {

TEST(ChangeSummary, IdenticalRecordsSayNothing) {
  RunRecord r = testing::make_record({2.5, 2.25});
  EXPECT_EQ(describe_changes(r, r), "");
}

TEST(ChangeSummary, BucketsByRelativeChange) {
  RunRecord a = testing::make_record({1, 1, 1, 1, 1}, {1, 1, 1, 1, 1});
  RunRecord b = a;
  b.series["grad_norm"].values = {1, 1 + 1e-8, 1 + 1e-6, 1 + 1e-4, 1.5};
  EXPECT_EQ(describe_changes(a, b),
            "  grad_norm: max |change| 0.5 @4, max rel 0.5 @4; 0:1 <1e-7:1 <1e-5:1 <1e-3:1 >=1e-3:1\n");
}

TEST(ChangeSummary, StructuralChanges) {
  RunRecord a = testing::make_record({1, 1});
  RunRecord b = a;
  b.series.erase("grad_norm");
  b.series["lr"] = Series{Series::Dtype::kFloat64, {0.1, 0.1}, {}, {}, {}, 0, {}};
  b.hashes["params"] = std::string(32, 'a');
  EXPECT_EQ(describe_changes(a, b), "  grad_norm: series removed\n  lr: new series\n  hashes.params: changed\n");
}

}  // namespace
}  // namespace lockstep
