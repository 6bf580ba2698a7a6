// The CPU capability a torch-free record is filed under: the one LibTorch
// 1.13 picks on the same CPU (AVX2 on an AVX512 machine unless
// $ATEN_CPU_CAPABILITY asks for avx512), so an import and a run of one
// smoke on one machine share a platform key.
#include "machine/machine_facts.h"

#include <gtest/gtest.h>

#include <cstdlib>

namespace lockstep {
namespace {

constexpr const char* kAvx512Cpu = "avx avx2 avx512bw avx512dq avx512f avx512vl fma sse4_2";

struct CapabilityVariable {  // sets $ATEN_CPU_CAPABILITY for a scope
  explicit CapabilityVariable(const char* value) {
    if (value) ::setenv("ATEN_CPU_CAPABILITY", value, 1);
    else ::unsetenv("ATEN_CPU_CAPABILITY");
  }
  ~CapabilityVariable() { ::unsetenv("ATEN_CPU_CAPABILITY"); }
};

TEST(CpuCapabilityFromIsa, Avx2UnlessAvx512IsAskedFor) {
  CapabilityVariable unset(nullptr);
  EXPECT_EQ(cpu_capability_from_isa(kAvx512Cpu), "AVX2");
  EXPECT_EQ(cpu_capability_from_isa("avx avx2 fma"), "AVX2");
  EXPECT_EQ(cpu_capability_from_isa("avx avx2"), "DEFAULT");  // AVX2 kernels need FMA too
  EXPECT_EQ(cpu_capability_from_isa("sse4_2"), "DEFAULT");
  EXPECT_EQ(cpu_capability_from_isa("(absent: no /proc/cpuinfo)"), "DEFAULT");
}

TEST(CpuCapabilityFromIsa, TheVariableChoosesWhatTheCpuHas) {
  {
    CapabilityVariable avx512("avx512");
    EXPECT_EQ(cpu_capability_from_isa(kAvx512Cpu), "AVX512");
    EXPECT_EQ(cpu_capability_from_isa("avx2 avx512f fma"), "AVX2");  // no BW, DQ, VL: not ATen's AVX512
  }
  CapabilityVariable plain("default");
  EXPECT_EQ(cpu_capability_from_isa(kAvx512Cpu), "DEFAULT");
}

}  // namespace
}  // namespace lockstep
