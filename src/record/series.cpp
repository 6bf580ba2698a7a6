#include "record/series.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/float_bits.h"
#include "core/json_io.h"
#include "record/series_file.h"

namespace lockstep {

const char* dtype_name(Series::Dtype dtype) {
  return dtype == Series::Dtype::kFloat32 ? "float32" : "float64";
}

std::vector<int64_t> step_numbers(const Series& s) {
  if (!s.steps.empty()) return s.steps;
  std::vector<int64_t> steps(s.values.size());
  std::iota(steps.begin(), steps.end(), int64_t{0});
  return steps;
}

nlohmann::json to_json(const Series& series, SeriesPacker* packer) {
  auto numbers = [&](const std::vector<double>& v) {
    if (packer) return packer->add(v);
    nlohmann::json arr = nlohmann::json::array();
    for (double x : v) arr.push_back(double_to_json(x));
    return arr;
  };
  nlohmann::json out = {{"dtype", dtype_name(series.dtype)}, {"values", numbers(series.values)}};
  // float32 bit patterns: inline only; binary64 in a sidecar holds them exactly.
  if (series.dtype == Series::Dtype::kFloat32 && !packer) {
    nlohmann::json bits = nlohmann::json::array();
    for (double v : series.values) bits.push_back(float_bits_hex(static_cast<float>(v)));
    out["bits"] = bits;
  }
  if (!series.steps.empty()) out["steps"] = series.steps;  // integers: always inline
  if (!series.mean.empty()) out["mean"] = numbers(series.mean);
  if (!series.std.empty()) out["std"] = numbers(series.std);
  if (series.rounded > 0) out["rounded"] = series.rounded;
  return out;
}

double decimal_grid(const std::vector<double>& values, bool float32, size_t min_distinct) {
  // Each grid is tried on the values as they come, stopping at the first
  // one off it (a curve that was not rounded fails on its first value or
  // so); the distinct values are counted only for a grid that holds.
  auto on_grid = [&](double grid, double scale) {
    for (double v : values) {
      if (!std::isfinite(v)) continue;
      double r = v / grid;
      if (!float32) {
        // float64: exactly the double a k-decimal number reads as (n / 10^k,
        // correctly rounded, as Python's round() and float() give it), not
        // merely near it: 7.500000000000001e-05 from a linear lr schedule
        // sits within 1e-10 of the 1e-6 grid but was never written rounded.
        double n = std::nearbyint(v * scale);
        if (std::fabs(n) > 9007199254740992.0 || n / scale != v) return false;
        continue;
      }
      // float32: within its rounding of the decimal (half an ulp, 6e-8
      // relative); where that is a twentieth of the step, the grid proves
      // nothing.
      double tol = 1e-7 * std::fabs(r) + 1e-9;
      if (tol > 0.05 || std::fabs(r - std::nearbyint(r)) > tol) return false;
    }
    return true;
  };
  auto enough_distinct = [&] {
    std::vector<double> distinct;  // at most min_distinct of them
    for (double v : values) {
      if (!std::isfinite(v) || std::find(distinct.begin(), distinct.end(), v) != distinct.end()) continue;
      distinct.push_back(v);
      if (distinct.size() >= min_distinct) return true;
    }
    return distinct.size() >= min_distinct;
  };
  // Whole numbers (a count: Megatron-LM's num-zeros, tokens) are exact,
  // not a rounded decimal.
  bool whole = true;
  for (double v : values) whole = whole && (!std::isfinite(v) || v == std::floor(v));
  if (whole) return 0;
  for (auto [grid, scale] : {std::pair{1e-2, 1e2}, {1e-3, 1e3}, {1e-4, 1e4}, {1e-5, 1e5}, {1e-6, 1e6}})
    if (on_grid(grid, scale)) return enough_distinct() ? grid : 0;
  return 0;
}

namespace {

}  // namespace

Series series_from_json(const JsonView& node, SeriesBlob* blob, TakenArrays* taken) {
  node.allow_keys({"dtype", "values", "bits", "steps", "mean", "std", "rounded"});
  Series s;
  s.dtype = node.at("dtype").as_enum({"float32", "float64"}) == "float32" ? Series::Dtype::kFloat32
                                                                          : Series::Dtype::kFloat64;
  JsonView values = node.at("values");
  s.values = number_array(values, blob, taken);

  if (s.dtype == Series::Dtype::kFloat32) {
    for (size_t i = 0; i < s.values.size(); ++i) {
      double v = s.values[i];
      if (!std::isnan(v) && static_cast<double>(static_cast<float>(v)) != v)
        fail_number(values, i, "a float32 value exactly representable in binary32, got " + format_double(v));
      // A NaN too: its payload must survive binary64 -> binary32 -> binary64,
      // or two different stored NaNs would compare as one.
      if (std::isnan(v) && !same_bits(static_cast<double>(static_cast<float>(v)), v))
        fail_number(values, i, "a float32 NaN (the binary64 widening of a binary32 NaN), got a NaN whose "
                                "payload binary32 cannot hold");
    }
    if (node.has("bits")) {
      JsonView bits = node.at("bits");
      bits.expect_array();
      if (bits.size() != s.values.size())
        bits.fail("one bit pattern per value (" + std::to_string(s.values.size()) + "), got " +
                  std::to_string(bits.size()));
      for (size_t i = 0; i < s.values.size(); ++i) {
        const nlohmann::json& b = bits.raw()[i];
        auto f = b.is_string() ? parse_float_bits(b.get_ref<const std::string&>()) : std::nullopt;
        if (!f) bits.at(i).fail("a bit pattern \"0x\" + 8 hex digits");
        float from_value = static_cast<float>(s.values[i]);
        bool both_nan = std::isnan(*f) && std::isnan(from_value);
        if (!both_nan && float_bits_hex(*f) != float_bits_hex(from_value))
          bits.at(i).fail("the bit pattern of values[" + std::to_string(i) + "] = " +
                          format_double(s.values[i]) + " (" + float_bits_hex(from_value) +
                          "); the decimal value and the stored bits disagree");
        s.values[i] = static_cast<double>(*f);  // the bits are authoritative (NaN payloads)
      }
    }
  }
  if (node.has("steps")) {
    JsonView st = node.at("steps");
    st.expect_array();
    if (st.size() != s.values.size())
      st.fail("one step number per value (" + std::to_string(s.values.size()) + "), got " +
              std::to_string(st.size()));
    for (size_t i = 0; i < st.size(); ++i) {
      int64_t step = st.at(i).as_int(0);
      if (!s.steps.empty() && step <= s.steps.back())
        st.at(i).fail("a step number above " + std::to_string(s.steps.back()) + " (steps increase), got " +
                      std::to_string(step));
      s.steps.push_back(step);
    }
  }
  if (node.has("mean")) {
    JsonView m = node.at("mean");
    s.mean = number_array(m, blob, taken);
    if (s.mean.size() != s.values.size())
      m.fail("one mean per value (" + std::to_string(s.values.size()) + "), got " + std::to_string(s.mean.size()));
    for (size_t i = 0; i < s.mean.size(); ++i)
      if (!std::isfinite(s.mean[i])) fail_number(m, i, "a finite number, got " + format_double(s.mean[i]));
    if (!node.has("std")) node.at("mean").fail("a \"std\" beside it (a multi-seed series has both)");
  }
  if (node.has("std") && !node.has("mean"))
    node.at("std").fail("a \"mean\" beside it (a multi-seed series has both)");
  if (node.has("std")) {
    JsonView sd = node.at("std");
    s.std = number_array(sd, blob, taken);
    if (s.std.size() != s.values.size())
      sd.fail("one std per value (" + std::to_string(s.values.size()) + "), got " +
              std::to_string(s.std.size()));
    for (size_t i = 0; i < s.std.size(); ++i)
      if (!std::isfinite(s.std[i]) || std::signbit(s.std[i]))  // a standard deviation is never -0.0
        fail_number(sd, i, "a finite number >= 0, got " + format_double(s.std[i]));
  }
  if (node.has("rounded")) s.rounded = node.at("rounded").as_finite(1e-12, 1);
  return s;
}

}  // namespace lockstep
