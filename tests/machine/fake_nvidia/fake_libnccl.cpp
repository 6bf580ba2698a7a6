// A stand-in for NCCL (libnccl.so.2): ncclGetVersion() of 2.27.3.

extern "C" {

int ncclGetVersion(int* version) {
  *version = 22703;  // NCCL_VERSION_CODE: major*10000 + minor*100 + patch from 2.9
  return 0;          // ncclSuccess
}

}  // extern "C"
