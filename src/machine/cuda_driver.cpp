#include "machine/cuda_driver.h"

#include <dlfcn.h>
#include <link.h>

#include <cstdio>
#include <cstdlib>

namespace lockstep {

namespace {

// dlinfo's view of a handle: the file the loader actually chose.
std::string path_of(void* handle) {
  link_map* map = nullptr;
  if (dlinfo(handle, RTLD_DI_LINKMAP, &map) != 0 || !map || !map->l_name || !*map->l_name) return "";
  char* real = realpath(map->l_name, nullptr);
  std::string out = real ? real : map->l_name;
  std::free(real);
  return out;
}

std::string uuid_string(const unsigned char (&u)[16]) {
  // nvidia-smi's form: GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx
  std::string out = "GPU-";
  char hex[3];
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out += '-';
    std::snprintf(hex, sizeof hex, "%02x", u[i]);
    out += hex;
  }
  return out;
}

}  // namespace

std::string dlopen_failure(const std::string& library) {
  const char* e = dlerror();
  std::string detail = e ? e : "";
  if (detail.empty() || detail.find("No such file or directory") != std::string::npos)
    return library + " not found (no NVIDIA driver)";
  return library + " could not be loaded: " + detail;
}

std::string cu_result_name(int code) {
  const char* name = nullptr;
  switch (code) {
    case 0: name = "CUDA_SUCCESS"; break;
    case 1: name = "CUDA_ERROR_INVALID_VALUE"; break;
    case 2: name = "CUDA_ERROR_OUT_OF_MEMORY"; break;
    case 3: name = "CUDA_ERROR_NOT_INITIALIZED"; break;
    case 4: name = "CUDA_ERROR_DEINITIALIZED"; break;
    case 34: name = "CUDA_ERROR_STUB_LIBRARY"; break;
    case 35: name = "CUDA_ERROR_INSUFFICIENT_DRIVER"; break;
    case 36: name = "CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER"; break;
    case 46: name = "CUDA_ERROR_DEVICE_UNAVAILABLE"; break;
    case 100: name = "CUDA_ERROR_NO_DEVICE"; break;
    case 101: name = "CUDA_ERROR_INVALID_DEVICE"; break;
    case 102: name = "CUDA_ERROR_DEVICE_NOT_LICENSED"; break;
    case 304: name = "CUDA_ERROR_OPERATING_SYSTEM"; break;
    case 802: name = "CUDA_ERROR_SYSTEM_NOT_READY"; break;
    case 803: name = "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH"; break;
    case 804: name = "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE"; break;
    case 999: name = "CUDA_ERROR_UNKNOWN"; break;
  }
  return name ? std::string(name) + " (" + std::to_string(code) + ")" : "CUresult " + std::to_string(code);
}

std::string cuda_version_string(int version) {
  return std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
}

CudaDriverInfo query_cuda_driver(const std::string& library) {
  CudaDriverInfo info;
  // Never dlclose: LibTorch's CUDA runtime shares this library.
  void* lib = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    info.error = dlopen_failure(library);
    return info;
  }
  info.library = path_of(lib);
  using InitFn = int (*)(unsigned);
  using IntFn = int (*)(int*);
  using GetFn = int (*)(int*, int);
  using NameFn = int (*)(char*, int, int);
  using AttrFn = int (*)(int*, int, int);
  using MemFn = int (*)(size_t*, int);
  using UuidFn = int (*)(unsigned char*, int);
  auto init = reinterpret_cast<InitFn>(dlsym(lib, "cuInit"));
  auto version = reinterpret_cast<IntFn>(dlsym(lib, "cuDriverGetVersion"));
  auto count = reinterpret_cast<IntFn>(dlsym(lib, "cuDeviceGetCount"));
  auto get = reinterpret_cast<GetFn>(dlsym(lib, "cuDeviceGet"));
  auto name = reinterpret_cast<NameFn>(dlsym(lib, "cuDeviceGetName"));
  auto attr = reinterpret_cast<AttrFn>(dlsym(lib, "cuDeviceGetAttribute"));
  auto mem = reinterpret_cast<MemFn>(dlsym(lib, "cuDeviceTotalMem_v2"));
  auto uuid = reinterpret_cast<UuidFn>(dlsym(lib, "cuDeviceGetUuid"));
  if (!init || !version || !count || !get || !name || !attr) {
    info.error = library + " lacks the driver API symbols (cuInit, cuDeviceGet, ...)";
    return info;
  }
  version(&info.driver_api_version);  // valid before cuInit
  if (int rc = init(0); rc != 0) {
    info.error = "cuInit failed: " + cu_result_name(rc);
    if (rc == 34)
      info.error += "; " + info.library +
                    " is the CUDA toolkit's stub, not the driver's library (a container started "
                    "without the NVIDIA container runtime, or a stubs/ folder on LD_LIBRARY_PATH)";
    return info;
  }
  if (int rc = count(&info.device_count); rc != 0) {
    info.error = "cuDeviceGetCount failed: " + cu_result_name(rc);
    return info;
  }
  if (info.device_count == 0) {
    info.error = "the driver sees no CUDA device";
    return info;
  }
  int dev = 0;
  if (int rc = get(&dev, 0); rc != 0) {
    info.error = "cuDeviceGet(0) failed: " + cu_result_name(rc);
    return info;
  }
  char buf[256] = {0};
  name(buf, sizeof buf - 1, dev);
  info.name = buf;
  int major = 0, minor = 0;
  attr(&major, 75, dev);          // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
  attr(&minor, 76, dev);          // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR
  attr(&info.sm_count, 16, dev);  // CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT
  info.compute_capability = std::to_string(major) + "." + std::to_string(minor);
  size_t bytes = 0;
  if (mem && mem(&bytes, dev) == 0) info.memory_bytes = bytes;
  unsigned char u[16] = {0};
  if (uuid && uuid(u, dev) == 0) info.uuid = uuid_string(u);
  return info;
}

}  // namespace lockstep
