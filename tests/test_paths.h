// Where this build put what the tests run: the `lockstep` binary, the
// source tree, the fake NVIDIA libraries. They are compiled into one
// translation unit only (test_paths.cpp), so every other test file
// compiles to the same object in any clone or build folder and ccache
// hits it (a path in a -D definition would make each of them miss).
//
//   Result r = shell(lockstep_binary() + " check " + smoke);
//   std::ifstream in(source_dir() + "/docs/smoke-config.md");
#pragma once

#include <string>

namespace lockstep::test_paths {

/// The build's `lockstep` binary, absolute (build/lockstep).
const std::string& lockstep_binary();

/// The source tree's root, absolute (the clone: docs/, examples/, python/).
const std::string& source_dir();

/// The folder of the fake libcuda/libnvidia-ml/libcudnn/libnccl the
/// machine tests load (build/tests/fake_nvidia).
const std::string& fake_nvidia_dir();

}  // namespace lockstep::test_paths
