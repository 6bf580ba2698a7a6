// A JSON number read with simdjson On-Demand, the same on every simdjson
// lockstep builds with. simdjson before 3.6.4 (Debian 12 ships 3.0.1)
// misreads a float written with about 20 significant digits or more:
// get_number() gives 0 for "1.234567890123456789" (simdjson issue #2099),
// get_double() 0.0019 for "0.500000000000000000000", and an exponent of
// 20 digits is refused. So the type is peeked, an integer read by the
// getter of its type, and a long float token read from its text with
// std::from_chars, correctly rounded as Python's float() reads it.
//
//   JsonNumber n;
//   if (read_number(value, n) != simdjson::SUCCESS) ...;  // malformed, or an integer beyond 64 bits
//   double d = n.as_double();
//
// Internal to the layers that parse with simdjson (src/core/, src/ingest/).
#pragma once

#include <simdjson.h>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <string_view>
#include <system_error>

namespace lockstep {

/// A number as simdjson read it: its kind and the value of that kind.
struct JsonNumber {
  enum class Kind { kFloat, kInt64, kUint64 };
  Kind kind = Kind::kFloat;
  double d = 0;    ///< kFloat
  int64_t i = 0;   ///< kInt64
  uint64_t u = 0;  ///< kUint64
  /// The value as a float64 (integers converted, rounding to nearest).
  double as_double() const {
    return kind == Kind::kFloat ? d : kind == Kind::kInt64 ? static_cast<double>(i) : static_cast<double>(u);
  }
};

/// Whether `token` is a JSON number as RFC 8259 section 6 writes it:
/// -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
inline bool json_number_token(std::string_view token) {
  size_t i = 0, n = token.size();
  auto digits = [&] {
    size_t from = i;
    while (i < n && token[i] >= '0' && token[i] <= '9') ++i;
    return i > from;
  };
  if (i < n && token[i] == '-') ++i;
  if (i < n && token[i] == '0') ++i;
  else if (!digits()) return false;
  if (i < n && token[i] == '.' && (++i, !digits())) return false;
  if (i < n && (token[i] == 'e' || token[i] == 'E')) {
    ++i;
    if (i < n && (token[i] == '+' || token[i] == '-')) ++i;
    if (!digits()) return false;
  }
  return i == n;
}

/// A float token read as Python's float() reads it (correctly rounded,
/// any count of digits, any exponent): a value below float64's smallest is
/// a signed zero; one beyond its largest (1e400) is NUMBER_ERROR.
inline simdjson::error_code read_float_token(std::string_view token, double& out) {
  if (!json_number_token(token)) return simdjson::NUMBER_ERROR;
  std::from_chars_result r = std::from_chars(token.data(), token.data() + token.size(), out);
  if (r.ec == std::errc() && r.ptr == token.data() + token.size()) return simdjson::SUCCESS;
  if (r.ec != std::errc::result_out_of_range) return simdjson::NUMBER_ERROR;
  // Out of range: beyond float64 when its decimal magnitude (digits before
  // the point, or minus the zeros after it, plus the exponent) is positive.
  size_t i = token[0] == '-' ? 1 : 0;
  int64_t magnitude = 0;
  while (i < token.size() && token[i] == '0') ++i;
  while (i < token.size() && token[i] >= '0' && token[i] <= '9') ++i, ++magnitude;
  if (magnitude == 0 && i < token.size() && token[i] == '.')
    for (++i; i < token.size() && token[i] == '0'; ++i) --magnitude;
  size_t e = token.find_first_of("eE");
  int64_t exponent = 0;
  if (e != std::string_view::npos) {
    bool negative = token[e + 1] == '-';
    for (size_t k = e + 1; k < token.size(); ++k)
      if (token[k] >= '0' && token[k] <= '9') exponent = std::min<int64_t>(exponent * 10 + (token[k] - '0'), 1000000000);
    if (negative) exponent = -exponent;
  }
  if (magnitude + exponent > 0) return simdjson::NUMBER_ERROR;
  out = token[0] == '-' ? -0.0 : 0.0;
  return simdjson::SUCCESS;
}

/// Reads number `v` into `out`. simdjson::SUCCESS, or an error for a value
/// that is no number, a malformed one, a float beyond float64's range
/// (1e400) or an integer beyond int64 and uint64 (-9223372036854775809,
/// 18446744073709551616: simdjson 3 says NUMBER_ERROR or INCORRECT_TYPE,
/// simdjson 4 types it as a big integer, which is refused here too). A
/// float token longer than 19 characters is read from its text
/// (read_float_token; simdjson 3.0 misreads "0.500000000000000000000" and
/// refuses "1e00000000000000000001") and left unconsumed: the array or
/// object iteration steps over it.
inline simdjson::error_code read_number(simdjson::ondemand::value& v, JsonNumber& out) {
  std::string_view token = v.raw_json_token();
  while (!token.empty() && (token.back() == ' ' || token.back() == '\t' || token.back() == '\n' || token.back() == '\r'))
    token.remove_suffix(1);
  simdjson::ondemand::number_type type;
  if (simdjson::error_code e = v.get_number_type().get(type); e != simdjson::SUCCESS) {
    if (token.find_first_of(".eE") == std::string_view::npos) return e;  // an integer beyond 64 bits
    out.kind = JsonNumber::Kind::kFloat;
    return read_float_token(token, out.d);
  }
  switch (type) {
    case simdjson::ondemand::number_type::floating_point_number:
      out.kind = JsonNumber::Kind::kFloat;
      if (token.size() > 19) return read_float_token(token, out.d);
      return v.get_double().get(out.d);
    case simdjson::ondemand::number_type::signed_integer:
      out.kind = JsonNumber::Kind::kInt64;
      return v.get_int64().get(out.i);
    case simdjson::ondemand::number_type::unsigned_integer:
      out.kind = JsonNumber::Kind::kUint64;
      return v.get_uint64().get(out.u);
    default: return simdjson::NUMBER_ERROR;  // simdjson 4's big integer
  }
}

}  // namespace lockstep
