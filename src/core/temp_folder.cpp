#include "core/temp_folder.h"

#include <stdlib.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "core/error.h"

namespace lockstep {
namespace fs = std::filesystem;

TempFolder::TempFolder(const std::string& prefix) {
  // mkdtemp's template: the trailing six characters become a unique suffix.
  std::string name = (fs::temp_directory_path() / (prefix + "-")).string() + std::string(6, 'X');
  if (!::mkdtemp(name.data()))
    throw EnvironmentError("cannot create a temporary folder in " + fs::temp_directory_path().string() + ": " +
                           std::strerror(errno));
  path_ = name;
}

TempFolder::~TempFolder() {
  if (keep_) return;
  std::error_code ec;
  fs::remove_all(path_, ec);
}

}  // namespace lockstep
