#include "core/error.h"

namespace lockstep {

Error BadInput(const std::string& file, const std::string& field,
               const std::string& expected) {
  std::string msg = file;
  if (!field.empty()) msg += ": " + field;
  msg += ": expected " + expected;
  return Error(ExitCode::kBadInput, msg);
}

Error BadUsage(const std::string& message) {
  return Error(ExitCode::kBadInput, message);
}

Error EnvironmentError(const std::string& message) {
  return Error(ExitCode::kEnvironment, message);
}

}  // namespace lockstep
