// Test helper for cli/'s commands called in this process (tests/cli/*_command_test.cpp):
// the command's stdout captured, also when it throws.
//
//   std::string out;
//   int code = captured([&] { return check_command(options, fake_launcher); }, out);
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <string>

namespace lockstep::testing {

/// Runs `command` with its stdout (fd 1) captured into `out`, and returns
/// its exit code; what it throws is thrown on, `out` set all the same.
inline int captured(const std::function<int()>& command, std::string& out) {
  ::testing::internal::CaptureStdout();
  try {
    const int code = command();
    out = ::testing::internal::GetCapturedStdout();
    return code;
  } catch (...) {
    out = ::testing::internal::GetCapturedStdout();
    throw;
  }
}

}  // namespace lockstep::testing
