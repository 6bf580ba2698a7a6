#include "record/series.h"

#include <cmath>

#include "core/float_bits.h"
#include "core/json_io.h"

namespace lockstep {

const char* dtype_name(Series::Dtype dtype) {
  return dtype == Series::Dtype::kFloat32 ? "float32" : "float64";
}

nlohmann::json to_json(const Series& series) {
  nlohmann::json values = nlohmann::json::array();
  for (double v : series.values) values.push_back(double_to_json(v));
  nlohmann::json out = {{"dtype", dtype_name(series.dtype)}, {"values", values}};
  if (series.dtype == Series::Dtype::kFloat32) {
    nlohmann::json bits = nlohmann::json::array();
    for (double v : series.values) bits.push_back(float_bits_hex(static_cast<float>(v)));
    out["bits"] = bits;
  }
  if (!series.mean.empty()) {
    nlohmann::json m = nlohmann::json::array();
    for (double v : series.mean) m.push_back(double_to_json(v));
    out["mean"] = m;
  }
  if (!series.std.empty()) {
    nlohmann::json sd = nlohmann::json::array();
    for (double v : series.std) sd.push_back(double_to_json(v));
    out["std"] = sd;
  }
  return out;
}

Series series_from_json(const JsonView& node) {
  node.allow_keys({"dtype", "values", "bits", "mean", "std"});
  Series s;
  s.dtype = node.at("dtype").as_enum({"float32", "float64"}) == "float32" ? Series::Dtype::kFloat32
                                                                          : Series::Dtype::kFloat64;
  JsonView values = node.at("values");
  // Hot path for long series: read numbers straight from the array and
  // build a path-carrying view only for an element that needs an error.
  const nlohmann::json& arr = values.raw();
  values.expect_array();
  s.values.reserve(arr.size());
  for (size_t i = 0; i < arr.size(); ++i) {
    const nlohmann::json& e = arr[i];
    s.values.push_back(e.is_number() ? e.get<double>() : values.at(i).as_double());
  }

  if (s.dtype == Series::Dtype::kFloat32) {
    for (size_t i = 0; i < s.values.size(); ++i) {
      double v = s.values[i];
      if (!std::isnan(v) && static_cast<double>(static_cast<float>(v)) != v)
        values.at(i).fail("a float32 value exactly representable in binary32, got " +
                          format_double(v));
    }
    if (node.has("bits")) {
      JsonView bits = node.at("bits");
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
  if (node.has("mean")) {
    JsonView m = node.at("mean");
    if (m.size() != s.values.size())
      m.fail("one mean per value (" + std::to_string(s.values.size()) + "), got " + std::to_string(m.size()));
    for (size_t i = 0; i < m.size(); ++i) s.mean.push_back(m.at(i).as_finite(-INFINITY, INFINITY));
    if (!node.has("std")) node.at("mean").fail("a \"std\" beside it (a multi-seed series has both)");
  }
  if (node.has("std") && !node.has("mean"))
    node.at("std").fail("a \"mean\" beside it (a multi-seed series has both)");
  if (node.has("std")) {
    JsonView sd = node.at("std");
    if (sd.size() != s.values.size())
      sd.fail("one std per value (" + std::to_string(s.values.size()) + "), got " +
              std::to_string(sd.size()));
    for (size_t i = 0; i < sd.size(); ++i) s.std.push_back(sd.at(i).as_finite(0, INFINITY));
  }
  return s;
}

}  // namespace lockstep
