#include "machine/cuda_usability.h"

#include <gtest/gtest.h>

namespace lockstep {
namespace {

// A CUDA LibTorch on a machine with one H200: usable. Each test breaks one fact.
CudaUsabilityFacts usable() {
  CudaUsabilityFacts f;
  f.torch_version = "2.11.0";
  f.torch_built_with_cuda = true;
  f.torch_cuda_loaded = true;
  f.torch_device_count = 1;
  f.torch_cuda_runtime = "13.0";
  f.driver.driver_api_version = 13000;
  f.driver.device_count = 1;
  f.driver.name = "NVIDIA H200";
  f.driver.compute_capability = "9.0";
  return f;
}

TEST(CudaUsability, UsableIsEmpty) { EXPECT_EQ(explain_cuda_unusable(usable()), ""); }

TEST(CudaUsability, CpuOnlyLibTorchComesFirstAndSaysWhatTheDriverSees) {
  CudaUsabilityFacts f = usable();
  f.torch_version = "1.13.0";
  f.torch_built_with_cuda = false;
  f.torch_device_count = 0;
  EXPECT_EQ(explain_cuda_unusable(f),
            "this lockstep is linked against a CPU-only LibTorch 1.13.0 (USE_CUDA is off in at::show_config()); "
            "build it against a CUDA LibTorch (docs/platforms.md); the driver itself sees 1 device, device 0 "
            "is NVIDIA H200 (compute capability 9.0)");
  f.driver.error = "libcuda.so.1 not found (no NVIDIA driver)";
  EXPECT_EQ(explain_cuda_unusable(f),
            "this lockstep is linked against a CPU-only LibTorch 1.13.0 (USE_CUDA is off in at::show_config()); "
            "build it against a CUDA LibTorch (docs/platforms.md); no NVIDIA driver is usable either: "
            "libcuda.so.1 not found (no NVIDIA driver)");
}

TEST(CudaUsability, DroppedLibtorchCuda) {
  CudaUsabilityFacts f = usable();
  f.torch_cuda_loaded = false;
  f.torch_device_count = 0;
  EXPECT_EQ(explain_cuda_unusable(f),
            "LibTorch 2.11.0 was built with CUDA but libtorch_cuda.so is not loaded in this process (the "
            "linker dropped it: link with -Wl,--no-as-needed, as TorchConfig.cmake is meant to)");
}

TEST(CudaUsability, DriverErrorWithVisibleDevices) {
  CudaUsabilityFacts f = usable();
  f.torch_device_count = 0;
  f.driver.error = "the driver sees no CUDA device";
  f.visible_devices_set = true;
  f.visible_devices = "";
  EXPECT_EQ(explain_cuda_unusable(f),
            "the NVIDIA driver is not usable: the driver sees no CUDA device (CUDA_VISIBLE_DEVICES=\"\")");
}

TEST(CudaUsability, DriverOlderThanTheRuntime) {
  CudaUsabilityFacts f = usable();
  f.torch_device_count = 0;
  f.driver.driver_api_version = 12040;
  EXPECT_EQ(explain_cuda_unusable(f),
            "the NVIDIA driver supports CUDA 12.4 but LibTorch's CUDA runtime is 13.0: install a newer driver");
}

TEST(CudaUsability, RuntimeSeesNoDeviceAlthoughTheDriverDoes) {
  CudaUsabilityFacts f = usable();
  f.torch_device_count = 0;
  EXPECT_EQ(explain_cuda_unusable(f), "LibTorch's CUDA runtime sees no device although the driver sees 1");
}

TEST(BuildSetting, OnSpellings) {
  for (const char* on : {"ON", "on", "1", "True", "YES"}) EXPECT_TRUE(build_setting_is_on(on)) << on;
  for (const char* off : {"OFF", "0", "False", "", "ONE"}) EXPECT_FALSE(build_setting_is_on(off)) << off;
}

}  // namespace
}  // namespace lockstep
