#include "core/install_paths.h"

#include <filesystem>

#include "core/error.h"

namespace lockstep {
namespace fs = std::filesystem;

std::string self_executable() {
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) throw EnvironmentError("cannot resolve /proc/self/exe: " + ec.message());
  return exe.string();
}

std::string sibling_executable(const std::string& name) {
  return (std::filesystem::path(self_executable()).parent_path() / name).string();
}

std::string shipped_path(const std::string& installed, const std::string& in_source) {
  std::error_code ec;
  std::string exe;
  try {
    exe = self_executable();
  } catch (const Error&) {
  }
  if (!exe.empty()) {
    fs::path shared = fs::path(exe).parent_path().parent_path() / "share" / "lockstep" / installed;
    if (fs::exists(shared, ec)) return shared.string();
  }
  fs::path source = fs::path(LOCKSTEP_SOURCE_DIR) / in_source;
  if (fs::exists(source, ec)) return source.string();
  return "";
}

std::string missing_torch_hint() {
  return "(install lockstep-torch beside lockstep: the Debian package and the lockstep:cpu image have it; the "
         "relocatable bundle, the wheel and a build configured with LOCKSTEP_WITH_TORCH=OFF have none: they run "
         "trainer smokes, not the built-in LibTorch ones nor `lockstep env`)";
}

}  // namespace lockstep
