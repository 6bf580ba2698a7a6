// Splitting a smoke suite across CI jobs: `lockstep check --shard I/N` in
// GitLab's `parallel: matrix` (or `parallel: N` with $CI_NODE_INDEX/
// $CI_NODE_TOTAL) checks every smoke in exactly one of the N jobs.
//
//   Shard s = parse_shard("2/3");                 // 1-based index, count
//   std::vector<size_t> mine = shard_members({"digits-cnn", "wine-mlp"}, s);
//
// The rule: smokes are ordered by XXH3-64 of their name (ties by name) and
// dealt round-robin, so the shards differ in size by at most one and a
// smoke's shard depends only on the names in the suite, never on file
// order, machine or time.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace lockstep {

/// Shard `index` of `count`, 1 <= index <= count. count 0 means "no sharding".
struct Shard {
  int index = 0;
  int count = 0;
};

/// Parses "I/N" (decimal, 1 <= I <= N <= 1000). Throws BadUsage (exit 2)
/// naming `option` and what was expected.
Shard parse_shard(const std::string& text, const std::string& option = "--shard");

/// Positions in `names` that belong to `shard` (all of them when
/// shard.count is 0), in the order of `names`.
std::vector<size_t> shard_members(const std::vector<std::string>& names, Shard shard);

}  // namespace lockstep
