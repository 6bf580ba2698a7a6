#include "core/float_bits.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

namespace lockstep {
namespace {

TEST(FormatDouble, ShortestRoundTrip) {
  EXPECT_EQ(format_double(0.1), "0.1");
  EXPECT_EQ(format_double(1.0), "1");
  EXPECT_EQ(format_double(-2.5e-300), "-2.5e-300");
  EXPECT_EQ(format_double(std::nan("")), "nan");
  EXPECT_EQ(format_double(-INFINITY), "-inf");
}

TEST(FormatDouble, EveryBitPatternReadsBack) {
  std::mt19937_64 rng(7);
  for (int i = 0; i < 100000; ++i) {
    uint64_t bits = rng();
    double d;
    std::memcpy(&d, &bits, sizeof d);
    if (!std::isfinite(d)) continue;
    double back = std::strtod(format_double(d).c_str(), nullptr);
    ASSERT_TRUE(same_bits(d, back)) << format_double(d);
  }
}

TEST(FloatBits, HexPatternAndParse) {
  EXPECT_EQ(float_bits_hex(1.0f), "0x3f800000");
  EXPECT_EQ(float_bits_hex(-0.0f), "0x80000000");
  EXPECT_EQ(*parse_float_bits("0x3f800000"), 1.0f);
  EXPECT_FALSE(parse_float_bits("3f800000"));
  EXPECT_FALSE(parse_float_bits("0x3f80000g"));
  EXPECT_FALSE(parse_float_bits("0x123456789"));
}

TEST(UlpDistance, Float64AcrossSignsAndZero) {
  EXPECT_EQ(ulp_distance(1.0, 1.0), 0u);
  EXPECT_EQ(ulp_distance(1.0, std::nextafter(1.0, 2.0)), 1u);
  EXPECT_EQ(ulp_distance(0.0, -0.0), 0u);
  double tiny = std::numeric_limits<double>::denorm_min();
  EXPECT_EQ(ulp_distance(tiny, -tiny), 2u);
  EXPECT_EQ(ulp_distance(-tiny, 0.0), 1u);
  EXPECT_EQ(ulp_distance(std::nan(""), 1.0), UINT64_MAX);
  // Largest finite values on both sides: 2 * 0x7fefffffffffffff apart.
  double big = std::numeric_limits<double>::max();
  EXPECT_EQ(ulp_distance(-big, big), 2u * 0x7fefffffffffffffULL);
}

TEST(UlpDistance, Float32AcrossSignsAndZero) {
  EXPECT_EQ(ulp_distance_f32(1.0f, std::nextafter(1.0f, 2.0f)), 1u);
  EXPECT_EQ(ulp_distance_f32(0.0f, -0.0f), 0u);
  float tiny = std::numeric_limits<float>::denorm_min();
  EXPECT_EQ(ulp_distance_f32(-tiny, tiny), 2u);
  EXPECT_EQ(ulp_distance_f32(-1.0f, 1.0f), 2u * 0x3f800000u);
}

}  // namespace
}  // namespace lockstep
