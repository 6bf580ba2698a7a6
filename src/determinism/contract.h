// The determinism contract (docs/architecture.md, "Determinism contract"), applied
// once at start-up before any tensor work, then read back for the record.
//
//   DeterminismSettings s{"strict", /*intra_op=*/1, /*inter_op=*/1};
//   std::map<std::string, std::string> applied = apply_determinism_contract(s);
//
// strict: deterministic algorithms on (error, not warn); cuDNN deterministic
// on and benchmark off; TF32 off for cuBLAS and cuDNN; float32 matmul
// precision "highest"; CUBLAS_WORKSPACE_CONFIG=:4096:8 unless the user set
// :4096:8 or :16:8 (the values the CUDA docs name as deterministic; any
// other value is exit 3); thread counts pinned.
// default: the stack's defaults, read back and recorded; threads pinned too
// (the default intra-op count differs between machines).
#pragma once

#include <map>
#include <string>

namespace lockstep {

/// What the smoke config asks for.
struct DeterminismSettings {
  std::string mode = "strict";  ///< "strict" or "default"
  int intra_op_threads = 1;     ///< at::set_num_threads
  int inter_op_threads = 1;     ///< at::set_num_interop_threads (settable once per process)
};

/// Applies `settings` and returns the contract as read back from LibTorch:
/// keys "mode", "deterministic_algorithms", "deterministic_algorithms_warn_only",
/// "cudnn_deterministic", "cudnn_benchmark", "allow_tf32_cublas",
/// "allow_tf32_cudnn", "float32_matmul_precision", "fill_uninitialized_memory",
/// "cublas_workspace_config", "intra_op_threads", "inter_op_threads".
/// A knob this build cannot set says so in its value ("unsupported ...").
/// Throws Error(kEnvironment) for an invalid CUBLAS_WORKSPACE_CONFIG in
/// strict mode, or when a thread count cannot be applied.
std::map<std::string, std::string> apply_determinism_contract(const DeterminismSettings& settings);

/// Reads the same keys as apply_determinism_contract returns, without
/// changing anything ("mode" is "(not applied)").
std::map<std::string, std::string> read_determinism_state();

}  // namespace lockstep
