#include "ingest/number_text.h"

#include <charconv>
#include <cmath>
#include <limits>
#include <system_error>

namespace lockstep {

bool decimal_step(std::string_view text, int64_t& step) {
  if (text.empty() || text.size() > 18) return false;
  int64_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  step = v;
  return true;
}

bool float_repr(std::string_view text, double& value) {
  if (text.empty() || text.size() > 64) return false;
  // Non-finite values as Python's float() reads them: a sign, then inf,
  // infinity or nan in any case ("INF" from printf's %G, "-nan" from glibc).
  {
    std::string_view word = text;
    bool negative = false;
    if (word[0] == '+' || word[0] == '-') negative = word[0] == '-', word.remove_prefix(1);
    auto is = [word](std::string_view lower) {
      if (word.size() != lower.size()) return false;
      for (size_t i = 0; i < word.size(); ++i)
        if ((word[i] | 0x20) != lower[i]) return false;
      return true;
    };
    if (is("nan")) return value = std::numeric_limits<double>::quiet_NaN(), true;
    if (is("inf") || is("infinity"))
      return value = negative ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity(), true;
  }
  for (char ch : text)  // not find_first_not_of: that runs a memchr over the set per byte
    if (!((ch >= '0' && ch <= '9') || ch == '+' || ch == '-' || ch == '.' || ch == 'e' || ch == 'E')) return false;
  // from_chars takes no leading '+' (strtod did; Python never writes one).
  std::string_view body = text[0] == '+' ? text.substr(1) : text;
  if (body.empty() || body[0] == '+' || (body[0] == '-' && text[0] == '+')) return false;
  auto [end, ec] = std::from_chars(body.data(), body.data() + body.size(), value, std::chars_format::general);
  return ec == std::errc() && end == body.data() + body.size();
}

}  // namespace lockstep
