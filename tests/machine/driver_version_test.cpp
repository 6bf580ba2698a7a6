#include "machine/driver_version.h"
#include "test_paths.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace lockstep {
namespace {

const std::string kFakeNvml = test_paths::fake_nvidia_dir() + "/libnvidia-ml.so.1";

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
  EXPECT_EQ(why, "nvmlInit_v2 failed with NVML_ERROR_DRIVER_NOT_LOADED (9)");
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
  EXPECT_FALSE(version_at_least("99999999999999999999", "535"));  // no overflow, no throw
}

TEST_F(DriverVersion, DottedVersions) {
  for (const char* ok : {"535", "535.104", "580.95.05", "999999999"}) EXPECT_TRUE(is_dotted_version(ok)) << ok;
  for (const char* bad : {"", "abc", "R580", "580.95.05-beta", ".535", "535.", "535..1", "9999999999"})
    EXPECT_FALSE(is_dotted_version(bad)) << bad;
}

TEST_F(DriverVersion, KernelModuleVersionFile) {
  std::string path = std::filesystem::temp_directory_path() / ("lockstep-nvrm-" + std::to_string(::getpid()));
  std::ofstream(path) << "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.95.05  Tue Sep 23 09:55:42 UTC 2025\n"
                         "GCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n";
  EXPECT_EQ(kernel_module_driver_version(path), "580.95.05");
  std::ofstream(path) << "something else\n";
  EXPECT_EQ(kernel_module_driver_version(path), "");
  std::filesystem::remove(path);
  EXPECT_EQ(kernel_module_driver_version(path), "");
}

TEST(NvmlReturnName, KnownAndUnknownCodes) {
  EXPECT_EQ(nvml_return_name(9), "NVML_ERROR_DRIVER_NOT_LOADED (9)");
  EXPECT_EQ(nvml_return_name(77), "nvmlReturn_t 77");
}

}  // namespace
}  // namespace lockstep
