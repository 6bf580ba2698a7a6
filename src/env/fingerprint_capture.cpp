#include "env/fingerprint_capture.h"

#include <ATen/Parallel.h>
#include <ATen/Version.h>
#include <dlfcn.h>
#include <git2.h>
#include <link.h>
#include <xxhash.h>

#include <algorithm>
#include <cstdlib>
#include <set>
#include <vector>

#include "core/error.h"
#include "core/file_hash_cache.h"
#include "core/hash.h"
#include "machine/cuda_libraries.h"
#include "machine/cuda_usability.h"
#include "machine/machine_facts.h"
#include "env/opencv_version.h"
#include "machine/torch_config_text.h"
#include "torch_compat.h"

namespace lockstep {

namespace {

std::string absent(const std::string& why) { return absent_fact(why); }

std::string library_of(const void* symbol) {
  Dl_info info{};
  if (symbol && dladdr(symbol, &info) && info.dli_fname) {
    char* real = realpath(info.dli_fname, nullptr);
    std::string out = real ? real : info.dli_fname;
    free(real);
    return out;
  }
  return "";
}

// The library's XXH3-128, cached between runs by inode, size and times
// (core/file_hash_cache.h): reading 120 MB in every run would cost more
// than the rest of the fingerprint.
std::string hash_file(const std::string& path) {
  try {
    return cached_file_xxh3(path);
  } catch (const Error&) {
    return absent("cannot read " + path);
  }
}

// Loaded shared objects whose names say BLAS/LAPACK/oneDNN/OpenMP: the
// implementation actually used, after Debian's alternatives.
std::string numerics_libraries() {
  std::set<std::string> libs;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        std::string name = info->dlpi_name ? info->dlpi_name : "";
        for (const char* key : {"blas", "lapack", "dnnl", "mkl", "gomp", "omp"})
          if (name.find(key) != std::string::npos) {
            char* real = realpath(name.c_str(), nullptr);
            static_cast<std::set<std::string>*>(data)->insert(real ? real : name);
            free(real);
            break;
          }
        return 0;
      },
      &libs);
  std::string out;
  for (const auto& l : libs) out += (out.empty() ? "" : " ") + l;
  return out.empty() ? absent("none loaded") : out;
}

}  // namespace

bool is_capture_only_field(const std::string& field) {
  for (const char* prefix : {"torch.", "threads.", "libs.", "build.", "determinism."})
    if (field.rfind(prefix, 0) == 0) return true;
  return field == "cpu.capability" || field == "cuda.torch_devices" || field == "cuda.runtime" ||
         field == "cuda.cudnn" || field == "cuda.nccl";
}

namespace {

// fp[k] = v ("(absent: empty)" for an empty value).
void put_field(Fingerprint& fp, const std::string& k, const std::string& v, bool relevant) {
  fp[k] = FingerprintField{v.empty() ? absent("empty") : v, relevant};
}

// LibTorch's own fields: version, library and its hash, build settings,
// oneDNN/OpenMP/MKL, the 2.x numerics settings, the CPU capability.
// Returns show_config() parsed, which the CUDA fields read too.
TorchConfigText put_libtorch_fields(const CaptureOptions& opt, Fingerprint& fp) {
  auto put = [&fp](const std::string& k, const std::string& v, bool relevant) { put_field(fp, k, v, relevant); };
  const bool on_cuda = opt.device == "cuda";
  put("torch.version", TORCH_VERSION, true);
  std::string torch_cpu = library_of(reinterpret_cast<const void*>(&at::show_config));
  put("torch.library", torch_cpu.empty() ? absent("dladdr failed") : torch_cpu, false);
  put("torch.library_xxh3", opt.hash_libraries && !torch_cpu.empty() ? hash_file(torch_cpu)
                                                                    : absent("not hashed"),
      true);
  // On CUDA builds this also loads cuDNN (showConfig calls cudnnGetVersion).
  TorchConfigText config = parse_torch_config(at::show_config());
  const auto& settings = config.build_settings;
  for (const char* key : {"BLAS_INFO", "LAPACK_INFO", "USE_CUDA", "USE_CUDNN", "USE_MKLDNN",
                          "USE_OPENMP", "USE_NCCL", "CXX_COMPILER", "BUILD_TYPE"}) {
    auto it = settings.find(key);
    std::string name = std::string("torch.build.") + key;
    std::transform(name.begin(), name.end(), name.begin(), ::tolower);
    put(name, it == settings.end() ? absent("not in show_config()") : it->second,
        std::string(key) != "CXX_COMPILER" && std::string(key) != "BUILD_TYPE");
  }
  put("torch.mkldnn", at::get_mkldnn_version().empty() ? absent("no oneDNN") : at::get_mkldnn_version(), true);
  put("torch.openmp", at::get_openmp_version().empty() ? absent("no OpenMP") : at::get_openmp_version(), true);
  put("torch.has_mkl", at::hasMKL() ? "true" : "false", true);
  // torch 2.x's numerics settings beside the contract: the fp32 precision
  // table (2.10+), oneDNN's deterministic flag, and cuBLAS's reduced-
  // precision reductions (cuBLAS only: relevant on a CUDA run).
  put("torch.fp32_precision", compat::fp32_precision_state(), true);
  put("torch.deterministic_mkldnn", compat::deterministic_mkldnn_state(), true);
  put("torch.reduced_precision_reductions", compat::reduced_precision_reductions(), on_cuda);
  put("cpu.capability", config.cpu_capability.empty() ? absent("not in show_config()") : config.cpu_capability,
      true);

  return config;
}

// CUDA as LibTorch sees it: the runtime libraries as loaded (the versions
// that run, not those compiled against). How many GPUs are visible does
// not change a run on device 0: informational.
void put_cuda_fields(const TorchConfigText& config, bool on_cuda, Fingerprint& fp) {
  auto put = [&fp](const std::string& k, const std::string& v, bool relevant) { put_field(fp, k, v, relevant); };
  const auto& settings = config.build_settings;
  put("cuda.torch_devices", std::to_string(compat::cuda_device_count()), false);
  bool torch_cuda = build_setting_is_on(settings.count("USE_CUDA") ? settings.at("USE_CUDA") : "");
  std::string no_cuda_why = torch_cuda ? "not in show_config()" : "CPU-only LibTorch";
  put("cuda.runtime", config.cuda_runtime.empty() ? absent(no_cuda_why) : config.cuda_runtime, on_cuda);
  std::string cudnn_why;
  std::string cudnn = loaded_cudnn_version(&cudnn_why);
  if (cudnn.empty() && !config.cudnn.empty()) cudnn = config.cudnn + " (from show_config(); " + cudnn_why + ")";
  put("cuda.cudnn", cudnn.empty() ? absent(torch_cuda ? cudnn_why : no_cuda_why) : cudnn, on_cuda);
  std::string nccl_why;
  std::string nccl = loaded_nccl_version(&nccl_why);
  put("cuda.nccl", nccl.empty() ? absent(nccl_why) : nccl, on_cuda);
}

}  // namespace

Fingerprint capture_fingerprint(const CaptureOptions& opt) {
  // The machine's fields come from their one writer; this adds LibTorch's.
  MachineOptions machine;
  machine.device = opt.device;
  machine.repo_path = opt.repo_path;
  auto mode = opt.contract.find("mode");
  machine.threads_pinned = mode != opt.contract.end() && (mode->second == "strict" || mode->second == "default");
  machine.cuda_library = opt.cuda_library;
  machine.nvml_library = opt.nvml_library;
  Fingerprint fp = machine_fingerprint(machine);
  auto put = [&fp](const std::string& k, const std::string& v, bool relevant) { put_field(fp, k, v, relevant); };
  bool on_cuda = opt.device == "cuda";

  const TorchConfigText config = put_libtorch_fields(opt, fp);

  // Threads.
  put("threads.intra_op", std::to_string(at::get_num_threads()), true);
  put("threads.inter_op", std::to_string(at::get_num_interop_threads()), true);
  put("threads.intra_op_default", std::to_string(at::intraop_default_num_threads()), false);

  // Numerics libraries actually loaded.
  put("libs.numerics", numerics_libraries(), true);
  put("libs.xxhash", std::to_string(XXH_versionNumber()), false);
  int gmaj = 0, gmin = 0, grev = 0;
  git_libgit2_version(&gmaj, &gmin, &grev);
  put("libs.libgit2", std::to_string(gmaj) + "." + std::to_string(gmin) + "." + std::to_string(grev), false);
  // The image source decodes and resizes with it: a new OpenCV may change pixels.
  put("libs.opencv", opencv_version(), true);

  // The compiler this LibTorch side was built with.
  put("build.compiler", __VERSION__, false);
  put("build.cplusplus", std::to_string(__cplusplus), false);
  put("build.cxx11_abi", std::to_string(_GLIBCXX_USE_CXX11_ABI), false);

  // Determinism contract as read back.
  for (const auto& [k, v] : opt.contract) put("determinism." + k, v, true);

  put_cuda_fields(config, on_cuda, fp);
  return fp;
}

}  // namespace lockstep
