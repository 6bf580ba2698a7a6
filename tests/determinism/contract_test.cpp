#include "determinism/contract.h"

#include <gtest/gtest.h>

#include <cstdlib>

#include "core/error.h"

namespace lockstep {
namespace {

// One process applies the contract once (inter-op threads can be set only
// once), so this test binary checks the strict read-back in one test.
TEST(Contract, StrictModeReadsBackEveryKnob) {
  unsetenv("CUBLAS_WORKSPACE_CONFIG");
  auto c = apply_determinism_contract({"strict", 1, 1});
  EXPECT_EQ(c.at("mode"), "strict");
  EXPECT_EQ(c.at("deterministic_algorithms"), "true");
  EXPECT_EQ(c.at("deterministic_algorithms_warn_only"), "false");
  EXPECT_EQ(c.at("cudnn_deterministic"), "true");
  EXPECT_EQ(c.at("cudnn_benchmark"), "false");
  EXPECT_EQ(c.at("allow_tf32_cublas"), "false");
  EXPECT_EQ(c.at("allow_tf32_cudnn"), "false");
  EXPECT_EQ(c.at("float32_matmul_precision"), "highest");
  EXPECT_EQ(c.at("cublas_workspace_config"), ":4096:8");
  EXPECT_EQ(c.at("intra_op_threads"), "1");
  EXPECT_EQ(c.at("inter_op_threads"), "1");
  EXPECT_FALSE(c.at("fill_uninitialized_memory").empty());
  EXPECT_STREQ(getenv("CUBLAS_WORKSPACE_CONFIG"), ":4096:8");
}

TEST(Contract, InvalidCublasWorkspaceIsEnvironmentError) {
  setenv("CUBLAS_WORKSPACE_CONFIG", ":1:1", 1);
  try {
    apply_determinism_contract({"strict", 1, 1});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kEnvironment);
    EXPECT_NE(std::string(e.what()).find("CUBLAS_WORKSPACE_CONFIG=:1:1"), std::string::npos);
  }
  setenv("CUBLAS_WORKSPACE_CONFIG", ":16:8", 1);
  EXPECT_EQ(apply_determinism_contract({"strict", 1, 1}).at("cublas_workspace_config"), ":16:8");
  unsetenv("CUBLAS_WORKSPACE_CONFIG");
}

}  // namespace
}  // namespace lockstep
