// ArithmeticRuns: every sequence reads back exactly, arithmetic ones stay
// a few runs, and others turn into a plain array.
#include "ingest/arithmetic_runs.h"

#include <cstdint>
#include <random>
#include <vector>

#include <gtest/gtest.h>

namespace lockstep {
namespace {

void expect_same(const ArithmeticRuns& runs, const std::vector<uint64_t>& want) {
  ASSERT_EQ(runs.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) ASSERT_EQ(runs[i], want[i]) << "index " << i;
  EXPECT_EQ(runs.to_vector(), want);
  if (!want.empty()) {
    EXPECT_EQ(runs.back(), want.back());
  }
}

TEST(ArithmeticRuns, DenseStepsAreOneRun) {
  ArithmeticRuns runs;
  std::vector<uint64_t> want;
  for (uint64_t s = 0; s < 100000; ++s) {
    runs.push_back(s);
    want.push_back(s);
  }
  EXPECT_EQ(runs.runs(), 1u);
  EXPECT_EQ(runs.stride(), 1u);
  expect_same(runs, want);
}

TEST(ArithmeticRuns, AGridWithOneHoleIsTwoRuns) {
  ArithmeticRuns runs;
  std::vector<uint64_t> want = {0, 10, 20, 30, 50, 60, 70};
  for (uint64_t v : want) runs.push_back(v);
  EXPECT_EQ(runs.runs(), 2u);
  expect_same(runs, want);
  EXPECT_EQ(runs[4], 50u);
  EXPECT_EQ(runs[3], 30u);
}

TEST(ArithmeticRuns, NegativeStepsAndWrappingOriginsRoundTrip) {
  ArithmeticRuns runs;
  std::vector<uint64_t> want = {static_cast<uint64_t>(int64_t{-5}), static_cast<uint64_t>(int64_t{-3}), 1,
                                UINT64_MAX, 0, (uint64_t{65535} << 48) | 7, 3};
  for (uint64_t v : want) runs.push_back(v);
  expect_same(runs, want);
  EXPECT_EQ(runs.to_vector<int64_t>()[0], -5);
}

TEST(ArithmeticRuns, IrregularValuesBecomeAPlainArray) {
  ArithmeticRuns runs;
  std::vector<uint64_t> want;
  std::mt19937_64 rng(7);
  uint64_t at = 0;
  for (int i = 0; i < 5000; ++i) {
    at += 20 + rng() % 7;  // byte offsets of values of varying length
    runs.push_back(at);
    want.push_back(at);
  }
  EXPECT_EQ(runs.runs(), 0u);
  expect_same(runs, want);
}

TEST(ArithmeticRuns, ClearEmptiesIt) {
  ArithmeticRuns runs;
  for (uint64_t v : {1, 5, 2, 9}) runs.push_back(v);
  runs.clear();
  EXPECT_TRUE(runs.empty());
  runs.push_back(4);
  expect_same(runs, {4});
}

}  // namespace
}  // namespace lockstep
