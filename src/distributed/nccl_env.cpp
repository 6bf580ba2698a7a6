#include "distributed/nccl_env.h"

#include <algorithm>
#include <cctype>

#include "core/error.h"

namespace lockstep {

namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

}  // namespace

std::map<std::string, std::string> nccl_contract(const std::string& mode,
                                                 const std::map<std::string, std::string>& env) {
  struct Rule {
    const char* name;
    const char* value;
    const char* why;
  };
  const Rule rules[] = {
      {"NCCL_ALGO", "Ring", "Tree, CollNet and NVLS reduce in an order that depends on the topology"},
      {"NCCL_PROTO", "Simple", "LL and LL128 change the reduction's chunking with the message size"},
  };
  std::map<std::string, std::string> out;
  for (const Rule& r : rules) {
    auto it = env.find(r.name);
    bool set = it != env.end() && !it->second.empty();
    if (mode != "strict") {
      out[r.name] = set ? it->second : "(unset)";
      continue;
    }
    // NCCL reads these case-insensitively.
    if (set && lower(it->second) != lower(r.value))
      throw EnvironmentError(std::string(r.name) + "=" + it->second + ": strict mode runs NCCL with " + r.name + "=" +
                             r.value + " (" + r.why + "); unset it, or use determinism.mode \"default\"");
    out[r.name] = r.value;
  }
  return out;
}

}  // namespace lockstep
