#include "env/cuda_preflight.h"

#include <ATen/Version.h>

#include <cstdlib>

#include "machine/cuda_driver.h"
#include "machine/cuda_libraries.h"
#include "machine/torch_config_text.h"
#include "torch_compat.h"

namespace lockstep {

CudaUsabilityFacts gather_cuda_facts() {
  CudaUsabilityFacts f;
  f.torch_version = TORCH_VERSION;
  TorchConfigText config = parse_torch_config(at::show_config());
  auto use_cuda = config.build_settings.find("USE_CUDA");
  f.torch_built_with_cuda = use_cuda != config.build_settings.end() && build_setting_is_on(use_cuda->second);
  // 1.10-1.12 split it into libtorch_cuda_cpp/_cu; the prefix covers both.
  f.torch_cuda_loaded = !loaded_library_path("libtorch_cuda").empty();
  f.torch_device_count = compat::cuda_device_count();
  f.torch_cuda_runtime = config.cuda_runtime;
  f.driver = query_cuda_driver();
  if (const char* v = std::getenv("CUDA_VISIBLE_DEVICES")) {
    f.visible_devices_set = true;
    f.visible_devices = v;
  }
  return f;
}

std::string cuda_unusable_reason() { return explain_cuda_unusable(gather_cuda_facts()); }

}  // namespace lockstep
