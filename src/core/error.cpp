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

int exit_severity(ExitCode code) {
  switch (code) {
    case ExitCode::kPass: return 0;
    case ExitCode::kRegression: return 1;
    case ExitCode::kNondeterministic: return 2;
    case ExitCode::kBadInput: return 3;
    case ExitCode::kEnvironment: return 4;
  }
  return 4;
}

const char* exit_class_name(ExitCode code) {
  switch (code) {
    case ExitCode::kPass: return "PASS";
    case ExitCode::kRegression: return "REGRESSION";
    case ExitCode::kBadInput: return "BAD INPUT";
    case ExitCode::kEnvironment: return "ENVIRONMENT";
    case ExitCode::kNondeterministic: return "NONDETERMINISTIC";
  }
  return "ERROR";
}

}  // namespace lockstep
