#include "env/cuda_libraries.h"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <filesystem>

namespace lockstep {
namespace {

const std::string kFakeDir = LOCKSTEP_FAKE_NVIDIA_DIR;

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

}  // namespace
}  // namespace lockstep
