// NVIDIA driver version checks for the `min_driver` preflight.
//
//   std::string v = nvidia_driver_version();       // "550.54.15", or "" without NVML
//   bool ok = version_at_least("550.54.15", "535"); // true
//
// The driver version comes from NVML (libnvidia-ml.so.1, loaded with
// dlopen at run time, so CPU-only builds need nothing).
#pragma once

#include <string>

namespace lockstep {

/// The installed NVIDIA driver version via nvmlSystemGetDriverVersion, or
/// "" when NVML cannot be loaded or answers with an error (`why` says which).
/// `library` is a soname searched the usual way, or a path (tests).
std::string nvidia_driver_version(std::string* why = nullptr,
                                  const std::string& library = "libnvidia-ml.so.1");

/// True when dotted numeric version `have` >= `need` ("550.54.15" >= "535.0").
/// Missing components count as 0. Returns false for a malformed `have`.
bool version_at_least(const std::string& have, const std::string& need);

}  // namespace lockstep
