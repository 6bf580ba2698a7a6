// A stand-in for the CUDA driver library (libcuda.so.1): one H200 by default.
// Signatures follow cuda.h (CUresult is an int enum, CUdevice an int).
#include <cstdlib>
#include <cstring>

extern "C" {

static int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoi(v) : fallback;
}

static int initialised = 0;

int cuInit(unsigned flags) {
  static_cast<void>(flags);
  int rc = env_int("FAKE_CUDA_INIT_RESULT", 0);
  initialised = rc == 0;
  return rc;
}

int cuDriverGetVersion(int* version) {  // works before cuInit, as the real one does
  *version = 13000;
  return 0;
}

int cuDeviceGetCount(int* count) {
  if (!initialised) return 3;  // CUDA_ERROR_NOT_INITIALIZED
  *count = env_int("FAKE_CUDA_DEVICE_COUNT", 1);
  return 0;
}

int cuDeviceGet(int* device, int ordinal) {
  if (ordinal >= env_int("FAKE_CUDA_DEVICE_COUNT", 1)) return 101;  // CUDA_ERROR_INVALID_DEVICE
  *device = ordinal;
  return 0;
}

int cuDeviceGetName(char* name, int len, int device) {
  static_cast<void>(device);
  std::strncpy(name, "NVIDIA H200", static_cast<std::size_t>(len));
  return 0;
}

int cuDeviceGetAttribute(int* value, int attribute, int device) {
  static_cast<void>(device);
  const char* cc = std::getenv("FAKE_CUDA_CC");
  int major = 9, minor = 0;
  if (cc && *cc) {
    major = std::atoi(cc);
    const char* dot = std::strchr(cc, '.');
    minor = dot ? std::atoi(dot + 1) : 0;
  }
  switch (attribute) {
    case 16: *value = 132; return 0;  // CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT
    case 75: *value = major; return 0;  // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
    case 76: *value = minor; return 0;  // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR
    default: return 1;  // CUDA_ERROR_INVALID_VALUE
  }
}

int cuDeviceTotalMem_v2(std::size_t* bytes, int device) {
  static_cast<void>(device);
  *bytes = std::size_t{143771} * 1024 * 1024;  // nvidia-smi's 143771 MiB
  return 0;
}

int cuDeviceGetUuid(unsigned char* uuid, int device) {  // CUuuid is 16 bytes
  static_cast<void>(device);
  static const unsigned char u[16] = {0x8f, 0x2a, 0x61, 0x0c, 0x4d, 0x3e, 0x1b, 0x77,
                                      0x90, 0x12, 0xa5, 0x5e, 0xc3, 0x08, 0xf1, 0x64};
  std::memcpy(uuid, u, 16);
  return 0;
}

}  // extern "C"
