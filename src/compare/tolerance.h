// One tolerance rule and the check of one value against it.
//
//   Tolerance t = Tolerance::close(/*atol=*/1e-6, /*rtol=*/1e-4);
//   ValueCheck c = check_value(/*actual=*/run, /*golden=*/ref, t, /*float32=*/true);
//
// Rules (docs/comparison.md):
//   exact   bit-identical (same IEEE-754 pattern after rounding to the dtype)
//   close   |actual - golden| <= atol + rtol * |golden|; golden is the
//           reference, as in torch.testing.assert_close, so the rule is not
//           symmetric on purpose (unlike numpy.isclose's documented quirk, it
//           always scales by the golden)
//   ulp     ULP distance <= max_ulp, in the value's dtype (float32 or float64)
//   sigma   |actual - mean| <= k * std (multi-seed goldens; std per step)
//
// Non-finite values: a NaN or +-Inf in the run where the golden is finite
// fails as "non-finite" under every rule; a non-finite golden (only when
// the smoke allows it) passes only against the identical non-finite value.
#pragma once

#include <cstdint>
#include <string>

namespace lockstep {

/// How a value is held to its golden.
struct Tolerance {
  enum class Rule { kExact, kClose, kUlp, kSigma };
  Rule rule = Rule::kExact;
  double atol = 0;       ///< absolute, in the metric's unit (kClose)
  double rtol = 0;       ///< relative to |golden| (kClose)
  uint64_t max_ulp = 0;  ///< kUlp
  double k = 0;          ///< kSigma: multiples of the golden's per-step std

  static Tolerance exact() { return {}; }
  static Tolerance close(double atol, double rtol) { return {Rule::kClose, atol, rtol, 0, 0}; }
  static Tolerance ulp(uint64_t n) { return {Rule::kUlp, 0, 0, n, 0}; }
  static Tolerance sigma(double k) { return {Rule::kSigma, 0, 0, 0, k}; }

  /// The rule with its numbers: "exact", "|a-g| <= 1e-06 + 0.0001*|g|",
  /// "ulp <= 4", "|a-mean| <= 3*std".
  std::string describe() const;
};

/// The outcome of comparing one value.
struct ValueCheck {
  bool pass = false;
  bool non_finite = false;  ///< the run is NaN/Inf where the golden is finite
  double abs_err = 0;       ///< |actual - golden| (inf when non-finite)
  /// |actual - golden| / |golden|; NaN means "n/a" (golden is 0, or either
  /// value non-finite). Reports print "n/a", never inf or nan.
  double rel_err = 0;
  uint64_t ulps = 0;        ///< ULP distance in the value's dtype
  double allowed = 0;       ///< the bound applied to abs_err (kClose/kSigma)
};

/// The share of `tol` that check `c` used (SeriesResult::max_use): abs_err
/// / allowed (atol/rtol, sigma), ulps / max_ulp (ULP); exact: 0 when it
/// passed, else +inf; +inf for a non-finite value or an error where
/// nothing was allowed.
double tolerance_use(const ValueCheck& c, const Tolerance& tol);

/// Compares `actual` with `golden` under `tol`. `float32` selects the dtype
/// for exact and ULP rules. `golden_std` is the per-step std (kSigma only).
ValueCheck check_value(double actual, double golden, const Tolerance& tol, bool float32,
                       double golden_std = 0);

/// "n/a" for NaN, otherwise a short %.3g rendering.
std::string format_error(double value);

}  // namespace lockstep
