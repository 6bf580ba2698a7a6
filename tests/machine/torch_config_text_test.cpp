#include "machine/torch_config_text.h"

#include <gtest/gtest.h>

namespace lockstep {
namespace {

// at::show_config() of Debian 12's libtorch 1.13.1 (CPU), verbatim.
const char* kDebianCpu =
    "PyTorch built with:\n"
    "  - GCC 12.2\n"
    "  - C++ Version: 201402\n"
    "  - Intel(R) MKL-DNN v2.6.3 (Git Hash N/A)\n"
    "  - OpenMP 201511 (a.k.a. OpenMP 4.5)\n"
    "  - LAPACK is enabled (usually provided by MKL)\n"
    "  - CPU capability usage: AVX2\n"
    "  - Build settings: BLAS_INFO=generic, BUILD_TYPE=RelWithDebInfo, CXX_COMPILER=/usr/bin/c++, "
    "CXX_FLAGS=-Wdate-time -D_FORTIFY_SOURCE=2 -g -O2 "
    "-ffile-prefix-map=/build/pytorch-BBcGlf/pytorch-1.13.1+dfsg=. -fstack-protector-strong "
    "-Wformat -Werror=format-security -gsplit-dwarf -fvisibility-inlines-hidden "
    "-DUSE_PTHREADPOOL -fopenmp -DUSE_PYTORCH_QNNPACK -DUSE_XNNPACK "
    "-DSYMBOLICATE_MOBILE_DEBUG_HANDLE -DEDGE_PROFILER_USE_KINETO -O2 -fPIC -Wno-narrowing "
    "-Wall -Wextra -Werror=return-type -Werror=non-virtual-dtor -Wno-missing-field-initializers "
    "-Wno-type-limits -Wno-array-bounds -Wno-unknown-pragmas -Wunused-local-typedefs "
    "-Wno-unused-parameter -Wno-unused-function -Wno-unused-result -Wno-strict-overflow "
    "-Wno-strict-aliasing -Wno-error=deprecated-declarations -Wno-stringop-overflow -Wno-psabi "
    "-Wno-error=pedantic -Wno-error=redundant-decls -Wno-error=old-style-cast "
    "-fdiagnostics-color=always -faligned-new -Wno-unused-but-set-variable "
    "-Wno-maybe-uninitialized -fno-math-errno -fno-trapping-math -Werror=format "
    "-Werror=cast-function-type -Wno-stringop-overflow, LAPACK_INFO=generic, PERF_WITH_AVX=1, "
    "PERF_WITH_AVX2=1, PERF_WITH_AVX512=1, TORCH_VERSION=1.13.0, USE_CUDA=OFF, USE_CUDNN=OFF, "
    "USE_EXCEPTION_PTR=1, USE_GFLAGS=ON, USE_GLOG=ON, USE_MKLDNN=ON, USE_MPI=OFF, USE_NCCL=OFF, "
    "USE_NNPACK=OFF, USE_OPENMP=ON, USE_ROCM=OFF, \n";

// A CUDA build in the format of CUDAHooks::showConfig (PyTorch 2.x,
// aten/src/ATen/cuda/detail/CUDAHooks.cpp): runtime versions, then the
// compiled ones where they differ. cuDNN 9.10.2 (91002) prints as "91.0.2".
const char* kCudaBuild =
    "PyTorch built with:\n"
    "  - GCC 13.3\n"
    "  - C++ Version: 201703\n"
    "  - Intel(R) oneAPI Math Kernel Library Version 2024.2-Product Build 20240605 for Intel(R) 64 "
    "architecture applications\n"
    "  - OpenMP 201511 (a.k.a. OpenMP 4.5)\n"
    "  - CPU capability usage: AVX512\n"
    "  - CUDA Runtime 12.9\n"
    "  - Built with CUDA Runtime 12.8\n"
    "  - NVCC architecture flags: -gencode;arch=compute_90,code=sm_90;-gencode;arch=compute_100,code=sm_100\n"
    "  - CuDNN 91.0.2  (built against CUDA 12.9)\n"
    "    - Built with CuDNN 90.8\n"
    "  - Magma 2.6.1\n"
    "  - Build settings: BLAS_INFO=mkl, BUILD_TYPE=Release, CUDA_VERSION=12.8, CUDNN_VERSION=9.8.0, "
    "CXX_COMPILER=/opt/rh/gcc-toolset-13/root/usr/bin/c++, CXX_FLAGS= -fvisibility-inlines-hidden "
    "-DUSE_PTHREADPOOL -O2 -fPIC, LAPACK_INFO=mkl, TORCH_VERSION=2.8.0, USE_CUDA=ON, USE_CUDNN=ON, "
    "USE_NCCL=1, USE_OPENMP=ON, USE_ROCM=OFF, \n";

TEST(TorchConfigText, DebianCpuBuild) {
  TorchConfigText c = parse_torch_config(kDebianCpu);
  EXPECT_EQ(c.cpu_capability, "AVX2");
  EXPECT_EQ(c.cuda_runtime, "");
  EXPECT_EQ(c.cudnn, "");
  EXPECT_EQ(c.build_settings.at("BLAS_INFO"), "generic");
  EXPECT_EQ(c.build_settings.at("LAPACK_INFO"), "generic");
  EXPECT_EQ(c.build_settings.at("USE_CUDA"), "OFF");
  EXPECT_EQ(c.build_settings.at("USE_MKLDNN"), "ON");
  EXPECT_EQ(c.build_settings.at("TORCH_VERSION"), "1.13.0");  // Debian's 1.13.1 calls itself 1.13.0
  EXPECT_EQ(c.build_settings.at("USE_ROCM"), "OFF");          // the trailing ", " is not part of it
  EXPECT_EQ(c.build_settings.at("CXX_FLAGS").substr(0, 35), "-Wdate-time -D_FORTIFY_SOURCE=2 -g ");
  EXPECT_EQ(c.build_settings.size(), 20u);
}

TEST(TorchConfigText, CudaBuild) {
  TorchConfigText c = parse_torch_config(kCudaBuild);
  EXPECT_EQ(c.cpu_capability, "AVX512");
  EXPECT_EQ(c.cuda_runtime, "12.9");  // not the "Built with" line
  EXPECT_EQ(c.cudnn, "91.0.2  (built against CUDA 12.9)");
  EXPECT_EQ(c.build_settings.at("USE_CUDA"), "ON");
  EXPECT_EQ(c.build_settings.at("USE_NCCL"), "1");
  EXPECT_EQ(c.build_settings.at("CXX_FLAGS"), " -fvisibility-inlines-hidden -DUSE_PTHREADPOOL -O2 -fPIC");
}

TEST(TorchConfigText, EmptyOrForeignText) {
  TorchConfigText c = parse_torch_config("");
  EXPECT_TRUE(c.build_settings.empty());
  EXPECT_EQ(c.cpu_capability, "");
  c = parse_torch_config("  - Build settings: \n  - CPU capability usage:");
  EXPECT_TRUE(c.build_settings.empty());
  EXPECT_EQ(c.cpu_capability, "");
}

}  // namespace
}  // namespace lockstep
