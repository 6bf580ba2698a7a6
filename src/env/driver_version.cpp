#include "env/driver_version.h"

#include <dlfcn.h>

#include <sstream>
#include <vector>

#include "env/cuda_driver.h"

namespace lockstep {

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
    if (why) *why = "nvmlInit_v2 failed with nvmlReturn_t " + std::to_string(rc);
    return "";
  }
  char buf[96] = {0};
  int rc = version(buf, sizeof buf - 1);
  if (shutdown) shutdown();
  if (rc != 0) {
    if (why) *why = "nvmlSystemGetDriverVersion failed with nvmlReturn_t " + std::to_string(rc);
    return "";
  }
  return buf;
}

namespace {
bool parse(const std::string& v, std::vector<long>& out) {
  if (v.empty()) return false;
  std::stringstream ss(v);
  std::string part;
  while (std::getline(ss, part, '.')) {
    if (part.empty() || part.find_first_not_of("0123456789") != std::string::npos) return false;
    out.push_back(std::stol(part));
  }
  return true;
}
}  // namespace

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
