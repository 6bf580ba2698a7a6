#include "core/error.h"

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace lockstep {

size_t bidi_control_at(const std::string& text, size_t i, std::string* escaped) {
  auto byte = [&](size_t k) { return i + k < text.size() ? static_cast<unsigned char>(text[i + k]) : 0u; };
  unsigned cp = 0;
  size_t n = 0;
  if (byte(0) == 0xd8 && byte(1) == 0x9c) {
    cp = 0x061c, n = 2;
  } else if (byte(0) == 0xe2 && (byte(1) == 0x80 || byte(1) == 0x81) && byte(2) >= 0x80 && byte(2) <= 0xbf) {
    cp = 0x2000u | ((byte(1) & 0x3fu) << 6) | (byte(2) & 0x3fu);
    if (cp == 0x200e || cp == 0x200f || (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069)) n = 3;
  }
  if (n > 0 && escaped) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "\\u%04x", cp);
    *escaped = buf;
  }
  return n;
}

bool is_blank_text(const std::string& text) {
  for (size_t i = 0; i < text.size();) {
    auto byte = [&](size_t k) { return i + k < text.size() ? static_cast<unsigned char>(text[i + k]) : 0u; };
    const unsigned b0 = byte(0);
    if (b0 < 0x80) {
      if (!std::strchr(" \t\r\n\v\f", static_cast<int>(b0)) || b0 == 0) return false;
      ++i;
      continue;
    }
    if (size_t n = bidi_control_at(text, i, nullptr)) {
      i += n;
      continue;
    }
    unsigned cp = 0;
    size_t n = 0;
    if ((b0 & 0xe0) == 0xc0 && (byte(1) & 0xc0) == 0x80) {
      cp = ((b0 & 0x1f) << 6) | (byte(1) & 0x3f), n = 2;
    } else if ((b0 & 0xf0) == 0xe0 && (byte(1) & 0xc0) == 0x80 && (byte(2) & 0xc0) == 0x80) {
      cp = ((b0 & 0x0f) << 12) | ((byte(1) & 0x3f) << 6) | (byte(2) & 0x3f), n = 3;
    } else {
      return false;
    }
    // Unicode White_Space, and the zero-width characters that show nothing.
    const bool blank = cp == 0x85 || cp == 0xa0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200d) ||
                       cp == 0x2028 || cp == 0x2029 || cp == 0x202f || cp == 0x205f || cp == 0x2060 ||
                       cp == 0x3000 || cp == 0xfeff;
    if (!blank) return false;
    i += n;
  }
  return true;
}

std::string input_excerpt(const std::string& v) {
  constexpr size_t kMax = 64;
  if (v.size() <= kMax) return printable_message(v, false);
  size_t cut = kMax;  // never inside a UTF-8 sequence (a report must stay valid UTF-8)
  while (cut > 0 && (static_cast<unsigned char>(v[cut]) & 0xc0) == 0x80) --cut;
  return printable_message(v.substr(0, cut), false) + "... (" + std::to_string(v.size()) + " bytes)";
}

size_t utf8_sequence_at(const std::string& text, size_t i) {
  auto byte = [&](size_t k) { return k < text.size() ? static_cast<unsigned char>(text[k]) : 0u; };
  unsigned c = byte(i);
  if (i >= text.size()) return 0;
  if (c < 0x80) return 1;
  size_t n;
  unsigned lo = 0x80, hi = 0xbf;  // the range of the second byte
  if (c >= 0xc2 && c <= 0xdf) n = 2;
  else if (c >= 0xe0 && c <= 0xef) {
    n = 3;
    if (c == 0xe0) lo = 0xa0;  // no overlong form
    if (c == 0xed) hi = 0x9f;  // no surrogate
  } else if (c >= 0xf0 && c <= 0xf4) {
    n = 4;
    if (c == 0xf0) lo = 0x90;
    if (c == 0xf4) hi = 0x8f;  // at most U+10FFFF
  } else {
    return 0;
  }
  if (i + n > text.size() || byte(i + 1) < lo || byte(i + 1) > hi) return 0;
  for (size_t k = 2; k < n; ++k)
    if (byte(i + k) < 0x80 || byte(i + k) > 0xbf) return 0;
  return n;
}

namespace {

void append_hex_escape(std::string& out, unsigned char c) {
  static const char* hex = "0123456789abcdef";
  out += "\\x";
  out += hex[c >> 4];
  out += hex[c & 15];
}

}  // namespace

std::string valid_utf8(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    size_t n = utf8_sequence_at(text, i);
    if (n == 0) {
      append_hex_escape(out, static_cast<unsigned char>(text[i]));
      ++i;
    } else {
      out.append(text, i, n);
      i += n;
    }
  }
  return out;
}

std::string printable_message(const std::string& text, bool keep_line_breaks) {
  std::string out;
  out.reserve(text.size());
  std::string bidi;
  for (size_t i = 0; i < text.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    if (size_t n = bidi_control_at(text, i, &bidi)) {
      out += bidi;
      i += n - 1;
    } else if ((c < 0x20 && !(keep_line_breaks && (c == '\n' || c == '\t'))) || c == 0x7f) {
      append_hex_escape(out, c);
    } else if (c >= 0x80) {
      size_t n = utf8_sequence_at(text, i);
      // C1 controls (U+0085 NEL, U+009B, a terminal's CSI) and U+2028 /
      // U+2029 break or steer a line as the C0 ones do: shown as a \u escape (\u0085, \u2028).
      unsigned cp = n == 2 ? ((c & 0x1fu) << 6) | (static_cast<unsigned char>(text[i + 1]) & 0x3fu)
                  : n == 3 ? ((c & 0x0fu) << 12) | ((static_cast<unsigned char>(text[i + 1]) & 0x3fu) << 6) |
                                 (static_cast<unsigned char>(text[i + 2]) & 0x3fu)
                           : 0;
      if (n == 0) {
        append_hex_escape(out, c);  // not UTF-8 (a path's byte 0xff)
      } else if ((cp >= 0x80 && cp <= 0x9f) || cp == 0x2028 || cp == 0x2029) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\u%04x", cp);
        out += buf;
        i += n - 1;
      } else {
        out.append(text, i, n);
        i += n - 1;
      }
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

Error BadInput(const std::string& file, const std::string& field,
               const std::string& expected) {
  std::string msg = file;
  if (!field.empty()) msg += ": " + printable_message(field, false);  // a path: one line, whatever its keys hold
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
    case ExitCode::kRegression: return "FAIL";
    case ExitCode::kBadInput: return "BAD INPUT";
    case ExitCode::kEnvironment: return "ENVIRONMENT";
    case ExitCode::kNondeterministic: return "NONDETERMINISTIC";
  }
  return "ERROR";
}

}  // namespace lockstep
