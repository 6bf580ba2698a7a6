// The OpenCV this process runs: the image source decodes and resizes with
// it, so a new OpenCV may change pixels (fingerprint field libs.opencv).
//
//   std::string v = opencv_version();   // "4.6.0"
#pragma once

#include <string>

namespace lockstep {

/// The loaded OpenCV's version (cv::getVersionString()), e.g. "4.6.0".
std::string opencv_version();

}  // namespace lockstep
