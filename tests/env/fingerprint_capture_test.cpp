#include "env/fingerprint_capture.h"

#include <gtest/gtest.h>

#include "determinism/contract.h"
#include "machine/machine_facts.h"
#include "record/platform_key.h"
#include "test_paths.h"

namespace lockstep {
namespace {

// Every field the fingerprint lists (docs/platforms.md); fields that cannot be read on this machine
// (CUDA on a CPU runner, OpenCV in a build without images) must say why.
TEST(Fingerprint, RecordsEveryListedField) {
  Fingerprint fp = capture_fingerprint({"cpu", read_determinism_state(), "."});
  const char* fields[] = {
      "device", "torch.version", "torch.library", "torch.library_xxh3", "torch.build.blas_info",
      "torch.build.lapack_info", "torch.build.use_cuda", "torch.build.use_mkldnn", "torch.build.use_openmp",
      "torch.mkldnn", "torch.openmp", "torch.has_mkl", "cpu.capability", "cpu.arch", "cpu.model", "cpu.isa",
      "threads.intra_op", "threads.inter_op", "threads.intra_op_default", "libs.numerics", "libs.opencv",
      "libs.libgit2", "libs.xxhash", "os.name", "os.kernel", "os.glibc", "build.compiler", "build.cxx11_abi",
      "determinism.deterministic_algorithms", "determinism.cudnn_deterministic", "determinism.cudnn_benchmark",
      "determinism.allow_tf32_cublas", "determinism.allow_tf32_cudnn", "determinism.float32_matmul_precision",
      "determinism.intra_op_threads", "determinism.inter_op_threads", "env.CUBLAS_WORKSPACE_CONFIG",
      "env.NVIDIA_TF32_OVERRIDE", "env.OMP_NUM_THREADS", "env.MKL_NUM_THREADS", "env.ATEN_CPU_CAPABILITY",
      "env.CUDA_VISIBLE_DEVICES", "env.NCCL_ALGO", "env.NCCL_PROTO", "env.TORCH_ALLOW_TF32_CUBLAS_OVERRIDE",
      "env.LANG", "env.LC_ALL", "env.TZ", "nvidia.driver_version", "cuda.driver_api_version", "cuda.runtime",
      "cuda.cudnn", "cuda.gpu_name", "cuda.compute_capability", "cuda.sm_count", "cuda.memory_bytes",
      "cuda.gpu_uuid", "cuda.nccl", "git.commit", "git.branch", "git.dirty"};
  for (const char* f : fields) {
    auto it = fp.find(f);
    ASSERT_NE(it, fp.end()) << f;
    const std::string& v = it->second.value;
    EXPECT_FALSE(v.empty()) << f;
    if (v.rfind("(absent", 0) == 0) {
      EXPECT_GT(v.size(), 10u) << f << " must say why";
    }
  }
  EXPECT_EQ(fp.at("torch.version").value.rfind("1.", 0) == 0 || fp.at("torch.version").value.rfind("2.", 0) == 0, true);
  EXPECT_TRUE(fp.at("torch.version").relevant);
  EXPECT_TRUE(fp.at("cpu.capability").relevant);
  EXPECT_FALSE(fp.at("git.commit").relevant);
  EXPECT_FALSE(fp.at("os.kernel").relevant);
  EXPECT_EQ(fp.at("torch.library_xxh3").value.size(), 32u);
}

TEST(Fingerprint, CudaFieldsAreRelevantOnlyForCudaRuns) {
  Fingerprint cpu = capture_fingerprint({"cpu", {}, ".", false});
  Fingerprint cuda = capture_fingerprint({"cuda", {}, ".", false});
  EXPECT_FALSE(cpu.at("cuda.compute_capability").relevant);
  EXPECT_TRUE(cuda.at("cuda.compute_capability").relevant);
}

TEST(PlatformKey, FromFingerprint) {
  Fingerprint fp = {{"device", {"cpu", true}}, {"cpu.arch", {"x86_64", true}}, {"cpu.capability", {"AVX2", true}}};
  EXPECT_EQ(platform_key(fp), "cpu-x86_64-avx2");
  fp["cpu.capability"].value = "NO AVX";
  EXPECT_EQ(platform_key(fp), "cpu-x86_64-default");
  fp["cpu.capability"].value = "AVX512";
  EXPECT_EQ(platform_key(fp), "cpu-x86_64-avx512");
  Fingerprint gpu = {{"device", {"cuda", true}}, {"cuda.compute_capability", {"9.0", true}}};
  EXPECT_EQ(platform_key(gpu), "cuda-sm90");
  gpu["cuda.compute_capability"].value = "12.1";
  EXPECT_EQ(platform_key(gpu), "cuda-sm121");
  gpu["cuda.compute_capability"].value = "(absent: libcuda.so.1 not found (no NVIDIA driver))";
  EXPECT_EQ(platform_key(gpu), "cuda-smunknown");
  EXPECT_EQ(platform_family("cpu-x86_64-avx512"), "cpu-x86_64");
  EXPECT_EQ(platform_family("cuda-sm90"), "cuda-sm90");
}

// One writer of the machine's fields: the torch-free machine_fingerprint()
// (a team trainer's runs) and the LibTorch capture (built-in runs) give the
// same machine fields, values and relevance, and the capture adds only
// LibTorch's — on a GPU machine (the fake H200) and when the CUDA driver
// fails (cuInit returns the toolkit's stub-library error 34), for a CPU
// and a CUDA run, under a contract and without one.
TEST(Fingerprint, OneWriterOfTheMachinesFields) {
  const std::string fake = test_paths::fake_nvidia_dir();
  for (const char* init : {"0", "34"}) {
    setenv("FAKE_CUDA_INIT_RESULT", init, 1);
    for (const char* device : {"cpu", "cuda"}) {
      for (bool contract : {false, true}) {
        SCOPED_TRACE(std::string("cuInit ") + init + ", " + device + (contract ? ", contract" : ""));
        std::map<std::string, std::string> applied;
        if (contract) applied = {{"mode", "strict"}, {"intra_op_threads", "1"}};
        CaptureOptions c{device, applied, ".", false, fake + "/libcuda.so.1", fake + "/libnvidia-ml.so.1"};
        MachineOptions m;
        m.device = device;
        m.threads_pinned = contract;
        m.cuda_library = c.cuda_library;
        m.nvml_library = c.nvml_library;
        Fingerprint captured = capture_fingerprint(c), machine = machine_fingerprint(m);
        for (const auto& [name, field] : machine) {
          ASSERT_TRUE(captured.count(name)) << name;
          EXPECT_EQ(captured.at(name).value, field.value) << name;
          EXPECT_EQ(captured.at(name).relevant, field.relevant) << name;
          EXPECT_FALSE(is_capture_only_field(name)) << name;
        }
        for (const auto& [name, field] : captured) {
          if (!machine.count(name)) {
            EXPECT_TRUE(is_capture_only_field(name)) << name << " is written twice";
          }
        }
        for (const char* f : {"cuda.driver_api_version", "cuda.gpu_name", "cuda.compute_capability", "cuda.sm_count",
                              "cuda.memory_bytes", "cuda.gpu_uuid", "nvidia.driver_version"})
          ASSERT_TRUE(machine.count(f)) << f;
        EXPECT_EQ(machine.at("cuda.driver_api_version").value, "13.0");  // cuDriverGetVersion answers either way
        EXPECT_EQ(machine.at("cuda.sm_count").relevant, std::string(device) == "cuda");
        if (std::string(init) == "0") {
          EXPECT_EQ(machine.at("cuda.compute_capability").value, "9.0");
        } else {
          EXPECT_NE(machine.at("cuda.sm_count").value.find("CUDA_ERROR_STUB_LIBRARY (34)"), std::string::npos)
              << machine.at("cuda.sm_count").value;
        }
      }
    }
  }
  unsetenv("FAKE_CUDA_INIT_RESULT");
}

// OMP_NUM_THREADS only sets a thread count: informational when a contract
// pins the threads (and reads them back), relevant when nothing is applied.
TEST(Fingerprint, ThreadCountVariablesAreInformationalUnderAContract) {
  setenv("OMP_NUM_THREADS", "7", 1);
  Fingerprint pinned = capture_fingerprint({"cpu", {{"mode", "strict"}, {"intra_op_threads", "1"}}, ".", false});
  Fingerprint free = capture_fingerprint({"cpu", read_determinism_state(), ".", false});
  unsetenv("OMP_NUM_THREADS");
  EXPECT_EQ(pinned.at("env.OMP_NUM_THREADS").value, "7");
  EXPECT_FALSE(pinned.at("env.OMP_NUM_THREADS").relevant);
  EXPECT_FALSE(pinned.at("env.MKL_NUM_THREADS").relevant);
  EXPECT_TRUE(pinned.at("env.CUBLAS_WORKSPACE_CONFIG").relevant);
  EXPECT_TRUE(free.at("env.OMP_NUM_THREADS").relevant);
}


}  // namespace
}  // namespace lockstep
