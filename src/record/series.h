// A per-step metric series of a run record: loss, gradient norms, learning
// rate. One value per optimiser step, step 0 first.
//
// float32 series (the loss) are stored as doubles holding the exact float32
// value and, in JSON, also as the binary32 bit pattern, so a golden is
// compared against the bits the trainer produced, not a decimal rendering.
//
// A multi-seed golden (`bless --seeds`) keeps the config seed's run in
// `values`, so the same-stack lane stays bit-exact, and adds, per step, the
// mean over all blessed seeds in `mean` and their population standard
// deviation in `std`; the sigma rule holds a run to |run - mean| <= k*std.
// `mean` and `std` come together or not at all.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace lockstep {

class JsonView;
class SeriesBlob;
class SeriesPacker;
class TakenArrays;

/// One metric over the steps of a run.
struct Series {
  enum class Dtype { kFloat32, kFloat64 };
  Dtype dtype = Dtype::kFloat64;
  std::vector<double> values;  ///< length = steps; float32 values exactly
  std::vector<double> mean;    ///< per-step mean over seeds; empty unless multi-seed
  std::vector<double> std;     ///< per-step population std over seeds; empty unless multi-seed
  /// The step number of each value, increasing, when the metric was not
  /// logged at every step 0..n-1 (a trainer logging every k steps, or from
  /// step 1): same length as `values`. Empty means values[i] is step i.
  /// Steps are matched by number, never by position.
  std::vector<int64_t> steps;
  /// > 0: every value sits on a decimal grid of this step (1e-4, 1e-5):
  /// the source rounded them (lockstep import marks it: decimal_grid());
  /// an exact rule, or a tolerance below half the step, is refused on it.
  double rounded = 0;
  /// Steps the source marked "not logged" (Megatron-LM's "nan"), left out
  /// of `values`: the first 8, and how many in all. Said by `lockstep
  /// import`; never written into a record.
  std::vector<int64_t> not_logged;
  uint64_t not_logged_count = 0;

  /// The reference of the sigma rule: `mean` when present, else `values`
  /// (a series built in code with std only).
  const std::vector<double>& sigma_center() const { return mean.empty() ? values : mean; }
};

/// The step number of every value: `steps` when the series has them, else
/// 0, 1, ..., n-1. Two series were logged at the same steps exactly when
/// these are equal (a dense series and its steps spelled out included).
std::vector<int64_t> step_numbers(const Series& series);

/// The coarsest decimal grid, 1e-2 down to 1e-6, on which every finite
/// value of `values` sits as reading a decimal into the dtype leaves it
/// (float64: exactly the double n / 10^k, correctly rounded;
/// float32: |v/g - round(v/g)| <= 1e-7 |v/g|, half its ulp, and at most a
/// twentieth of the step), with at
/// least `min_distinct` distinct values (fewer prove nothing); 0 when none,
/// and 0 for whole numbers (a count is exact, not a rounded decimal).
/// Hugging Face's Trainer logged `loss` to 4 decimals until late 2025,
/// Megatron-LM's legacy goldens hold 5.
double decimal_grid(const std::vector<double>& values, bool float32, size_t min_distinct = 8);

/// "float32" or "float64".
const char* dtype_name(Series::Dtype dtype);

/// {"dtype": "float32", "values": [...], "bits": ["0x...", ...], "mean": [...], "std": [...]}.
/// Non-finite values are written as "nan", "inf", "-inf". With `packer`
/// the arrays go to a sidecar (record/series_file.h) and the JSON holds
/// references; "bits" is then left out (binary64 holds float32 exactly).
nlohmann::json to_json(const Series& series, SeriesPacker* packer = nullptr);

/// Parses and validates a series. Throws exit-2 Error naming the JSON path
/// when a value is not a number, when a float32 value is not exactly
/// representable in binary32, or when a stored bit pattern disagrees with
/// the decimal value (a golden edited or produced lossily). Arrays may be
/// sidecar references when `blob` is given, and references to arrays
/// taken out while parsing when `taken` is (core/json_io.h).
Series series_from_json(const JsonView& node, SeriesBlob* blob = nullptr, TakenArrays* taken = nullptr);

}  // namespace lockstep
