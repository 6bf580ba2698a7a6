#include "gate/shard.h"

#include <algorithm>
#include <charconv>
#include <numeric>

#include "core/error.h"
#include "core/hash.h"

namespace lockstep {

namespace {
bool parse_int(std::string_view s, int& out) {
  auto r = std::from_chars(s.data(), s.data() + s.size(), out);
  return !s.empty() && r.ec == std::errc() && r.ptr == s.data() + s.size();
}
}  // namespace

Shard parse_shard(const std::string& text, const std::string& option) {
  size_t slash = text.find('/');
  Shard s;
  if (slash == std::string::npos || !parse_int(std::string_view(text).substr(0, slash), s.index) ||
      !parse_int(std::string_view(text).substr(slash + 1), s.count) || s.count < 1 || s.count > 1000 ||
      s.index < 1 || s.index > s.count)
    throw BadUsage(option + " " + text + ": expected I/N with 1 <= I <= N <= 1000 (e.g. 2/4; in GitLab " +
                   "$CI_NODE_INDEX/$CI_NODE_TOTAL)");
  return s;
}

std::vector<size_t> shard_members(const std::vector<std::string>& names, Shard shard) {
  std::vector<size_t> order(names.size());
  std::iota(order.begin(), order.end(), 0);
  if (shard.count == 0) return order;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    uint64_t ha = xxh3_64(names[a]), hb = xxh3_64(names[b]);
    return ha != hb ? ha < hb : names[a] < names[b];
  });
  std::vector<size_t> mine;
  for (size_t k = 0; k < order.size(); ++k)
    if (static_cast<int>(k % static_cast<size_t>(shard.count)) == shard.index - 1) mine.push_back(order[k]);
  std::sort(mine.begin(), mine.end());
  return mine;
}

}  // namespace lockstep
