#include "compare/tolerance.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace lockstep {
namespace {

TEST(Tolerance, CloseBoundaryIsInclusive) {
  // golden 1.0, run 0.875, rtol 0.125, atol 0: |err| == allowed -> pass.
  ValueCheck c = check_value(0.875, 1.0, Tolerance::close(0, 0.125), false);
  EXPECT_TRUE(c.pass);
  EXPECT_EQ(c.abs_err, 0.125);
  EXPECT_EQ(c.allowed, 0.125);
}

TEST(Tolerance, ScalesByTheGoldenNotTheRun) {
  // Asymmetric on purpose (torch.testing.assert_close): golden is the reference.
  EXPECT_TRUE(check_value(1.5, 1.0, Tolerance::close(0, 0.5), false).pass);
  EXPECT_FALSE(check_value(1.0, 1.5, Tolerance::close(0, 0.25), false).pass);
}

TEST(Tolerance, ZeroGoldenWithZeroAtolFailsAndRelIsNa) {
  ValueCheck c = check_value(1e-9, 0.0, Tolerance::close(0, 1e-3), false);
  EXPECT_FALSE(c.pass);
  EXPECT_TRUE(std::isnan(c.rel_err));
  EXPECT_EQ(format_error(c.rel_err), "n/a");
  EXPECT_TRUE(check_value(1e-9, 0.0, Tolerance::close(1e-8, 0), false).pass);
}

TEST(Tolerance, NonFiniteRunFailsUnderEveryRule) {
  for (Tolerance t : {Tolerance::exact(), Tolerance::close(1e300, 1e300), Tolerance::ulp(UINT64_MAX - 1)}) {
    for (double bad : std::vector<double>{std::nan(""), INFINITY, -INFINITY}) {
      ValueCheck c = check_value(bad, 1.0, t, false);
      EXPECT_FALSE(c.pass);
      EXPECT_TRUE(c.non_finite);
      EXPECT_EQ(format_error(c.rel_err), "n/a");
    }
  }
}

TEST(Tolerance, NonFiniteGoldenPassesOnlyAgainstTheSame) {
  EXPECT_TRUE(check_value(std::nan(""), std::nan(""), Tolerance::exact(), false).pass);
  EXPECT_TRUE(check_value(INFINITY, INFINITY, Tolerance::exact(), false).pass);
  EXPECT_FALSE(check_value(-INFINITY, INFINITY, Tolerance::exact(), false).pass);
  EXPECT_FALSE(check_value(1.0, std::nan(""), Tolerance::close(1, 1), false).pass);
}

TEST(Tolerance, ExactFloat32AndUlp) {
  float g = 2.5f;
  float next = std::nextafter(g, 3.0f);
  EXPECT_FALSE(check_value(next, g, Tolerance::exact(), true).pass);
  ValueCheck c = check_value(next, g, Tolerance::ulp(1), true);
  EXPECT_TRUE(c.pass);
  EXPECT_EQ(c.ulps, 1u);
  EXPECT_FALSE(check_value(0.0, -0.0, Tolerance::exact(), false).pass);  // bit-identical means bits
  EXPECT_TRUE(check_value(0.0, -0.0, Tolerance::ulp(0), false).pass);
}

TEST(Tolerance, SigmaRule) {
  EXPECT_TRUE(check_value(1.3, 1.0, Tolerance::sigma(3), false, 0.1).pass);
  EXPECT_FALSE(check_value(1.31, 1.0, Tolerance::sigma(3), false, 0.1).pass);
}

TEST(Tolerance, DescribeShowsTheNumbers) {
  EXPECT_EQ(Tolerance::close(1e-6, 1e-4).describe(), "|a-g| <= 1e-06 + 0.0001*|g|");
  EXPECT_EQ(Tolerance::ulp(4).describe(), "ulp <= 4");
  EXPECT_EQ(Tolerance::exact().describe(), "exact");
}

}  // namespace
}  // namespace lockstep
