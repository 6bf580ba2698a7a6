// The one place where LibTorch 1.13 and 2.x differ for lockstep.
//
// Every version-dependent call goes through a function here, behind the
// LOCKSTEP_TORCH_AT_LEAST(major, minor) guard, so the rest of the code is
// version-free. Facts from docs/libtorch.md (sections 1, 2, 5).
//
//   compat::set_deterministic_algorithms(true);   // 2-argument form on every version
//   compat::fill_uninitialized_memory(true);      // 2.2+ only; returns false before
//   compat::zero_grad(optimizer);                 // zero-filled gradients on every version
#pragma once

#include <ATen/Context.h>
#include <torch/cuda.h>
#include <torch/optim/optimizer.h>
#include <torch/version.h>

#include <sstream>
#include <string>
#include <type_traits>
#include <utility>

// The CUDA caching allocator's header needs the CUDA runtime headers and the
// header a CUDA build of LibTorch generates (cuda_cmake_macros.h): Debian's
// CPU LibTorch ships c10/cuda headers without the latter, and a CUDA toolkit
// may sit on the include path beside it, so test for all three.
#if __has_include(<c10/cuda/CUDACachingAllocator.h>) && __has_include(<cuda_runtime_api.h>) && \
    __has_include(<c10/cuda/impl/cuda_cmake_macros.h>)
#include <c10/cuda/CUDACachingAllocator.h>
#define LOCKSTEP_HAVE_CUDA_ALLOCATOR 1
#else
#define LOCKSTEP_HAVE_CUDA_ALLOCATOR 0
#endif
#if defined(LOCKSTEP_TORCH_HAS_CUDA) && !LOCKSTEP_HAVE_CUDA_ALLOCATOR
#error "CUDA LibTorch without c10/cuda/CUDACachingAllocator.h, cuda_runtime_api.h or c10/cuda/impl/cuda_cmake_macros.h on the include path: peak GPU memory could not be read"
#endif

/// True when the LibTorch being compiled against is at least major.minor.
/// (Not `MAJOR >= a && MINOR >= b`, which is wrong for 3.0.)
#define LOCKSTEP_TORCH_AT_LEAST(major, minor) \
  (TORCH_VERSION_MAJOR > (major) ||           \
   (TORCH_VERSION_MAJOR == (major) && TORCH_VERSION_MINOR >= (minor)))

namespace lockstep::compat {

/// at::Context::setDeterministicAlgorithms: the header has no default for
/// warn_only in 1.13 or 2.x, so both arguments are always passed.
inline void set_deterministic_algorithms(bool on, bool warn_only = false) {
  at::globalContext().setDeterministicAlgorithms(on, warn_only);
}

/// setDeterministicFillUninitializedMemory exists from 2.2 (PR #111377).
/// Returns false when this LibTorch has no such knob (1.13 never fills
/// torch::empty under deterministic mode).
inline bool fill_uninitialized_memory(bool on) {
#if LOCKSTEP_TORCH_AT_LEAST(2, 2)
  at::globalContext().setDeterministicFillUninitializedMemory(on);
  return true;
#else
  (void)on;
  return false;
#endif
}

/// Reads back the fill flag, or "unsupported" on LibTorch < 2.2.
inline std::string fill_uninitialized_memory_state() {
#if LOCKSTEP_TORCH_AT_LEAST(2, 2)
  return at::globalContext().deterministicFillUninitializedMemory() ? "true" : "false";
#else
  return "unsupported (LibTorch < 2.2)";
#endif
}

/// TF32 and matmul precision through the legacy setters only: they keep the
/// 2.9+ fp32-precision tables consistent, so the legacy getters used for the
/// record never throw (docs/libtorch.md §1). setFloat32Precision is not
/// used: its signature changed between 2.9 and 2.10.
inline void set_tf32(bool allow) {
  auto& ctx = at::globalContext();
  ctx.setAllowTF32CuBLAS(allow);
  ctx.setAllowTF32CuDNN(allow);
  ctx.setFloat32MatmulPrecision(allow ? "high" : "highest");
}

/// The effective float32 matmul precision as PyTorch names it.
inline std::string float32_matmul_precision() {
  switch (at::globalContext().float32MatmulPrecision()) {
    case at::Float32MatmulPrecision::HIGHEST: return "highest";
    case at::Float32MatmulPrecision::HIGH: return "high";
    case at::Float32MatmulPrecision::MEDIUM: return "medium";
  }
  return "unknown";
}

namespace detail {
// Detection of Context members that some LibTorch versions lack, so no
// version number has to be guessed for them.
template <typename C, typename = void>
struct HasBF16Reduction : std::false_type {};
template <typename C>
struct HasBF16Reduction<C, std::void_t<decltype(std::declval<const C&>().allowBF16ReductionCuBLAS())>>
    : std::true_type {};
template <typename C, typename = void>
struct HasDeterministicMkldnn : std::false_type {};
template <typename C>
struct HasDeterministicMkldnn<C, std::void_t<decltype(std::declval<const C&>().deterministicMkldnn())>>
    : std::true_type {};

// "allowed", "disallowed", or 2.10's split-K forms.
template <typename Option>
std::string reduction_option_name(Option option) {
  if constexpr (std::is_same_v<Option, bool>) {
    return option ? "allowed" : "disallowed";
  } else {
#if LOCKSTEP_TORCH_AT_LEAST(2, 10)
    switch (option) {
      case at::CuBLASReductionOption::AllowReducedPrecisionWithSplitK: return "allowed";
      case at::CuBLASReductionOption::DisallowReducedPrecisionAllowSplitK: return "disallowed (split-K allowed)";
      case at::CuBLASReductionOption::DisallowReducedPrecisionDisallowSplitK: return "disallowed (no split-K)";
    }
#endif
    return "unknown (" + std::to_string(static_cast<int>(option)) + ")";
  }
}
}  // namespace detail

/// cuBLAS fp16/bf16 GEMMs reducing in reduced precision, "fp16=allowed
/// bf16=allowed" (PyTorch's default). The getters return bool before 2.10
/// and at::CuBLASReductionOption (with split-K) from 2.10 (PR #164766);
/// 1.13 has no bf16 getter ("bf16=unsupported"). A template so that the
/// branch for a getter this LibTorch lacks is never compiled.
template <typename Context = at::Context>
std::string reduced_precision_reductions(const Context& ctx = at::globalContext()) {
  std::string out = "fp16=" + detail::reduction_option_name(ctx.allowFP16ReductionCuBLAS());
  if constexpr (detail::HasBF16Reduction<Context>::value)
    out += " bf16=" + detail::reduction_option_name(ctx.allowBF16ReductionCuBLAS());
  else
    out += " bf16=unsupported";
  return out;
}

/// oneDNN's deterministic flag ("true"/"false"; 2.x), or "(absent: ...)"
/// on a LibTorch without it (1.13).
template <typename Context = at::Context>
std::string deterministic_mkldnn_state(const Context& ctx = at::globalContext()) {
  if constexpr (detail::HasDeterministicMkldnn<Context>::value)
    return ctx.deterministicMkldnn() ? "true" : "false";
  else
    return "(absent: this LibTorch has no deterministicMkldnn)";
}

/// The fp32 precision table, "generic.all=ieee cuda.matmul=none ...", read
/// through its 2.10 enum API (PR #164387; 2.9's string form is not used:
/// its signature differs), or "(absent: ...)" before 2.10, where the legacy
/// TF32 flags and float32_matmul_precision are all there is.
inline std::string fp32_precision_state() {
#if LOCKSTEP_TORCH_AT_LEAST(2, 10)
  const auto& ctx = at::globalContext();
  std::string out;
  const std::pair<at::Float32Backend, const char*> backends[] = {
      {at::Float32Backend::GENERIC, "generic"}, {at::Float32Backend::CUDA, "cuda"}, {at::Float32Backend::MKLDNN, "mkldnn"}};
  const std::pair<at::Float32Op, const char*> ops[] = {
      {at::Float32Op::ALL, "all"}, {at::Float32Op::CONV, "conv"}, {at::Float32Op::RNN, "rnn"}, {at::Float32Op::MATMUL, "matmul"}};
  for (const auto& [backend, backend_name] : backends)
    for (const auto& [op, op_name] : ops) {
      try {
        std::string p = at::precision2str(ctx.float32Precision(backend, op));
        out += (out.empty() ? "" : " ") + std::string(backend_name) + "." + op_name + "=" + p;
      } catch (const std::exception&) {
        // A pair this LibTorch does not define (generic has "all" only).
      }
    }
  return out.empty() ? "(absent: no fp32 precision readable)" : out;
#else
  return "(absent: LibTorch < 2.10 has no enum fp32 precision API)";
#endif
}

/// torch::cuda::device_count() is size_t in 1.13 and int8 DeviceIndex in
/// 2.x (which streams as a char): always go through int.
inline int cuda_device_count() { return static_cast<int>(torch::cuda::device_count()); }

/// Peak bytes allocated through the CUDA caching allocator on device 0
/// (torch.cuda.max_memory_allocated()), or -1 in a CPU-only build or
/// without a device. Index 0 of allocated_bytes is StatType::AGGREGATE in
/// 1.13 and 2.x; the enum's namespace moved in 2.x, the index did not.
inline int64_t cuda_peak_allocated_bytes() {
#if LOCKSTEP_HAVE_CUDA_ALLOCATOR
  if (!torch::cuda::is_available()) return -1;
  return c10::cuda::CUDACachingAllocator::getDeviceStats(0).allocated_bytes[0].peak;
#else
  return -1;
#endif
}

/// Optimizer::zero_grad keeping the gradients as zero-filled tensors. 2.0
/// made `set_to_none = true` the default (PR #92989); 1.13 has no argument
/// and zero-fills. Zero-filled on every version, so a parameter without a
/// gradient in a step is still updated (momentum, weight decay) and -0.0
/// gradients accumulate to +0.0, as in the 1.13 goldens.
inline void zero_grad(torch::optim::Optimizer& optimizer) {
#if LOCKSTEP_TORCH_AT_LEAST(2, 0)
  optimizer.zero_grad(/*set_to_none=*/false);
#else
  optimizer.zero_grad();
#endif
}

/// Iterator to `param`'s entry in `optimizer.state()`, or state().end().
/// The map is keyed by the TensorImpl* printed as a string up to 2.1
/// (c10::guts::to_string) and by the raw pointer from 2.2 (PR #108748,
/// which also removed c10::guts::to_string). The key type is read from the
/// map itself, so no release boundary has to be guessed.
template <class Optimizer>
auto find_param_state(Optimizer& optimizer, const at::Tensor& param) {
  using Key = typename std::decay_t<decltype(optimizer.state())>::key_type;
  if constexpr (std::is_same_v<Key, std::string>) {
    std::ostringstream key;
    key << static_cast<const void*>(param.unsafeGetTensorImpl());
    return optimizer.state().find(key.str());
  } else {
    return optimizer.state().find(static_cast<Key>(param.unsafeGetTensorImpl()));
  }
}

}  // namespace lockstep::compat

// ---- c10d / Gloo ---------------------------------------------------------------
// Only distributed/rank_group.cpp defines LOCKSTEP_HAVE_GLOO (with
// USE_C10D_GLOO and the gloo headers, CMakeLists.txt): the c10d headers stay
// out of every other translation unit.
#if defined(LOCKSTEP_HAVE_GLOO) && defined(USE_C10D_GLOO)
#include <gloo/config.h>
#include <torch/csrc/distributed/c10d/FileStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <chrono>

namespace lockstep::compat {

/// c10d::ProcessGroupGloo derives from ProcessGroup in 1.13 and from
/// Backend in 2.x (where a ProcessGroup holds it through setBackend). Its
/// collectives (allreduce, allgather, barrier) are called on it directly in
/// both, each returning a Work to wait() on, so lockstep holds the Gloo
/// object itself and never the 2.x wrapper.
using GlooGroup = c10d::ProcessGroupGloo;

/// The c10d FileStore at `store_path` (created by the first rank to
/// arrive): the rendezvous of ranks on one machine.
inline c10::intrusive_ptr<c10d::Store> make_file_store(const std::string& store_path, int world_size,
                                                      std::chrono::milliseconds timeout) {
  auto store = c10::make_intrusive<c10d::FileStore>(store_path, world_size);
  store->setTimeout(timeout);
  return store;
}

/// Whether TCPStoreOptions has `useLibUV` (2.2+; true by default from 2.4).
template <typename Options, typename = void>
struct HasUseLibUv : std::false_type {};
template <typename Options>
struct HasUseLibUv<Options, std::void_t<decltype(std::declval<Options&>().useLibUV)>> : std::true_type {};

/// The classic TCPStore backend where a LibTorch has the choice: from 2.4
/// libuv's is the default, and a LibTorch built without libuv (Debian 13's
/// 2.6) then throws "use_libuv was requested but PyTorch was build without
/// libuv support" at the rendezvous. The classic backend is in every build
/// and serves a smoke's few ranks alike.
template <typename Options>
void use_classic_store_backend(Options& options) {
  if constexpr (HasUseLibUv<Options>::value) options.useLibUV = false;
}

/// The c10d TCPStore at host:port: rank 0 serves it (`serve`), every rank
/// is a client (torchrun's env:// rendezvous), on the classic backend
/// (use_classic_store_backend). Throws c10::Error (or std::runtime_error)
/// when the port is taken or node 0 is not reached within `timeout`.
inline c10::intrusive_ptr<c10d::Store> make_tcp_store(const std::string& host, int port, bool serve,
                                                     std::chrono::milliseconds timeout) {
  c10d::TCPStoreOptions options;
  options.port = static_cast<std::uint16_t>(port);
  options.isServer = serve;
  options.waitWorkers = false;
  options.timeout = timeout;
  use_classic_store_backend(options);
  return c10::make_intrusive<c10d::TCPStore>(host, options);
}

/// Rank `rank` of `world_size` joins a Gloo group through `store`. Gloo's
/// transport binds to `interface` when given (GLOO_SOCKET_IFNAME, as in
/// PyTorch), to the loopback address when `loopback`, else to the address
/// this host's name resolves to (ProcessGroupGloo::createDefaultDevice).
/// `timeout` bounds the rendezvous and every collective. Throws c10::Error
/// when the rendezvous times out.
inline c10::intrusive_ptr<GlooGroup> make_gloo_group(const c10::intrusive_ptr<c10d::Store>& store, int rank,
                                                      int world_size, std::chrono::milliseconds timeout,
                                                      const std::string& interface, bool loopback) {
  auto options = GlooGroup::Options::create(timeout);
  if (!interface.empty())
    options->devices.push_back(GlooGroup::createDeviceForInterface(interface));
  else if (loopback)
    options->devices.push_back(GlooGroup::createDeviceForHostname("127.0.0.1"));
  else
    options->devices.push_back(GlooGroup::createDefaultDevice());
  return c10::make_intrusive<GlooGroup>(store, rank, world_size, options);
}

/// The Gloo version the headers declare (gloo/config.h), e.g. "0.5.0".
inline std::string gloo_header_version() {
  return std::to_string(GLOO_VERSION_MAJOR) + "." + std::to_string(GLOO_VERSION_MINOR) + "." +
         std::to_string(GLOO_VERSION_PATCH);
}

}  // namespace lockstep::compat
#endif
