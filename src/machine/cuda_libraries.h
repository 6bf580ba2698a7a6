// Versions of the CUDA libraries LibTorch has loaded into this process
// (cuDNN, NCCL), read from the loaded copy itself: the version that runs,
// not the one LibTorch was compiled against.
//
//   std::string why;
//   std::string v = loaded_cudnn_version(&why);   // "9.8.0", or "" and why
//
// Nothing is loaded here: a library LibTorch did not load is reported as
// absent, never pulled in (a second copy could differ from LibTorch's). The
// version encodings are those of cudnn_version.h and nccl.h.
#pragma once

#include <cstddef>
#include <string>

namespace lockstep {

/// Resolved path of a loaded shared object whose file name starts with
/// `prefix` ("libcudnn.so" matches libcudnn.so.9.8.0, not libcudnn_ops.so.9),
/// or "" when none is loaded.
std::string loaded_library_path(const std::string& prefix);

/// cudnnGetVersion() of the loaded libcudnn.so, as "9.8.0"; "" with `why`
/// set when no cuDNN is loaded or it lacks the symbol.
std::string loaded_cudnn_version(std::string* why = nullptr);

/// ncclGetVersion() of the loaded libnccl.so, as "2.27.3"; "" with `why`
/// set when no NCCL is loaded or the call fails.
std::string loaded_nccl_version(std::string* why = nullptr);

/// CUDNN_VERSION to "major.minor.patch": 1000*major + 100*minor + patch
/// before cuDNN 9 (8907 = 8.9.7), 10000*major + 100*minor + patch from 9
/// (90800 = 9.8.0).
std::string cudnn_version_string(std::size_t version);

/// NCCL_VERSION_CODE to "major.minor.patch": 1000*major + 100*minor + patch
/// before 2.9 (2708 = 2.7.8), 10000*major + 100*minor + patch from 2.9
/// (22703 = 2.27.3).
std::string nccl_version_string(int version);

}  // namespace lockstep
