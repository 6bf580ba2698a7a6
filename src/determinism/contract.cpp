#include "determinism/contract.h"

#include <ATen/Parallel.h>

#include <cstdlib>

#include "core/error.h"
#include "torch_compat.h"

namespace lockstep {

namespace {

const char* b(bool v) { return v ? "true" : "false"; }

// Sets CUBLAS_WORKSPACE_CONFIG before the first cuBLAS handle exists
// (PyTorch reads it once, on the first GEMM on a CUDA device).
std::string pin_cublas_workspace(bool strict) {
  const char* current = std::getenv("CUBLAS_WORKSPACE_CONFIG");
  if (!current) {
    if (strict) setenv("CUBLAS_WORKSPACE_CONFIG", ":4096:8", 0);
    current = std::getenv("CUBLAS_WORKSPACE_CONFIG");
    return current ? current : "(unset)";
  }
  std::string value = current;
  if (strict && value != ":4096:8" && value != ":16:8")
    throw EnvironmentError(
        "CUBLAS_WORKSPACE_CONFIG=" + value +
        " is not a deterministic cuBLAS workspace setting; strict mode needs :4096:8 or :16:8 "
        "(CUDA cuBLAS docs, 'Results reproducibility'). Unset it or set one of those.");
  return value;
}

}  // namespace

std::map<std::string, std::string> apply_determinism_contract(const DeterminismSettings& s) {
  bool strict = s.mode == "strict";
  std::map<std::string, std::string> out;
  out["mode"] = s.mode;
  out["cublas_workspace_config"] = pin_cublas_workspace(strict);

  // Threads first: the inter-op pool can be sized only before any parallel work.
  if (s.intra_op_threads < 1 || s.inter_op_threads < 1)
    throw EnvironmentError("thread counts must be >= 1");
  at::set_num_threads(s.intra_op_threads);
  try {
    at::set_num_interop_threads(s.inter_op_threads);
  } catch (const c10::Error& e) {
    if (static_cast<int64_t>(at::get_num_interop_threads()) != s.inter_op_threads)  // int in 1.13, size_t in 2.x
      throw EnvironmentError(std::string("cannot set inter-op threads to ") +
                             std::to_string(s.inter_op_threads) + ": " + e.what_without_backtrace());
  }

  auto& ctx = at::globalContext();
  if (strict) {
    compat::set_deterministic_algorithms(true, /*warn_only=*/false);
    ctx.setDeterministicCuDNN(true);
    ctx.setBenchmarkCuDNN(false);
    compat::set_tf32(false);
    compat::fill_uninitialized_memory(true);
  }

  for (auto& [k, v] : read_determinism_state())
    if (k != "mode" && k != "cublas_workspace_config") out[k] = v;
  if (at::get_num_threads() != s.intra_op_threads)
    throw EnvironmentError("intra-op threads: asked for " + std::to_string(s.intra_op_threads) +
                           ", LibTorch runs " + std::to_string(at::get_num_threads()));
  return out;
}

std::map<std::string, std::string> read_determinism_state() {
  auto& ctx = at::globalContext();
  std::map<std::string, std::string> out;
  out["mode"] = "(not applied)";
  const char* ws = std::getenv("CUBLAS_WORKSPACE_CONFIG");
  out["cublas_workspace_config"] = ws ? ws : "(unset)";
  out["deterministic_algorithms"] = b(ctx.deterministicAlgorithms());
  out["deterministic_algorithms_warn_only"] = b(ctx.deterministicAlgorithmsWarnOnly());
  out["cudnn_deterministic"] = b(ctx.deterministicCuDNN());
  out["cudnn_benchmark"] = b(ctx.benchmarkCuDNN());
  out["allow_tf32_cublas"] = b(ctx.allowTF32CuBLAS());
  out["allow_tf32_cudnn"] = b(ctx.allowTF32CuDNN());
  out["float32_matmul_precision"] = compat::float32_matmul_precision();
  out["fill_uninitialized_memory"] = compat::fill_uninitialized_memory_state();
  out["intra_op_threads"] = std::to_string(at::get_num_threads());
  out["inter_op_threads"] = std::to_string(at::get_num_interop_threads());
  return out;
}

}  // namespace lockstep
