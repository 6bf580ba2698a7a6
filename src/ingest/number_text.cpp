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
  if (text == "nan" || text == "NaN") return value = std::numeric_limits<double>::quiet_NaN(), true;
  if (text == "inf" || text == "Infinity") return value = std::numeric_limits<double>::infinity(), true;
  if (text == "-inf" || text == "-Infinity") return value = -std::numeric_limits<double>::infinity(), true;
  for (char ch : text)  // not find_first_not_of: that runs a memchr over the set per byte
    if (!((ch >= '0' && ch <= '9') || ch == '+' || ch == '-' || ch == '.' || ch == 'e' || ch == 'E')) return false;
  // from_chars takes no leading '+' (strtod did; Python never writes one).
  std::string_view body = text[0] == '+' ? text.substr(1) : text;
  if (body.empty() || body[0] == '+' || (body[0] == '-' && text[0] == '+')) return false;
  auto [end, ec] = std::from_chars(body.data(), body.data() + body.size(), value, std::chars_format::general);
  return ec == std::errc() && end == body.data() + body.size();
}

}  // namespace lockstep
