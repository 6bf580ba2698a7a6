// The error a child lockstep process printed, read back from its log: the
// last "lockstep: error: ..." line and the quoted lines ("  | ...") that
// follow it (a trainer's stderr tail, a rank's reason). The launcher of
// `check`/`bless` children (launch/launcher.h) and the coordinator of rank
// processes (distributed/rank_launch.h) both report it.
//
//   ChildErrorReader err;
//   while (std::getline(log, line)) err.feed(line);
//   throw Error(code, err.reason().empty() ? "(no error message)" : err.reason());
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

 private:
  std::string reason_;
  bool in_error_ = false;
};

}  // namespace lockstep
