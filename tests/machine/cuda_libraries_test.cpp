#include "machine/cuda_libraries.h"
#include "test_paths.h"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <vector>

namespace lockstep {
namespace {

const std::string kFakeDir = test_paths::fake_nvidia_dir();

TEST(CudnnVersion, BothEncodings) {
  EXPECT_EQ(cudnn_version_string(8907), "8.9.7");    // cuDNN 8: 1000*major + 100*minor + patch
  EXPECT_EQ(cudnn_version_string(8600), "8.6.0");
  EXPECT_EQ(cudnn_version_string(90800), "9.8.0");   // cuDNN 9: 10000*major + 100*minor + patch
  EXPECT_EQ(cudnn_version_string(91002), "9.10.2");  // show_config() prints this one as "91.0.2"
}

TEST(NcclVersion, BothEncodings) {
  EXPECT_EQ(nccl_version_string(2708), "2.7.8");     // before 2.9: 1000*major + 100*minor + patch
  EXPECT_EQ(nccl_version_string(21803), "2.18.3");   // from 2.9: 10000*major + 100*minor + patch
  EXPECT_EQ(nccl_version_string(22703), "2.27.3");
}

// Nothing is loaded on lockstep's behalf; once loaded, the loaded copy answers.
TEST(LoadedLibraries, CudnnOnlyOnceLoaded) {
  std::string why;
  EXPECT_EQ(loaded_cudnn_version(&why), "");
  EXPECT_EQ(why, "libcudnn.so not loaded in this process");
  EXPECT_EQ(loaded_library_path("libcudnn.so"), "");  // asking did not load it
  void* h = dlopen((kFakeDir + "/libcudnn.so.9").c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(h, nullptr) << dlerror();
  EXPECT_EQ(loaded_library_path("libcudnn.so"), std::filesystem::canonical(kFakeDir + "/libcudnn.so.9").string());
  EXPECT_EQ(loaded_cudnn_version(&why), "9.8.0");
  dlclose(h);
}

TEST(LoadedLibraries, NcclOnlyOnceLoaded) {
  std::string why;
  EXPECT_EQ(loaded_nccl_version(&why), "");
  EXPECT_EQ(why, "libnccl.so.2 not loaded in this process");
  void* h = dlopen((kFakeDir + "/libnccl.so.2").c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(h, nullptr) << dlerror();
  EXPECT_EQ(loaded_nccl_version(&why), "2.27.3");
  dlclose(h);
}

TEST(LoadedLibraries, MatchesTheFileNamePrefixOnly) {
  EXPECT_NE(loaded_library_path("libc.so"), "");
  EXPECT_EQ(loaded_library_path("ibc.so"), "");  // a prefix of the file name, not a substring
}

// Against a real CUDA toolkit's cuDNN and NCCL when this machine has one
// (CUDA_HOME, default /usr/local/cuda): the version read from the library
// must be the one its header declares. Skipped where there is none (CI).
// "major.minor.patch" from a header's `#define NAME value` lines.
std::string header_version(const std::string& header, const std::vector<std::string>& names) {
  std::map<std::string, std::string> defines;
  std::ifstream in(header);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::string define, key, value;
    if (words >> define >> key >> value && define == "#define") defines[key] = value;
  }
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ".") + defines[n];
  return out;
}

// dlopen()s `lib` as LibTorch would, runs `read`, and unloads it again.
std::string version_with_loaded(const std::string& lib, std::string (*read)(std::string*)) {
  void* h = dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) return std::string("dlopen failed: ") + dlerror();
  std::string v = read(nullptr);
  dlclose(h);
  return v;
}

std::string cuda_home() {
  const char* home = std::getenv("CUDA_HOME");
  return home && *home ? home : "/usr/local/cuda";
}

TEST(RealCudaToolkit, CudnnVersionMatchesItsHeader) {
  std::string lib = cuda_home() + "/lib64/libcudnn.so.9", header = cuda_home() + "/include/cudnn_version.h";
  if (!std::filesystem::exists(lib) || !std::filesystem::exists(header)) GTEST_SKIP() << "no cuDNN 9 in " << cuda_home();
  EXPECT_EQ(version_with_loaded(lib, loaded_cudnn_version),
            header_version(header, {"CUDNN_MAJOR", "CUDNN_MINOR", "CUDNN_PATCHLEVEL"}));
}

TEST(RealCudaToolkit, NcclVersionMatchesItsHeader) {
  std::string lib = cuda_home() + "/lib64/libnccl.so.2", header = cuda_home() + "/include/nccl.h";
  if (!std::filesystem::exists(lib) || !std::filesystem::exists(header)) GTEST_SKIP() << "no NCCL in " << cuda_home();
  EXPECT_EQ(version_with_loaded(lib, loaded_nccl_version), header_version(header, {"NCCL_MAJOR", "NCCL_MINOR", "NCCL_PATCH"}));
}

}  // namespace
}  // namespace lockstep
