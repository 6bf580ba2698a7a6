// Errors and exit codes shared by every lockstep subcommand.
//
// Each failure a user can act on is thrown as `lockstep::Error` carrying the
// exit code the process ends with (README.md, "Exit codes"):
//
//   throw BadInput(path, "data.batch_size", "a positive integer");
//   // -> exit 2, "error: smoke/digits.json: data.batch_size: expected a positive integer"
//
// main() catches `Error`, prints `what()` and returns `code()`.
#pragma once

#include <stdexcept>
#include <string>

namespace lockstep {

/// Process exit codes, identical for every subcommand (README.md, "Exit codes").
enum class ExitCode : int {
  kPass = 0,              ///< every comparison within tolerance
  kRegression = 1,        ///< the run differs from the golden
  kBadInput = 2,          ///< bad usage, config, golden, record or data file
  kEnvironment = 3,       ///< preflight failed: CUDA absent, knob invalid, ...
  kNondeterministic = 4,  ///< two runs of the same job differ
};

/// Returns the process exit status for `code`.
inline int to_int(ExitCode code) { return static_cast<int>(code); }

/// How severe `code` is when several smokes end differently: environment
/// (3) > bad input (2) > nondeterministic (4) > regression (1) > pass (0).
/// A broken runner or input hides what the runs would have shown, so it
/// outranks every verdict about the runs.
int exit_severity(ExitCode code);

/// The word reports print for `code`: "PASS", "FAIL" (a regression), "BAD INPUT",
/// "ENVIRONMENT", "NONDETERMINISTIC".
const char* exit_class_name(ExitCode code);

/// `text` with control characters (below 0x20, and DEL) written as \x and
/// two hex digits ("\x1b") and Unicode bidirectional controls (U+061C,
/// U+200E/F, U+202A..U+202E, U+2066..U+2069) as \u and four hex digits
/// ("\u202e"); newline and tab are kept when
/// `keep_line_breaks`. Messages and reports quote names and values from
/// files: a NUL would cut them short, an ANSI escape rewrite the terminal,
/// a byte that is not UTF-8 (a path's) break a JSON report,
/// a right-to-left override show a name reversed ("Trojan Source",
/// CVE-2021-42574). The one escape every printer uses.
std::string printable_message(const std::string& text, bool keep_line_breaks = true);

/// The length of the well-formed UTF-8 sequence at `text[i]` (1 for an
/// ASCII byte), or 0 when the bytes there are none (RFC 3629: no overlong
/// forms, no surrogates, nothing above U+10FFFF, not cut short).
size_t utf8_sequence_at(const std::string& text, size_t i);

/// `text` with every byte that is not part of well-formed UTF-8 written as
/// "\xNN" (a path from the file system may hold any bytes, a JSON string
/// only UTF-8); valid text is returned unchanged.
std::string valid_utf8(const std::string& text);

/// A value from the input as a message quotes it: printable_message()
/// without line breaks (a value never forges a line of a CI log), cut at
/// 64 bytes (never inside a UTF-8 sequence) with the length said, e.g.
/// "aaaa... (1048576 bytes)", so a megabyte-long key or string never
/// floods a log.
std::string input_excerpt(const std::string& value);

/// Whether `text` shows nothing: empty, or only whitespace (ASCII and
/// Unicode White_Space, e.g. U+00A0 NO-BREAK SPACE, U+3000), zero-width
/// characters (U+200B..U+200D, U+2060, U+FEFF) and bidirectional
/// controls. A required reason made of these says nothing.
bool is_blank_text(const std::string& text);

/// The length in bytes of the UTF-8 bidirectional control at `text[i]`
/// (see printable_message), or 0 when there is none; `escaped` gets its
/// escaped spelling ("\u202e"). For printers that escape the rest themselves (HTML,
/// JUnit XML, Markdown).
size_t bidi_control_at(const std::string& text, size_t i, std::string* escaped);

/// An error that ends the command with a specific exit code. Its message
/// is made printable (printable_message).
class Error : public std::runtime_error {
 public:
  Error(ExitCode code, const std::string& message)
      : std::runtime_error(printable_message(message)), code_(code) {}
  ExitCode code() const { return code_; }

 private:
  ExitCode code_;
};

/// Exit-2 error for a file whose `field` is not what was expected.
/// `field` is a JSON path such as "series.loss.values[3]" or "" for the whole
/// file. Message: "<file>: <field>: expected <expected>".
Error BadInput(const std::string& file, const std::string& field,
               const std::string& expected);

/// Exit-2 error with a free-form message (usage errors, missing files).
Error BadUsage(const std::string& message);

/// Exit-3 error: the environment cannot run what was asked.
Error EnvironmentError(const std::string& message);

/// An error of a file operation on `path` ("<path>: cannot <what>:
/// <strerror>"), classed by what failed: the machine (ENOSPC, EDQUOT,
/// EACCES, EPERM, EROFS, EIO, EMFILE, ENFILE, ENOMEM: disk full, no
/// permission on an output, a read-only file system) is exit 3; anything
/// else is a path the user gave wrongly (ENOTDIR, EISDIR, EEXIST, ENOENT,
/// ENAMETOOLONG, ...), exit 2. The rule of README.md, "Exit codes".
Error io_error(const std::string& path, const std::string& what, int errno_value);

}  // namespace lockstep
