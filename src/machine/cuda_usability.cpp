#include "machine/cuda_usability.h"

#include <algorithm>
#include <cctype>

#include "machine/driver_version.h"

namespace lockstep {

namespace {

std::string visible_devices_note(const CudaUsabilityFacts& f) {
  return f.visible_devices_set ? " (CUDA_VISIBLE_DEVICES=\"" + f.visible_devices + "\")" : "";
}

std::string driver_summary(const CudaDriverInfo& d) {
  if (!d.error.empty()) return "no NVIDIA driver is usable either: " + d.error;
  return "the driver itself sees " + std::to_string(d.device_count) + " device" +
         (d.device_count == 1 ? "" : "s") + ", device 0 is " + d.name + " (compute capability " +
         d.compute_capability + ")";
}

}  // namespace

bool build_setting_is_on(const std::string& value) {
  std::string v = value;
  std::transform(v.begin(), v.end(), v.begin(), [](unsigned char c) { return std::toupper(c); });
  return v == "ON" || v == "1" || v == "TRUE" || v == "YES";
}

std::string explain_cuda_unusable(const CudaUsabilityFacts& f) {
  if (!f.torch_built_with_cuda)
    return "this lockstep is linked against a CPU-only LibTorch " + f.torch_version +
           " (USE_CUDA is off in at::show_config()); build it against a CUDA LibTorch "
           "(docs/platforms.md); " + driver_summary(f.driver);
  if (!f.torch_cuda_loaded)
    return "LibTorch " + f.torch_version +
           " was built with CUDA but libtorch_cuda.so is not loaded in this process (the linker "
           "dropped it: link with -Wl,--no-as-needed, as TorchConfig.cmake is meant to)";
  if (!f.driver.error.empty()) return "the NVIDIA driver is not usable: " + f.driver.error + visible_devices_note(f);
  if (f.torch_device_count > 0) return "";
  if (!f.torch_cuda_runtime.empty() && f.driver.driver_api_version > 0 &&
      !version_at_least(cuda_version_string(f.driver.driver_api_version), f.torch_cuda_runtime))
    return "the NVIDIA driver supports CUDA " + cuda_version_string(f.driver.driver_api_version) +
           " but LibTorch's CUDA runtime is " + f.torch_cuda_runtime + ": install a newer driver";
  return "LibTorch's CUDA runtime sees no device although the driver sees " +
         std::to_string(f.driver.device_count) + visible_devices_note(f);
}

}  // namespace lockstep
