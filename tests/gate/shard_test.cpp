// Shards of a suite (gate/shard.h): every smoke in exactly one shard,
// sizes within one, independent of file order; bad I/N is exit 2.
#include "gate/shard.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "core/error.h"

namespace lockstep {
namespace {

TEST(Shard, ParsesIOverN) {
  Shard s = parse_shard("2/4");
  EXPECT_EQ(s.index, 2);
  EXPECT_EQ(s.count, 4);
  EXPECT_EQ(parse_shard("1/1").count, 1);
  for (const char* bad : {"", "2", "0/3", "4/3", "1/0", "a/2", "1/2/3", "-1/2", "1/1001", " 1/2"}) {
    try {
      parse_shard(bad);
      FAIL() << bad;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ExitCode::kBadInput) << bad;
      EXPECT_EQ(std::string(e.what()), std::string("--shard ") + bad +
                                           ": expected I/N with 1 <= I <= N <= 1000 (e.g. 2/4; in GitLab "
                                           "$CI_NODE_INDEX/$CI_NODE_TOTAL)");
    }
  }
}

TEST(Shard, EverySmokeInExactlyOneShardOfBalancedSize) {
  std::vector<std::string> names;
  for (int i = 0; i < 23; ++i) names.push_back("smoke-" + std::to_string(i));
  for (int n = 1; n <= 7; ++n) {
    std::map<size_t, int> seen;
    size_t smallest = names.size(), largest = 0;
    for (int i = 1; i <= n; ++i) {
      std::vector<size_t> mine = shard_members(names, {i, n});
      EXPECT_TRUE(std::is_sorted(mine.begin(), mine.end()));
      smallest = std::min(smallest, mine.size());
      largest = std::max(largest, mine.size());
      for (size_t k : mine) ++seen[k];
    }
    EXPECT_EQ(seen.size(), names.size()) << n;
    for (const auto& [k, count] : seen) EXPECT_EQ(count, 1) << names[k];
    EXPECT_LE(largest - smallest, 1u) << n;
  }
  EXPECT_EQ(shard_members(names, {}).size(), names.size());
}

TEST(Shard, AShardDependsOnTheNamesNotTheirOrder) {
  std::vector<std::string> a = {"digits-cnn", "photos-cnn", "tokens-transformer", "wine-mlp", "pytorch-trainer"};
  std::vector<std::string> b(a.rbegin(), a.rend());
  for (int i = 1; i <= 3; ++i) {
    std::vector<std::string> in_a, in_b;
    for (size_t k : shard_members(a, {i, 3})) in_a.push_back(a[k]);
    for (size_t k : shard_members(b, {i, 3})) in_b.push_back(b[k]);
    std::sort(in_a.begin(), in_a.end());
    std::sort(in_b.begin(), in_b.end());
    EXPECT_EQ(in_a, in_b) << i;
  }
  EXPECT_TRUE(shard_members({}, {1, 2}).empty());
}

}  // namespace
}  // namespace lockstep
