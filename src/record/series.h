// A per-step metric series of a run record: loss, gradient norms, learning
// rate. One value per optimiser step, step 0 first.
//
// float32 series (the loss) are stored as doubles holding the exact float32
// value and, in JSON, also as the binary32 bit pattern, so a golden is
// compared against the bits the trainer produced, not a decimal rendering.
//
// A multi-seed golden stores, per step, the mean over seeds in `values` and
// the population standard deviation in `std` (empty otherwise).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace lockstep {

class JsonView;

/// One metric over the steps of a run.
struct Series {
  enum class Dtype { kFloat32, kFloat64 };
  Dtype dtype = Dtype::kFloat64;
  std::vector<double> values;  ///< length = steps; float32 values exactly
  std::vector<double> std;     ///< per-step std over seeds; empty unless multi-seed
};

/// "float32" or "float64".
const char* dtype_name(Series::Dtype dtype);

/// {"dtype": "float32", "values": [...], "bits": ["0x...", ...], "std": [...]}.
/// Non-finite values are written as "nan", "inf", "-inf".
nlohmann::json to_json(const Series& series);

/// Parses and validates a series. Throws exit-2 Error naming the JSON path
/// when a value is not a number, when a float32 value is not exactly
/// representable in binary32, or when a stored bit pattern disagrees with
/// the decimal value (a golden edited or produced lossily).
Series series_from_json(const JsonView& node);

}  // namespace lockstep
