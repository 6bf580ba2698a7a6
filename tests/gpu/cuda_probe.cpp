// The GPU half of the CUDA fingerprint's verification as one program that needs only
// LibTorch: no libgit2, OpenCV or test framework, so ci/gpu-check.sh builds
// it with g++ against the LibTorch of a GPU machine's Python torch, and
// every CMake build compiles it (it cannot rot on CPU-only CI).
//
//   cuda_probe     exit 0: every check passed on device 0
//                  exit 1: a check failed (each prints PASS or FAIL)
//                  exit 3: CUDA is not usable here; the reason is printed
//
// It applies the strict contract and reads it back, prints the CUDA facts
// the fingerprint records (driver API, NVML, the loaded cuDNN and NCCL,
// show_config()) and the platform key, runs a seeded conv + matmul step
// forward and backward twice on the GPU and requires identical bits, and
// reads the caching allocator's peak (compat::cuda_peak_allocated_bytes).
#include <torch/torch.h>

#include <algorithm>
#include <cstring>
#include <iostream>
#include <vector>

#include "core/error.h"
#include "determinism/contract.h"
#include "machine/cuda_driver.h"
#include "machine/cuda_libraries.h"
#include "env/cuda_preflight.h"
#include "machine/driver_version.h"
#include "machine/torch_config_text.h"
#include "torch_compat.h"

namespace lockstep {
namespace {

int failures = 0;

void check(bool ok, const std::string& what) {
  std::cout << (ok ? "PASS " : "FAIL ") << what << "\n";
  if (!ok) ++failures;
}

std::string or_why(const std::string& value, const std::string& why) {
  return value.empty() ? "(absent: " + why + ")" : value;
}

// The bytes of a seeded forward/backward step: output, then both gradients.
std::vector<char> seeded_step(const torch::Device& device) {
  torch::manual_seed(42);  // seeds the CUDA generators too
  auto opts = torch::TensorOptions().device(device);
  auto x = torch::randn({32, 3, 32, 32}, opts);
  auto w = torch::randn({16, 3, 3, 3}, opts.requires_grad(true));
  auto m = torch::randn({16 * 30 * 30, 64}, opts.requires_grad(true));
  auto y = torch::conv2d(x, w).flatten(1).matmul(m);  // cuDNN conv, cuBLAS matmul
  auto loss = torch::dropout(y, 0.1, true).square().mean();  // draws from the CUDA generator
  loss.backward();
  std::vector<char> bytes;
  for (const auto& t : {y, w.grad(), m.grad()}) {
    auto c = t.detach().to(torch::kCPU).contiguous();
    const char* p = static_cast<const char*>(c.data_ptr());
    bytes.insert(bytes.end(), p, p + c.numel() * c.element_size());
  }
  return bytes;
}

int probe() {
  // Before any CUDA work, as in `lockstep run`.
  auto contract = apply_determinism_contract({"strict", 1, 1});
  std::cout << "LibTorch " << TORCH_VERSION << "\n";
  for (const auto& [k, v] : contract) std::cout << "  contract." << k << " = " << v << "\n";

  if (std::string why = cuda_unusable_reason(); !why.empty()) {
    std::cout << "CUDA is not usable: " << why << "\n";
    return 3;
  }
  CudaDriverInfo d = query_cuda_driver();
  TorchConfigText config = parse_torch_config(at::show_config());
  std::string nvml_why, cudnn_why, nccl_why;
  std::string nvml = nvidia_driver_version(&nvml_why);
  std::string cudnn = loaded_cudnn_version(&cudnn_why);
  std::string nccl = loaded_nccl_version(&nccl_why);
  std::string key = d.compute_capability;
  key.erase(std::remove(key.begin(), key.end(), '.'), key.end());
  std::cout << "platform key             cuda-sm" << key << "\n"
            << "nvidia.driver_version    " << or_why(nvml, nvml_why) << "\n"
            << "cuda.driver_api_version  " << cuda_version_string(d.driver_api_version) << "\n"
            << "cuda.gpu_name            " << d.name << "\n"
            << "cuda.compute_capability  " << d.compute_capability << "\n"
            << "cuda.sm_count            " << d.sm_count << "\n"
            << "cuda.memory_bytes        " << d.memory_bytes << "\n"
            << "cuda.gpu_uuid            " << d.uuid << "\n"
            << "cuda.runtime             " << config.cuda_runtime << "\n"
            << "cuda.cudnn               " << or_why(cudnn, cudnn_why) << "  (show_config: " << config.cudnn << ")\n"
            << "cuda.nccl                " << or_why(nccl, nccl_why) << "\n"
            << "cuda.torch_devices       " << compat::cuda_device_count() << "\n"
            << "cudnn library            " << loaded_library_path("libcudnn.so") << "\n"
            << "cuda driver library      " << d.library << "\n";

  check(!nvml.empty(), "NVML reports the driver version");
  check(!cudnn.empty(), "cuDNN's version read from the loaded library");
  check(!nccl.empty(), "NCCL's version read from the loaded library");
  check(!config.cuda_runtime.empty(), "show_config() names the CUDA runtime");
  check(compat::cuda_device_count() >= 1, "compat::cuda_device_count() sees device 0");
  check(contract.at("deterministic_algorithms") == "true", "deterministic algorithms on");
  check(contract.at("allow_tf32_cublas") == "false" && contract.at("allow_tf32_cudnn") == "false",
        "TF32 off for cuBLAS and cuDNN");
  check(contract.at("cudnn_deterministic") == "true" && contract.at("cudnn_benchmark") == "false",
        "cuDNN deterministic, benchmark off");
#if LOCKSTEP_TORCH_AT_LEAST(2, 2)
  check(contract.at("fill_uninitialized_memory") == "true", "fill of uninitialised memory on (2.2+)");
#endif

  torch::Device gpu(torch::kCUDA, 0);
  auto first = seeded_step(gpu);
  auto second = seeded_step(gpu);
  check(first.size() == second.size() && std::memcmp(first.data(), second.data(), first.size()) == 0,
        "a seeded conv + matmul + dropout step gives identical bits twice on the GPU (" +
            std::to_string(first.size()) + " bytes)");
  int64_t peak = compat::cuda_peak_allocated_bytes();
  std::cout << "cuda peak allocated bytes " << peak << "\n";
  check(peak > 0, "compat::cuda_peak_allocated_bytes() reads the caching allocator");
  std::cout << (failures == 0 ? "all checks passed\n" : std::to_string(failures) + " check(s) failed\n");
  return failures == 0 ? 0 : 1;
}

}  // namespace
}  // namespace lockstep

int main() {
  try {
    return lockstep::probe();
  } catch (const lockstep::Error& e) {
    std::cout << "error: " << e.what() << "\n";
    return lockstep::to_int(e.code());
  } catch (const std::exception& e) {
    std::cout << "error: " << e.what() << "\n";
    return 1;
  }
}
