// The number spellings the line readers accept: decimal steps, and floats
// as Python's repr and json.dumps write them, exactly as float64 reads them.
#include "ingest/number_text.h"

#include <gtest/gtest.h>

#include <cmath>

namespace lockstep {
namespace {

TEST(NumberText, DecimalStepsAreDigitsOnly) {
  int64_t s = -1;
  EXPECT_TRUE(decimal_step("0", s));
  EXPECT_EQ(s, 0);
  EXPECT_TRUE(decimal_step("123456789012345678", s));
  EXPECT_EQ(s, 123456789012345678);
  for (const char* bad : {"", "-1", "+1", "1.0", " 1", "1e3", "1234567890123456789"})
    EXPECT_FALSE(decimal_step(bad, s)) << bad;
}

TEST(NumberText, FloatsAsPythonWritesThem) {
  double v = 0;
  EXPECT_TRUE(float_repr("2.3012", v));
  EXPECT_EQ(v, 2.3012);
  EXPECT_TRUE(float_repr("1e-05", v));
  EXPECT_EQ(v, 1e-05);
  EXPECT_TRUE(float_repr("-0.0", v));
  EXPECT_TRUE(std::signbit(v));
  EXPECT_TRUE(float_repr("1.7976931348623157e+308", v));
  EXPECT_EQ(v, 1.7976931348623157e308);
  EXPECT_TRUE(float_repr("+3", v));
  EXPECT_EQ(v, 3.0);
  EXPECT_TRUE(float_repr("nan", v) && std::isnan(v));
  EXPECT_TRUE(float_repr("Infinity", v));
  EXPECT_EQ(v, INFINITY);
  EXPECT_TRUE(float_repr("-inf", v));
  EXPECT_EQ(v, -INFINITY);
  // Non-finite values as Python's float() reads them, in any case.
  EXPECT_TRUE(float_repr("INF", v));
  EXPECT_EQ(v, INFINITY);
  EXPECT_TRUE(float_repr("-Infinity", v));
  EXPECT_EQ(v, -INFINITY);
  EXPECT_TRUE(float_repr("+inf", v));
  EXPECT_EQ(v, INFINITY);
  EXPECT_TRUE(float_repr("-nan", v) && std::isnan(v));
  EXPECT_TRUE(float_repr("NAN", v) && std::isnan(v));
  for (const char* bad : {"", "abc", "1e400", "0x10", "1,5", "++1", "+-1", "1.0.0", "nanx", " 1", "infinit", "-", "--inf"})
    EXPECT_FALSE(float_repr(bad, v)) << bad;
}

}  // namespace
}  // namespace lockstep
