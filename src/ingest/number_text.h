// Numbers as the text-file readers of src/ingest/ meet them: a decimal step
// ("12") and a float as Python's repr writes it ("2.3012", "1e-05", "nan",
// "inf"), without allocating (these run once per line of long logs).
//
//   int64_t step;  double v;
//   if (!decimal_step("12", step) || !float_repr("1e-05", v)) ...;   // false: not one
//
// Internal to src/ingest/.
#pragma once

#include <cstdint>
#include <string_view>

namespace lockstep {

/// A non-negative decimal integer of at most 18 digits (no sign, no
/// spaces), or false.
bool decimal_step(std::string_view text, int64_t& step);

/// A float64 as Python's repr (or json.dumps) writes it: digits with an
/// optional sign, point and exponent; or a non-finite value as Python's
/// float() reads it: an optional sign and inf, infinity or nan in any case
/// ("inf", "-Infinity", "INF", "-nan"); at most 64 characters. False for
/// anything else, and for a number beyond float64's range (1e400).
bool float_repr(std::string_view text, double& value);

}  // namespace lockstep
