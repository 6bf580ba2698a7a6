#include "core/error.h"

#include <cerrno>
#include <cstring>

namespace lockstep {

std::string printable_message(const std::string& text, bool keep_line_breaks) {
  std::string out;
  out.reserve(text.size());
  for (unsigned char c : text) {
    if ((c < 0x20 && !(keep_line_breaks && (c == '\n' || c == '\t'))) || c == 0x7f) {
      static const char* hex = "0123456789abcdef";
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

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

Error io_error(const std::string& path, const std::string& what, int errno_value) {
  std::string message = path + ": cannot " + what + ": " + std::strerror(errno_value);
  switch (errno_value) {
    case ENOSPC: case EDQUOT: case EACCES: case EPERM: case EROFS: case EIO: case EMFILE: case ENFILE:
    case ENOMEM:
      return Error(ExitCode::kEnvironment, message);
    default:
      return Error(ExitCode::kBadInput, message);
  }
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
