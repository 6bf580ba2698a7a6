// The error a child lockstep process printed, read back from its log: the
// last "lockstep: error: ..." line and the quoted lines ("  | ...") that
// follow it (a trainer's stderr tail, a rank's reason). The launcher of
// `check`/`bless` children (launch/launcher.h) and the coordinator of rank
// processes (distributed/rank_launch.h) both report it.
//
//   ChildErrorReader err;
//   while (std::getline(log, line)) err.feed(line);
//   throw Error(code, err.reason_or_last_line());
#pragma once

#include <string>

namespace lockstep {

/// Collects the last error block of a child's output, line by line.
class ChildErrorReader {
 public:
  /// Reads one line (without its newline); true when it belongs to an
  /// error block (said again by whoever reports reason(): not worth
  /// echoing).
  bool feed(const std::string& line) {
    if (line.find_first_not_of(" \t\r") != std::string::npos) last_line_ = line;
    if (line.rfind("lockstep: error: ", 0) == 0) {
      reason_ = line.substr(17);
      in_error_ = true;
    } else if (in_error_ && line.rfind("  | ", 0) == 0) {
      reason_ += "\n" + line;
    } else {
      in_error_ = false;
    }
    return in_error_;
  }
  /// The message without its "lockstep: error: " prefix, quoted lines
  /// joined with newlines; "" when no error line was seen.
  const std::string& reason() const { return reason_; }
  /// reason(); without an error line, the child's last non-blank line (a
  /// child that never reached lockstep's code: the dynamic loader's
  /// "symbol lookup error", a Python traceback's last line), said as such;
  /// "(no error message)" when it wrote nothing.
  std::string reason_or_last_line() const {
    if (!reason_.empty()) return reason_;
    if (last_line_.empty()) return "(no error message)";
    return "(no lockstep error line; its output ends: " + last_line_ + ")";
  }

 private:
  std::string reason_;
  std::string last_line_;
  bool in_error_ = false;
};

}  // namespace lockstep
