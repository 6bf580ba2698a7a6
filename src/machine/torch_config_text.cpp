#include "machine/torch_config_text.h"

namespace lockstep {

namespace {

// The rest of the first line that contains `label`, without leading blanks.
std::string after(const std::string& text, const std::string& label) {
  auto p = text.find(label);
  if (p == std::string::npos) return "";
  p += label.size();
  while (p < text.size() && text[p] == ' ') ++p;
  auto end = text.find('\n', p);
  return text.substr(p, (end == std::string::npos ? text.size() : end) - p);
}

// "KEY=value, KEY=value" pairs. A value may itself contain ", " (compiler
// flags), so a pair ends only at ", " followed by a blank-free KEY and '='.
std::map<std::string, std::string> key_values(const std::string& line) {
  std::map<std::string, std::string> out;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == ',')) ++i;
    size_t eq = line.find('=', i);
    if (eq == std::string::npos) break;
    std::string key = line.substr(i, eq - i);
    size_t next = line.find(", ", eq);
    while (next != std::string::npos) {
      size_t eq2 = line.find('=', next + 2);
      size_t comma2 = line.find(", ", next + 2);
      if (eq2 != std::string::npos && (comma2 == std::string::npos || eq2 < comma2) &&
          line.substr(next + 2, eq2 - next - 2).find(' ') == std::string::npos)
        break;
      next = comma2;
    }
    size_t end = next == std::string::npos ? line.size() : next;
    std::string value = line.substr(eq + 1, end - eq - 1);
    while (!value.empty() && (value.back() == ',' || value.back() == ' ')) value.pop_back();
    out[key] = value;
    i = next == std::string::npos ? line.size() : next + 2;
  }
  return out;
}

}  // namespace

TorchConfigText parse_torch_config(const std::string& text) {
  TorchConfigText c;
  c.build_settings = key_values(after(text, "Build settings:"));
  c.cpu_capability = after(text, "CPU capability usage:");
  // "  - CUDA Runtime 12.8" comes before "  - Built with CUDA Runtime 12.6".
  c.cuda_runtime = after(text, "- CUDA Runtime");
  c.cudnn = after(text, "- CuDNN");
  return c;
}

}  // namespace lockstep
