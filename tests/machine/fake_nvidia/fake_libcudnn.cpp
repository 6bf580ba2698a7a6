// A stand-in for cuDNN 9 (libcudnn.so.9): cudnnGetVersion() of 9.8.0.
#include <cstddef>

extern "C" {

std::size_t cudnnGetVersion() { return 90800; }  // CUDNN_VERSION: major*10000 + minor*100 + patch

}  // extern "C"
