#include "data/tensor_stats.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace lockstep {
namespace {

uint64_t bits(double x) {
  uint64_t b;
  std::memcpy(&b, &x, sizeof b);
  return b;
}

// The definition in data/tensor_stats.h, written out element by element with
// no blocks, no kernels and no fast path: every kernel must give its bits.
template <typename T>
TensorStats definition(const std::vector<T>& v) {
  const double inf = std::numeric_limits<double>::infinity();
  double sum[8] = {0}, sq[8] = {0}, lo[8], hi[8];
  for (int j = 0; j < 8; ++j) lo[j] = inf, hi[j] = -inf;
  TensorStats s;
  uint64_t n = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    double x = static_cast<double>(v[i]);
    if (std::isnan(x)) { ++s.nan_count; continue; }
    if (std::isinf(x)) { ++s.inf_count; continue; }
    sum[i % 8] += x;
    lo[i % 8] = x < lo[i % 8] ? x : lo[i % 8];
    hi[i % 8] = x > hi[i % 8] ? x : hi[i % 8];
    ++n;
  }
  s.sum = ((sum[0] + sum[1]) + (sum[2] + sum[3])) + ((sum[4] + sum[5]) + (sum[6] + sum[7]));
  if (n == 0) return s;
  s.mean = s.sum / static_cast<double>(n);
  s.min = lo[0], s.max = hi[0];
  for (int j = 1; j < 8; ++j) {
    s.min = lo[j] < s.min ? lo[j] : s.min;
    s.max = hi[j] > s.max ? hi[j] : s.max;
  }
  for (size_t i = 0; i < v.size(); ++i) {
    double x = static_cast<double>(v[i]);
    if (!std::isfinite(x)) continue;
    double d = x - s.mean;
    double d2 = d * d;  // two roundings, as the definition says
    sq[i % 8] += d2;
  }
  double ss = ((sq[0] + sq[1]) + (sq[2] + sq[3])) + ((sq[4] + sq[5]) + (sq[6] + sq[7]));
  s.std = std::sqrt(ss / static_cast<double>(n));
  return s;
}

void expect_same_bits(const TensorStats& got, const TensorStats& want, const std::string& where) {
  EXPECT_EQ(bits(got.sum), bits(want.sum)) << where << " sum " << got.sum << " vs " << want.sum;
  EXPECT_EQ(bits(got.mean), bits(want.mean)) << where << " mean";
  EXPECT_EQ(bits(got.std), bits(want.std)) << where << " std " << got.std << " vs " << want.std;
  EXPECT_EQ(bits(got.min), bits(want.min)) << where << " min";
  EXPECT_EQ(bits(got.max), bits(want.max)) << where << " max";
  EXPECT_EQ(got.nan_count, want.nan_count) << where;
  EXPECT_EQ(got.inf_count, want.inf_count) << where;
}

// Values over twelve orders of magnitude, both signs: sums that round.
std::vector<float> mixed_floats(size_t n, uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) {
    double mantissa = static_cast<double>(gen() >> 11) * 0x1p-53 - 0.5;
    int exponent = static_cast<int>(gen() % 13) - 6;
    v[i] = static_cast<float>(mantissa * std::pow(10.0, exponent));
  }
  return v;
}

std::vector<StatsKernel> kernels_here() {
  std::vector<StatsKernel> k = {StatsKernel::kAuto, StatsKernel::kPortable};
  if (avx2_stats_kernel_available()) k.push_back(StatsKernel::kAvx2);
  return k;
}

TensorStats stats_of(const std::vector<float>& v, StatsKernel k = StatsKernel::kAuto) {
  TensorStats s;
  accumulate_stats(v.data(), v.size(), s, nullptr, k);
  return s;
}

std::string name(StatsKernel k, size_t n) {
  const char* names[] = {"auto", "portable", "avx2"};
  return std::string(names[static_cast<int>(k)]) + " n=" + std::to_string(n);
}

TEST(TensorStats, ExactStatisticsOfASmallBuffer) {
  std::vector<float> v = {1, 2, 3, 4, std::nanf(""), INFINITY, -INFINITY, 6};
  for (StatsKernel k : kernels_here()) {
    TensorStats s = stats_of(v, k);
    EXPECT_EQ(s.nan_count, 1u);
    EXPECT_EQ(s.inf_count, 2u);
    EXPECT_EQ(s.sum, 16.0);
    EXPECT_EQ(s.mean, 3.2);
    EXPECT_EQ(s.min, 1.0);
    EXPECT_EQ(s.max, 6.0);
    // population std of {1,2,3,4,6}: sqrt(14.8 / 5)
    EXPECT_DOUBLE_EQ(s.std, std::sqrt(14.8 / 5));
  }
}

TEST(TensorStats, EveryKernelGivesTheDefinitionsBits) {
  // Sizes around the block (8) and hash-chunk (256 floats) boundaries.
  for (size_t n : {0u, 1u, 7u, 8u, 9u, 255u, 256u, 257u, 1003u, 4101u}) {
    std::vector<float> v = mixed_floats(n, n);
    TensorStats want = definition(v);
    for (StatsKernel k : kernels_here()) expect_same_bits(stats_of(v, k), want, name(k, n));
  }
}

TEST(TensorStats, NonFiniteValuesAnywhereGiveTheDefinitionsBits) {
  const float nan = std::nanf(""), inf = INFINITY;
  struct Case {
    const char* what;
    std::vector<std::pair<size_t, float>> put;
  };
  const Case cases[] = {
      {"NaN first", {{0, nan}}},
      {"NaN in a block", {{517, nan}}},
      {"-Inf in the tail", {{1001, -inf}}},
      {"+Inf and -Inf in one lane", {{16, inf}, {24, -inf}}},
      {"Inf in the last block", {{999, inf}}},
  };
  for (const Case& c : cases) {
    std::vector<float> v = mixed_floats(1003, 7);
    for (auto [at, x] : c.put) v[at] = x;
    TensorStats want = definition(v);
    for (StatsKernel k : kernels_here()) expect_same_bits(stats_of(v, k), want, name(k, v.size()) + " " + c.what);
  }
}

TEST(TensorStats, NothingFiniteGivesZerosAndCounts) {
  std::vector<float> v(20, std::nanf(""));
  v[3] = -INFINITY;
  TensorStats s = stats_of(v);
  EXPECT_EQ(s.nan_count, 19u);
  EXPECT_EQ(s.inf_count, 1u);
  EXPECT_EQ(s.sum, 0.0);
  EXPECT_EQ(s.mean, 0.0);
  EXPECT_EQ(s.std, 0.0);
  EXPECT_EQ(s.min, 0.0);
  EXPECT_EQ(s.max, 0.0);
}

// min/max keep the first of equal values in a lane, so the sign of a zero
// depends on the order: -0.0 then +0.0 gives -0.0, the other way +0.0.
TEST(TensorStats, SignedZerosFollowTheDefinition) {
  for (float first : {0.0f, -0.0f}) {
    std::vector<float> v(16, 1.0f);
    v[0] = first;
    v[8] = -first;
    for (StatsKernel k : kernels_here()) {
      TensorStats got = stats_of(v, k);
      EXPECT_EQ(std::signbit(got.min), std::signbit(first)) << name(k, 16);
      expect_same_bits(got, definition(v), name(k, 16));
    }
  }
}

// float64 sums that overflow take the element-wise path and agree with it.
TEST(TensorStats, Float64OverflowAndInt64FollowTheDefinition) {
  std::vector<double> d(40, 1.5e308);
  d[5] = -3.0;
  TensorStats got;
  accumulate_stats(d.data(), d.size(), got);
  expect_same_bits(got, definition(d), "float64 overflow");
  EXPECT_TRUE(std::isinf(got.sum));

  std::vector<int64_t> ints(300);
  for (size_t i = 0; i < ints.size(); ++i) ints[i] = static_cast<int64_t>(i * i) - 7000;
  ints[17] = (int64_t{1} << 53) + 1;  // rounds to 2^53 in float64
  TensorStats s;
  accumulate_stats(ints.data(), ints.size(), s);
  expect_same_bits(s, definition(ints), "int64");
  EXPECT_EQ(s.max, 9007199254740992.0);
}

TEST(TensorStats, FeedsTheHashTheSameBytes) {
  for (size_t n : {0u, 5u, 256u, 1003u, 70001u}) {
    std::vector<float> v = mixed_floats(n, 11);
    for (StatsKernel k : kernels_here()) {
      Xxh3Stream hash;
      TensorStats s;
      accumulate_stats(v.data(), n, s, &hash, k);
      EXPECT_EQ(hash.hex(), xxh3_128_hex(v.data(), n * sizeof(float))) << name(k, n);
    }
  }
  std::vector<int64_t> ints(1001, -3);
  Xxh3Stream hash;
  TensorStats s;
  accumulate_stats(ints.data(), ints.size(), s, &hash);
  EXPECT_EQ(hash.hex(), xxh3_128_hex(ints.data(), ints.size() * sizeof(int64_t)));
}

TEST(TensorStats, AskingForAnAbsentKernelThrows) {
  if (avx2_stats_kernel_available()) GTEST_SKIP() << "this CPU has AVX2";
  float x = 1;
  TensorStats s;
  EXPECT_THROW(accumulate_stats(&x, 1, s, nullptr, StatsKernel::kAvx2), std::invalid_argument);
}

}  // namespace
}  // namespace lockstep
