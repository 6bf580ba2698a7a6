#include "compare/tolerance.h"

#include <cmath>
#include <cstdio>
#include <limits>

#include "core/float_bits.h"

namespace lockstep {

namespace {
std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}
}  // namespace

std::string Tolerance::describe() const {
  switch (rule) {
    case Rule::kExact:
      return "exact";
    case Rule::kClose:
      return "|a-g| <= " + num(atol) + " + " + num(rtol) + "*|g|";
    case Rule::kUlp:
      return "ulp <= " + std::to_string(max_ulp);
    case Rule::kSigma:
      return "|a-mean| <= " + num(k) + "*std";
  }
  return "?";
}

std::string format_error(double value) {
  if (std::isnan(value)) return "n/a";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", value);
  return buf;
}

double tolerance_use(const ValueCheck& c, const Tolerance& tol) {
  const double kInf = std::numeric_limits<double>::infinity();
  if (c.non_finite || !std::isfinite(c.abs_err)) return c.pass ? 0 : kInf;
  switch (tol.rule) {
    case Tolerance::Rule::kExact: return c.pass ? 0 : kInf;
    case Tolerance::Rule::kUlp:
      return tol.max_ulp == 0 ? (c.ulps == 0 ? 0 : kInf) : static_cast<double>(c.ulps) / static_cast<double>(tol.max_ulp);
    case Tolerance::Rule::kClose:
    case Tolerance::Rule::kSigma: return c.allowed > 0 ? c.abs_err / c.allowed : (c.abs_err == 0 ? 0 : kInf);
  }
  return kInf;
}

ValueCheck check_value(double actual, double golden, const Tolerance& tol, bool float32,
                       double golden_std) {
  const double kNaN = std::numeric_limits<double>::quiet_NaN();
  ValueCheck c;
  c.ulps = float32 ? ulp_distance_f32(static_cast<float>(actual), static_cast<float>(golden))
                   : ulp_distance(actual, golden);

  if (!std::isfinite(golden)) {
    // Only reachable when the smoke allows non-finite goldens.
    bool same = (std::isnan(golden) && std::isnan(actual)) || actual == golden;
    c.pass = same;
    c.non_finite = !std::isfinite(actual);
    c.abs_err = same ? 0 : std::numeric_limits<double>::infinity();
    c.rel_err = kNaN;
    return c;
  }
  if (!std::isfinite(actual)) {
    c.non_finite = true;
    c.abs_err = std::numeric_limits<double>::infinity();
    c.rel_err = kNaN;
    return c;
  }

  c.abs_err = std::fabs(actual - golden);
  c.rel_err = golden == 0 ? kNaN : c.abs_err / std::fabs(golden);
  switch (tol.rule) {
    case Tolerance::Rule::kExact:
      c.pass = float32 ? float_bits_hex(static_cast<float>(actual)) ==
                             float_bits_hex(static_cast<float>(golden))
                       : same_bits(actual, golden);
      break;
    case Tolerance::Rule::kClose:
      c.allowed = tol.atol + tol.rtol * std::fabs(golden);
      c.pass = c.abs_err <= c.allowed;
      break;
    case Tolerance::Rule::kUlp:
      c.pass = c.ulps <= tol.max_ulp;
      break;
    case Tolerance::Rule::kSigma:
      c.allowed = tol.k * golden_std;
      c.pass = c.abs_err <= c.allowed;
      break;
  }
  return c;
}

}  // namespace lockstep
