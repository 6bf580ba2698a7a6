#include "core/install_paths.h"

#include <filesystem>

namespace lockstep {
namespace fs = std::filesystem;

std::string shipped_path(const std::string& installed, const std::string& in_source) {
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    fs::path shared = exe.parent_path().parent_path() / "share" / "lockstep" / installed;
    if (fs::exists(shared, ec)) return shared.string();
  }
  fs::path source = fs::path(LOCKSTEP_SOURCE_DIR) / in_source;
  if (fs::exists(source, ec)) return source.string();
  return "";
}

}  // namespace lockstep
