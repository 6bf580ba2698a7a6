#include "machine/machine_facts.h"

#include <gnu/libc-version.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "machine/cuda_driver.h"
#include "machine/driver_version.h"
#include "machine/git_state.h"

namespace lockstep {

std::string absent_fact(const std::string& why) { return "(absent: " + why + ")"; }

std::string cpuinfo_field(const std::string& name) {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(name, 0) != 0) continue;
    auto colon = line.find(':');
    if (colon != std::string::npos) {
      size_t start = line.find_first_not_of(' ', colon + 1);
      return start == std::string::npos ? "" : line.substr(start);
    }
  }
  return "";
}

std::string cpu_isa_flags() {
  std::istringstream flags(cpuinfo_field("flags"));
  static const std::set<std::string> wanted = {
      "sse4_2", "avx", "avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512dq", "avx512vl",
      "avx512_vnni", "avx512_bf16", "amx_bf16", "amx_tile", "asimd", "sve"};
  std::set<std::string> have;
  std::string f;
  while (flags >> f)
    if (wanted.count(f)) have.insert(f);
  std::string out;
  for (const auto& h : have) out += (out.empty() ? "" : " ") + h;
  return out.empty() ? absent_fact("no flags in /proc/cpuinfo") : out;
}

std::string cpu_capability_from_isa(const std::string& isa_flags) {
  std::string flags = " " + isa_flags + " ";
  auto has = [&](const char* f) { return flags.find(" " + std::string(f) + " ") != std::string::npos; };
  const bool avx2 = has("avx2") && has("fma");
  const bool avx512 = avx2 && has("avx512f") && has("avx512bw") && has("avx512vl") && has("avx512dq");
  const char* asked = std::getenv("ATEN_CPU_CAPABILITY");
  std::string request = asked ? asked : "";
  if (request == "avx512" && avx512) return "AVX512";
  if (request == "default") return "DEFAULT";
  return avx2 ? "AVX2" : "DEFAULT";
}

std::string os_pretty_name() {
  std::ifstream in("/etc/os-release");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("PRETTY_NAME=", 0) == 0) {
      std::string v = line.substr(12);
      v.erase(std::remove(v.begin(), v.end(), '"'), v.end());
      return v;
    }
  return absent_fact("no /etc/os-release");
}

const std::map<std::string, bool>& numerics_env_vars() {
  // name -> determinism-relevant
  static const std::map<std::string, bool> vars = {
      {"CUBLAS_WORKSPACE_CONFIG", true}, {"NVIDIA_TF32_OVERRIDE", true},
      {"OMP_NUM_THREADS", true},         {"MKL_NUM_THREADS", true},
      // Which GPU is device 0 does not change its numerics; its model is
      // recorded (cuda.gpu_name, compute capability, SM count) and relevant.
      {"ATEN_CPU_CAPABILITY", true},     {"CUDA_VISIBLE_DEVICES", false},
      {"NCCL_ALGO", true},               {"NCCL_PROTO", true},
      // NVLS (NVLink SHARP) reduces in the switch; the channel and CTA
      // counts change how a collective is split, so its summation order.
      {"NCCL_NVLS_ENABLE", true},        {"NCCL_MIN_NCHANNELS", true},
      {"NCCL_MAX_NCHANNELS", true},      {"NCCL_MIN_CTAS", true},
      {"NCCL_MAX_CTAS", true},           {"NCCL_CUMEM_ENABLE", false},
      {"TORCH_ALLOW_TF32_CUBLAS_OVERRIDE", true},
      {"TORCH_BLAS_PREFER_CUBLASLT", true},
      {"CUBLASLT_WORKSPACE_SIZE", true}, {"DNNL_MAX_CPU_ISA", true},
      {"ONEDNN_MAX_CPU_ISA", true},      {"LANG", false},
      {"LC_ALL", false},                 {"TZ", false}};
  return vars;
}

std::string runner_identity() {
  auto env = [](const char* name) {
    const char* v = std::getenv(name);
    return std::string(v ? v : "");
  };
  std::string description = env("CI_RUNNER_DESCRIPTION"), id = env("CI_RUNNER_ID");
  if (!description.empty() || !id.empty())
    return "ci runner " + (description.empty() ? "#" + id : description + (id.empty() ? "" : " (#" + id + ")"));
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) != 0 || !*host) return absent_fact("no host name");
  return "host " + std::string(host);
}

Fingerprint machine_fingerprint(const MachineOptions& opt) {
  Fingerprint fp;
  auto put = [&fp](const std::string& k, const std::string& v, bool relevant) {
    fp[k] = FingerprintField{v.empty() ? absent_fact("empty") : v, relevant};
  };
  bool on_cuda = opt.device == "cuda";
  put("device", opt.device, true);
  put("lockstep.version", LOCKSTEP_VERSION, false);

  utsname u{};
  uname(&u);
  put("cpu.arch", u.machine, true);
  put("cpu.model", cpuinfo_field("model name"), false);
  put("cpu.isa", cpu_isa_flags(), true);
  put("cpu.logical_cores", std::to_string(std::thread::hardware_concurrency()), false);
  put("runner", runner_identity(), false);
  put("os.name", os_pretty_name(), false);
  put("os.kernel", u.release, false);
  put("os.glibc", gnu_get_libc_version(), true);

  for (const auto& [name, relevant] : numerics_env_vars()) {
    std::string value = "(unset)";
    if (opt.use_env) {
      auto it = opt.env.find(name);
      if (it != opt.env.end()) value = it->second.empty() ? "(set, empty)" : it->second;
    } else if (const char* v = std::getenv(name.c_str())) {
      value = *v ? v : "(set, empty)";
    }
    bool thread_count = name == "OMP_NUM_THREADS" || name == "MKL_NUM_THREADS";
    put("env." + name, value, relevant && !(thread_count && opt.threads_pinned));
  }
  // Inductor's settings from the environment (TORCHINDUCTOR_DETERMINISTIC,
  // ..._FORCE_DISABLE_CACHES, ..._MAX_AUTOTUNE, ...): every one that is set,
  // relevant (torch.compile's kernels and their choices follow them).
  auto inductor = [&](const std::string& name, const std::string& value) {
    if (name.rfind(kInductorEnvPrefix, 0) == 0 && name.size() > sizeof kInductorEnvPrefix - 1)
      put("env." + name, value.empty() ? "(set, empty)" : value, true);
  };
  if (opt.use_env) {
    for (const auto& [name, value] : opt.env) inductor(name, value);
  } else {
    for (char** e = environ; e && *e; ++e) {
      std::string entry = *e;
      size_t eq = entry.find('=');
      if (eq != std::string::npos) inductor(entry.substr(0, eq), entry.substr(eq + 1));
    }
  }

  // CUDA (relevant only for CUDA runs): the driver through its own API.
  // How many GPUs there are, their memory and UUID do not change a run on
  // device 0: informational.
  std::string nvml_why;
  std::string driver = nvidia_driver_version(&nvml_why, opt.nvml_library);
  put("nvidia.driver_version", driver.empty() ? absent_fact(nvml_why) : driver, on_cuda);
  CudaDriverInfo drv = query_cuda_driver(opt.cuda_library);
  if (!drv.error.empty()) {
    for (const char* k : {"cuda.driver_api_version", "cuda.gpu_name", "cuda.compute_capability", "cuda.sm_count"})
      put(k, absent_fact(drv.error), on_cuda);
    for (const char* k : {"cuda.memory_bytes", "cuda.gpu_uuid"}) put(k, absent_fact(drv.error), false);
    if (drv.driver_api_version > 0)  // cuDriverGetVersion answers even when cuInit fails
      put("cuda.driver_api_version", cuda_version_string(drv.driver_api_version), on_cuda);
  } else {
    put("cuda.driver_api_version", cuda_version_string(drv.driver_api_version), on_cuda);
    put("cuda.gpu_name", drv.name, on_cuda);
    put("cuda.compute_capability", drv.compute_capability, on_cuda);
    put("cuda.sm_count", std::to_string(drv.sm_count), on_cuda);
    put("cuda.memory_bytes", std::to_string(drv.memory_bytes), false);
    put("cuda.gpu_uuid", drv.uuid.empty() ? absent_fact("cuDeviceGetUuid failed") : drv.uuid, false);
  }

  add_git_fields(fp, opt.repo_path);
  return fp;
}

void add_git_fields(Fingerprint& fp, const std::string& repo_path) {
  GitState git = read_git_state(repo_path);
  auto put = [&fp](const char* k, const std::string& v) { fp[k] = FingerprintField{v.empty() ? absent_fact("empty") : v, false}; };
  if (git.in_repo) {
    put("git.commit", git.commit);
    put("git.branch", git.branch);
    put("git.dirty", dirty_summary(git.dirty_files));
    if (!git.owner_note.empty()) put("git.owner", git.owner_note);
  } else {
    for (const char* k : {"git.commit", "git.branch", "git.dirty"}) put(k, absent_fact(git.error));
  }
}

}  // namespace lockstep
