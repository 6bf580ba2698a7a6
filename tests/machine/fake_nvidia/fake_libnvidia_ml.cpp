// A stand-in for NVML (libnvidia-ml.so.1): the driver version only.
#include <cstdlib>
#include <cstring>

extern "C" {

int nvmlInit_v2() {
  const char* v = std::getenv("FAKE_NVML_INIT_RESULT");
  return v && *v ? std::atoi(v) : 0;
}

int nvmlSystemGetDriverVersion(char* version, unsigned length) {
  const char* v = std::getenv("FAKE_NVML_DRIVER");
  if (!v || !*v) v = "580.95.05";
  if (std::strlen(v) + 1 > length) return 7;  // NVML_ERROR_INSUFFICIENT_SIZE
  std::strcpy(version, v);
  return 0;
}

int nvmlShutdown() { return 0; }

}  // extern "C"
