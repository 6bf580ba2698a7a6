// A JSON number read with simdjson On-Demand, the same on every simdjson
// lockstep builds with. simdjson before 3.6.4 (Debian 12 ships 3.0.1)
// gives 0 from ondemand::value::get_number() for a float written with
// about 19 significant digits or more ("1.234567890123456789"; simdjson
// issue #2099); its get_double() reads it right. So the type is peeked
// and the value read by the getter of that type.
//
//   JsonNumber n;
//   if (read_number(value, n) != simdjson::SUCCESS) ...;  // malformed, or an integer beyond 64 bits
//   double d = n.as_double();
//
// Internal to the layers that parse with simdjson (src/core/, src/ingest/).
#pragma once

#include <simdjson.h>

#include <cstdint>

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

/// Reads number `v` into `out`. simdjson::SUCCESS, or an error for a value
/// that is no number, a malformed one, a float beyond float64's range
/// (1e400) or an integer beyond int64 and uint64 (-9223372036854775809,
/// 18446744073709551616: simdjson 3 says NUMBER_ERROR or INCORRECT_TYPE,
/// simdjson 4 types it as a big integer, which is refused here too).
inline simdjson::error_code read_number(simdjson::ondemand::value& v, JsonNumber& out) {
  simdjson::ondemand::number_type type;
  if (simdjson::error_code e = v.get_number_type().get(type); e != simdjson::SUCCESS) return e;
  switch (type) {
    case simdjson::ondemand::number_type::floating_point_number:
      out.kind = JsonNumber::Kind::kFloat;
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
