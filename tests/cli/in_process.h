// Test helper for cli/'s commands called in this process (tests/cli/*_command_test.cpp):
// the command's stdout captured, also when it throws; a refusal's message.
//
//   std::string out;
//   int code = captured([&] { return check_command(options, fake_launcher); }, out);
//   EXPECT_EQ(refusal([&] { return bless_command(o, l); }), "bless needs --reason TEXT: ...");
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "core/error.h"

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

/// The message of the lockstep::Error that `command` refused with, which
/// must be exit 2 (bad input). A command that returns instead fails the
/// test, and the refusal is "". (`command` captures its stdout, if it must.)
inline std::string refusal(const std::function<int()>& command) {
  try {
    command();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kBadInput) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no refusal";
  return "";
}

}  // namespace lockstep::testing
