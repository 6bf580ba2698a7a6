#include "core/torch_start.h"

namespace lockstep {

std::vector<std::string> with_torch_start_tunables(std::vector<std::string> env) {
  static const std::string kName = "GLIBC_TUNABLES=";
  static const std::string kTunable = "glibc.malloc.hugetlb";
  for (auto& e : env) {
    if (e.compare(0, kName.size(), kName) != 0) continue;
    if (e.find(kTunable) != std::string::npos) return env;
    e += (e.size() == kName.size() ? "" : ":") + kTunable + "=1";
    return env;
  }
  env.push_back(kName + kTunable + "=1");
  return env;
}

}  // namespace lockstep
