#include "env/driver_version.h"

#include <gtest/gtest.h>

#include <cstdlib>

namespace lockstep {
namespace {

const std::string kFakeNvml = std::string(LOCKSTEP_FAKE_NVIDIA_DIR) + "/libnvidia-ml.so.1";

class DriverVersion : public ::testing::Test {
 protected:
  void SetUp() override {
    unsetenv("FAKE_NVML_DRIVER");
    unsetenv("FAKE_NVML_INIT_RESULT");
  }
};

TEST_F(DriverVersion, ReadsNvml) {
  std::string why;
  EXPECT_EQ(nvidia_driver_version(&why, kFakeNvml), "580.95.05");
  setenv("FAKE_NVML_DRIVER", "535.104.05", 1);
  EXPECT_EQ(nvidia_driver_version(&why, kFakeNvml), "535.104.05");
}

TEST_F(DriverVersion, FailuresSayWhy) {
  std::string why;
  setenv("FAKE_NVML_INIT_RESULT", "9", 1);  // NVML_ERROR_DRIVER_NOT_LOADED
  EXPECT_EQ(nvidia_driver_version(&why, kFakeNvml), "");
  EXPECT_EQ(why, "nvmlInit_v2 failed with nvmlReturn_t 9");
  EXPECT_EQ(nvidia_driver_version(&why, "/nonexistent/libnvidia-ml.so.1"), "");
  EXPECT_EQ(why, "/nonexistent/libnvidia-ml.so.1 not found (no NVIDIA driver)");
}

TEST_F(DriverVersion, DottedComparison) {
  EXPECT_TRUE(version_at_least("550.54.15", "535"));
  EXPECT_TRUE(version_at_least("535.104.05", "535.104"));
  EXPECT_FALSE(version_at_least("535.86.10", "535.104"));
  EXPECT_TRUE(version_at_least("535", "535.0.0"));
  EXPECT_FALSE(version_at_least("", "1"));
  EXPECT_FALSE(version_at_least("abc", "1"));
}

}  // namespace
}  // namespace lockstep
