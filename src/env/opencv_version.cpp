#include "env/opencv_version.h"

#include <opencv2/core/utility.hpp>

namespace lockstep {

std::string opencv_version() { return cv::getVersionString(); }

}  // namespace lockstep
