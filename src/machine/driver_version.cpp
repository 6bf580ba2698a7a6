#include "machine/driver_version.h"

#include <dlfcn.h>

#include <fstream>
#include <sstream>
#include <vector>

#include "machine/cuda_driver.h"

namespace lockstep {

std::string nvml_return_name(int code) {
  const char* name = nullptr;
  switch (code) {
    case 1: name = "NVML_ERROR_UNINITIALIZED"; break;
    case 2: name = "NVML_ERROR_INVALID_ARGUMENT"; break;
    case 3: name = "NVML_ERROR_NOT_SUPPORTED"; break;
    case 4: name = "NVML_ERROR_NO_PERMISSION"; break;
    case 7: name = "NVML_ERROR_INSUFFICIENT_SIZE"; break;
    case 9: name = "NVML_ERROR_DRIVER_NOT_LOADED"; break;
    case 12: name = "NVML_ERROR_LIB_RM_VERSION_MISMATCH"; break;
    case 999: name = "NVML_ERROR_UNKNOWN"; break;
  }
  return name ? std::string(name) + " (" + std::to_string(code) + ")" : "nvmlReturn_t " + std::to_string(code);
}

std::string kernel_module_driver_version(const std::string& proc_file) {
  std::ifstream in(proc_file);
  std::string line;
  if (!std::getline(in, line)) return "";
  // "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.95.05  Tue Sep ..."
  auto p = line.find("Kernel Module");
  if (p == std::string::npos) return "";
  std::istringstream words(line.substr(p + 13));
  std::string version;
  words >> version;
  return is_dotted_version(version) ? version : "";
}

std::string nvidia_driver_version(std::string* why, const std::string& library) {
  void* lib = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    if (why) *why = dlopen_failure(library);
    return "";
  }
  using InitFn = int (*)();
  using VersionFn = int (*)(char*, unsigned);
  auto init = reinterpret_cast<InitFn>(dlsym(lib, "nvmlInit_v2"));
  auto version = reinterpret_cast<VersionFn>(dlsym(lib, "nvmlSystemGetDriverVersion"));
  auto shutdown = reinterpret_cast<InitFn>(dlsym(lib, "nvmlShutdown"));
  if (!init || !version) {
    if (why) *why = library + " lacks nvmlInit_v2/nvmlSystemGetDriverVersion";
    return "";
  }
  if (int rc = init(); rc != 0) {
    if (why) *why = "nvmlInit_v2 failed with " + nvml_return_name(rc);
    return "";
  }
  char buf[96] = {0};
  int rc = version(buf, sizeof buf - 1);
  if (shutdown) shutdown();
  if (rc != 0) {
    if (why) *why = "nvmlSystemGetDriverVersion failed with " + nvml_return_name(rc);
    return "";
  }
  return buf;
}

namespace {
// Dotted components of at most 9 digits each (no overflow); false otherwise.
bool parse(const std::string& v, std::vector<long>& out) {
  if (v.empty() || v.back() == '.') return false;
  std::stringstream ss(v);
  std::string part;
  while (std::getline(ss, part, '.')) {
    if (part.empty() || part.size() > 9 || part.find_first_not_of("0123456789") != std::string::npos) return false;
    out.push_back(std::stol(part));
  }
  return true;
}
}  // namespace

bool is_dotted_version(const std::string& version) {
  std::vector<long> parts;
  return parse(version, parts);
}

bool version_at_least(const std::string& have, const std::string& need) {
  std::vector<long> h, n;
  if (!parse(have, h) || !parse(need, n)) return false;
  size_t len = std::max(h.size(), n.size());
  h.resize(len, 0);
  n.resize(len, 0);
  for (size_t i = 0; i < len; ++i)
    if (h[i] != n[i]) return h[i] > n[i];
  return true;
}

}  // namespace lockstep
