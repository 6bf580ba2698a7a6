// The NCCL part of the multi-rank contract: Ring and Simple in strict mode.
#include "distributed/nccl_env.h"

#include <gtest/gtest.h>

#include "core/error.h"

namespace lockstep {
namespace {

using Env = std::map<std::string, std::string>;

TEST(NcclEnv, StrictModeSetsRingAndSimpleWhenUnset) {
  EXPECT_EQ(nccl_contract("strict", {}), (Env{{"NCCL_ALGO", "Ring"}, {"NCCL_PROTO", "Simple"}}));
  // NCCL reads them case-insensitively; an empty value is unset.
  EXPECT_EQ(nccl_contract("strict", {{"NCCL_ALGO", "ring"}, {"NCCL_PROTO", ""}}),
            (Env{{"NCCL_ALGO", "Ring"}, {"NCCL_PROTO", "Simple"}}));
}

TEST(NcclEnv, StrictModeRefusesAnotherAlgorithmOrProtocol) {
  try {
    nccl_contract("strict", {{"NCCL_ALGO", "Tree"}});
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kEnvironment);
    EXPECT_STREQ(e.what(), "NCCL_ALGO=Tree: strict mode runs NCCL with NCCL_ALGO=Ring (Tree, CollNet and NVLS reduce "
                           "in an order that depends on the topology); unset it, or use determinism.mode \"default\"");
  }
  EXPECT_THROW(nccl_contract("strict", {{"NCCL_PROTO", "LL128"}}), Error);
}

TEST(NcclEnv, DefaultModeRecordsWhatIsSet) {
  EXPECT_EQ(nccl_contract("default", {{"NCCL_ALGO", "Tree"}}),
            (Env{{"NCCL_ALGO", "Tree"}, {"NCCL_PROTO", "(unset)"}}));
}

}  // namespace
}  // namespace lockstep
