// with_torch_start_tunables: the malloc.hugetlb tunable is added to a
// lockstep-torch process's environment, after the user's tunables, and a
// user's own setting of it is kept.
#include "core/torch_start.h"

#include <gtest/gtest.h>

namespace lockstep {
namespace {

TEST(TorchStart, AddsTheTunableWhenNoneIsSet) {
  std::vector<std::string> env = with_torch_start_tunables({"PATH=/usr/bin", "HOME=/root"});
  EXPECT_EQ(env, (std::vector<std::string>{"PATH=/usr/bin", "HOME=/root", "GLIBC_TUNABLES=glibc.malloc.hugetlb=1"}));
}

TEST(TorchStart, AppendsToTheUsersTunables) {
  std::vector<std::string> env = with_torch_start_tunables({"GLIBC_TUNABLES=glibc.malloc.arena_max=2", "A=1"});
  EXPECT_EQ(env, (std::vector<std::string>{"GLIBC_TUNABLES=glibc.malloc.arena_max=2:glibc.malloc.hugetlb=1", "A=1"}));
}

TEST(TorchStart, AnEmptyTunablesVariableGetsTheTunableAlone) {
  EXPECT_EQ(with_torch_start_tunables({"GLIBC_TUNABLES="}),
            (std::vector<std::string>{"GLIBC_TUNABLES=glibc.malloc.hugetlb=1"}));
}

TEST(TorchStart, KeepsTheUsersOwnHugetlbSetting) {
  std::vector<std::string> off = {"GLIBC_TUNABLES=glibc.malloc.hugetlb=0"};
  EXPECT_EQ(with_torch_start_tunables(off), off);
  std::vector<std::string> two = {"GLIBC_TUNABLES=glibc.malloc.hugetlb=2:glibc.malloc.arena_max=1"};
  EXPECT_EQ(with_torch_start_tunables(two), two);
}

TEST(TorchStart, OnlyTheExactVariableNameCounts) {
  std::vector<std::string> env = with_torch_start_tunables({"MY_GLIBC_TUNABLES=x", "GLIBC_TUNABLESX=y"});
  EXPECT_EQ(env.back(), "GLIBC_TUNABLES=glibc.malloc.hugetlb=1");
  EXPECT_EQ(env.size(), 3u);
}

}  // namespace
}  // namespace lockstep
