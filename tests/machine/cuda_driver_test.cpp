#include "machine/cuda_driver.h"
#include "test_paths.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace lockstep {
namespace {

// The fake driver (fake_nvidia/README.md): one H200, changed by FAKE_* variables.
const std::string kFakeCuda = test_paths::fake_nvidia_dir() + "/libcuda.so.1";

class CudaDriver : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* v : {"FAKE_CUDA_INIT_RESULT", "FAKE_CUDA_DEVICE_COUNT", "FAKE_CUDA_CC"}) unsetenv(v);
  }
};

TEST_F(CudaDriver, ReadsDeviceZero) {
  CudaDriverInfo d = query_cuda_driver(kFakeCuda);
  EXPECT_EQ(d.error, "");
  EXPECT_EQ(d.library, std::filesystem::canonical(kFakeCuda).string());
  EXPECT_EQ(d.driver_api_version, 13000);
  EXPECT_EQ(d.device_count, 1);
  EXPECT_EQ(d.name, "NVIDIA H200");
  EXPECT_EQ(d.compute_capability, "9.0");
  EXPECT_EQ(d.sm_count, 132);
  EXPECT_EQ(d.memory_bytes, 150754820096u);
  EXPECT_EQ(d.uuid, "GPU-8f2a610c-4d3e-1b77-9012-a55ec308f164");
}

TEST_F(CudaDriver, ComputeCapabilityComesFromAttributes75And76) {
  setenv("FAKE_CUDA_CC", "12.1", 1);
  EXPECT_EQ(query_cuda_driver(kFakeCuda).compute_capability, "12.1");
}

TEST_F(CudaDriver, StubLibraryIsNamedWithItsFix) {
  setenv("FAKE_CUDA_INIT_RESULT", "34", 1);
  CudaDriverInfo d = query_cuda_driver(kFakeCuda);
  EXPECT_EQ(d.error, "cuInit failed: CUDA_ERROR_STUB_LIBRARY (34); " +
                         std::filesystem::canonical(kFakeCuda).string() + " is the CUDA toolkit's stub, not the driver's library (a container started "
                         "without the NVIDIA container runtime, or a stubs/ folder on LD_LIBRARY_PATH)");
  EXPECT_EQ(d.driver_api_version, 13000);  // answered before cuInit
  EXPECT_EQ(d.name, "");
}

TEST_F(CudaDriver, FailedInitNamesTheCUresult) {
  setenv("FAKE_CUDA_INIT_RESULT", "100", 1);
  EXPECT_EQ(query_cuda_driver(kFakeCuda).error, "cuInit failed: CUDA_ERROR_NO_DEVICE (100)");
}

TEST_F(CudaDriver, NoVisibleDevice) {
  setenv("FAKE_CUDA_DEVICE_COUNT", "0", 1);
  CudaDriverInfo d = query_cuda_driver(kFakeCuda);
  EXPECT_EQ(d.error, "the driver sees no CUDA device");
  EXPECT_EQ(d.device_count, 0);
}

TEST_F(CudaDriver, MissingLibraryOrSymbols) {
  EXPECT_EQ(query_cuda_driver("/nonexistent/libcuda.so.1").error,
            "/nonexistent/libcuda.so.1 not found (no NVIDIA driver)");
  // A file that is no shared object: dlerror's reason, not "not found".
  std::string not_elf = (std::filesystem::temp_directory_path() / "lockstep-not-elf-libcuda.so.1").string();
  std::ofstream(not_elf) << "not a shared object\n";
  EXPECT_EQ(query_cuda_driver(not_elf).error.rfind(not_elf + " could not be loaded: ", 0), 0u);
  std::filesystem::remove(not_elf);
  // NVML's library (loaded by the NVML tests anyway) has no cu* symbols.
  std::string nvml = test_paths::fake_nvidia_dir() + "/libnvidia-ml.so.1";
  EXPECT_EQ(query_cuda_driver(nvml).error, nvml + " lacks the driver API symbols (cuInit, cuDeviceGet, ...)");
}

// The toolkit's own stub library (CUDA_HOME, default /usr/local/cuda), when
// this machine has one: what a container without the NVIDIA runtime sees.
TEST(RealCudaToolkit, StubLibraryIsRecognised) {
  const char* home = std::getenv("CUDA_HOME");
  std::string stub = std::string(home && *home ? home : "/usr/local/cuda") + "/lib64/stubs/libcuda.so";
  if (!std::filesystem::exists(stub)) GTEST_SKIP() << "no " << stub;
  EXPECT_EQ(query_cuda_driver(stub).error.rfind("cuInit failed: CUDA_ERROR_STUB_LIBRARY (34); ", 0), 0u);
}

TEST(CuResultName, KnownAndUnknownCodes) {
  EXPECT_EQ(cu_result_name(100), "CUDA_ERROR_NO_DEVICE (100)");
  EXPECT_EQ(cu_result_name(34), "CUDA_ERROR_STUB_LIBRARY (34)");
  EXPECT_EQ(cu_result_name(803), "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH (803)");
  EXPECT_EQ(cu_result_name(42), "CUresult 42");
}

TEST(CudaVersionString, AsCudaPrintsIt) {
  EXPECT_EQ(cuda_version_string(13000), "13.0");
  EXPECT_EQ(cuda_version_string(12040), "12.4");
  EXPECT_EQ(cuda_version_string(11080), "11.8");
  EXPECT_EQ(cuda_version_string(12090), "12.9");
}

}  // namespace
}  // namespace lockstep
