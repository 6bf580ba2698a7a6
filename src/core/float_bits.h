// Exact float formatting and ULP arithmetic.
//
// Goldens must round-trip: every double is written in its shortest
// round-trip decimal form (std::to_chars, C++17 [utility.to.chars]) so that
// reading it back gives the same bits, and every float32 value also carries
// its IEEE-754 binary32 bit pattern as "0x3f800000".
//
// ULP distance counts representable values between two numbers on the
// ordered integer line of IEEE-754 (so -0.0 and +0.0 are 0 apart, the
// smallest positive and negative subnormals 2 apart). NaN is infinitely far.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace lockstep {

/// Shortest decimal string that reads back to exactly `value` ("0.1",
/// "1e-300"); "nan", "inf", "-inf" for non-finite values.
std::string format_double(double value);

/// "0x" + 8 lowercase hex digits of the binary32 pattern of `value`.
std::string float_bits_hex(float value);

/// Parses "0x" + 1..8 hex digits into a float bit pattern; nullopt if malformed.
std::optional<float> parse_float_bits(const std::string& text);

/// Number of representable float64 values between a and b;
/// UINT64_MAX when either is NaN.
uint64_t ulp_distance(double a, double b);

/// Number of representable float32 values between a and b;
/// UINT64_MAX when either is NaN.
uint64_t ulp_distance_f32(float a, float b);

/// True when a and b have identical bit patterns (distinguishes -0.0, NaNs).
bool same_bits(double a, double b);

}  // namespace lockstep
