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
    std::string cc = field(fp, "cuda.compute_capability");  // "9.0", or "(absent: ...)"
    auto dot = cc.find('.');
    bool well_formed = dot != std::string::npos && dot > 0 && dot + 1 < cc.size() &&
                       cc.find_first_not_of("0123456789.") == std::string::npos && cc.find('.', dot + 1) == std::string::npos;
    if (!well_formed) return "cuda-smunknown";
    cc.erase(dot, 1);
    return "cuda-sm" + cc;
  }
  std::string cap = field(fp, "cpu.capability");  // "AVX2", "AVX512", "NO AVX", "DEFAULT"
  std::string isa;
  for (char c : cap)
    if (std::isalnum(static_cast<unsigned char>(c))) isa += static_cast<char>(std::tolower(c));
  if (isa.empty() || isa == "noavx") isa = "default";
  std::string arch = field(fp, "cpu.arch");
  return "cpu-" + (arch.empty() ? std::string("unknown") : arch) + "-" + isa;
}

bool is_platform_key(const std::string& key) {
  auto word = [](const std::string& w) {
    return !w.empty() && w.size() <= 32 &&
           w.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_") == std::string::npos;
  };
  if (key.rfind("cuda-sm", 0) == 0) {
    std::string cc = key.substr(7);
    return cc == "unknown" || (!cc.empty() && cc.size() <= 8 && cc.find_first_not_of("0123456789") == std::string::npos);
  }
  if (key.rfind("cpu-", 0) != 0) return false;
  size_t dash = key.find('-', 4);
  return dash != std::string::npos && word(key.substr(4, dash - 4)) && word(key.substr(dash + 1));
}

bool is_stack_label(const std::string& label) {
  return !label.empty() && label.size() <= 40 && std::isalnum(static_cast<unsigned char>(label.front())) &&
         label.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") ==
             std::string::npos;
}

std::string golden_key(const std::string& platform, const std::string& stack) {
  return stack.empty() ? platform : platform + "@" + stack;
}

std::pair<std::string, std::string> split_golden_key(const std::string& key) {
  auto at = key.find('@');
  if (at == std::string::npos) return {key, ""};
  return {key.substr(0, at), key.substr(at + 1)};
}

std::string platform_family(const std::string& key) {
  auto last = key.rfind('-');
  auto first = key.find('-');
  if (key.rfind("cpu-", 0) == 0 && last != first) return key.substr(0, last);
  return key;
}

}  // namespace lockstep
