#include "record/platform_key.h"

#include <algorithm>
#include <cctype>

namespace lockstep {

namespace {
std::string field(const Fingerprint& fp, const std::string& name) {
  auto it = fp.find(name);
  return it == fp.end() ? "" : it->second.value;
}
}  // namespace

std::string platform_key(const Fingerprint& fp) {
  if (field(fp, "device") == "cuda") {
    std::string cc = field(fp, "cuda.compute_capability");  // "9.0"
    cc.erase(std::remove(cc.begin(), cc.end(), '.'), cc.end());
    return "cuda-sm" + (cc.empty() ? std::string("unknown") : cc);
  }
  std::string cap = field(fp, "cpu.capability");  // "AVX2", "AVX512", "NO AVX", "DEFAULT"
  std::string isa;
  for (char c : cap)
    if (std::isalnum(static_cast<unsigned char>(c))) isa += static_cast<char>(std::tolower(c));
  if (isa.empty() || isa == "noavx") isa = "default";
  std::string arch = field(fp, "cpu.arch");
  return "cpu-" + (arch.empty() ? std::string("unknown") : arch) + "-" + isa;
}

std::string platform_family(const std::string& key) {
  auto last = key.rfind('-');
  auto first = key.find('-');
  if (key.rfind("cpu-", 0) == 0 && last != first) return key.substr(0, last);
  return key;
}

}  // namespace lockstep
