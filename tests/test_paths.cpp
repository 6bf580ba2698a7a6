// The build's paths (tests/test_paths.h), from the definitions CMake gives
// this file alone.
#include "test_paths.h"

namespace lockstep::test_paths {

const std::string& lockstep_binary() {
  static const std::string path = LOCKSTEP_BINARY;
  return path;
}

const std::string& source_dir() {
  static const std::string path = LOCKSTEP_SOURCE_DIR;
  return path;
}

const std::string& fake_nvidia_dir() {
  static const std::string path = LOCKSTEP_FAKE_NVIDIA_DIR;
  return path;
}

}  // namespace lockstep::test_paths
