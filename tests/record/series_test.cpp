#include "record/series.h"

#include <gtest/gtest.h>

#include "core/error.h"
#include "core/json_io.h"

namespace lockstep {
namespace {

std::string parse_error(const std::string& text) {
  auto doc = nlohmann::json::parse(text);
  try {
    series_from_json(JsonView(doc, "g.json", "series.loss"));
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kBadInput);
    return e.what();
  }
  return "(no error)";
}

TEST(Series, Float32RoundTripCarriesBits) {
  Series s{Series::Dtype::kFloat32, {static_cast<double>(2.4810197f), 1.0}, {}, {}, {}};
  nlohmann::json j = to_json(s);
  EXPECT_EQ(j["bits"], nlohmann::json({"0x401ec907", "0x3f800000"}));
  auto text = j.dump();
  auto doc = nlohmann::json::parse(text);
  Series back = series_from_json(JsonView(doc, "g.json"));
  EXPECT_EQ(back.values, s.values);
}

TEST(Series, NonFiniteValuesAsStrings) {
  Series s{Series::Dtype::kFloat64, {std::nan(""), INFINITY}, {}, {}, {}};
  EXPECT_EQ(to_json(s)["values"], nlohmann::json({"nan", "inf"}));
}

TEST(Series, DecimalDisagreeingWithBitsIsRejected) {
  EXPECT_EQ(parse_error(R"({"dtype": "float32", "values": [1.0], "bits": ["0x3f800001"]})"),
            "g.json: series.loss.bits[0]: expected the bit pattern of values[0] = 1 (0x3f800000); "
            "the decimal value and the stored bits disagree");
}

TEST(Series, Float32ValueNotRepresentableIsRejected) {
  EXPECT_EQ(parse_error(R"({"dtype": "float32", "values": [0.1]})"),
            "g.json: series.loss.values[0]: expected a float32 value exactly representable in binary32, got 0.1");
}

TEST(Series, WrongTypesNameThePath) {
  EXPECT_EQ(parse_error(R"({"dtype": "float16", "values": []})"),
            "g.json: series.loss.dtype: expected one of \"float32\", \"float64\", got \"float16\" (did you mean \"float32\"?)");
  EXPECT_EQ(parse_error(R"({"dtype": "float64", "values": [1, "x"]})"),
            "g.json: series.loss.values[1]: expected a number (or \"nan\", \"inf\", \"-inf\"), got string");
}

TEST(Series, MultiSeedMeanAndStdRoundTripAndMustComeTogether) {
  Series s{Series::Dtype::kFloat32, {1.0, 2.0}, {1.25, 2.5}, {0.125, 0.25}, {}};
  auto doc = nlohmann::json::parse(to_json(s).dump());
  Series back = series_from_json(JsonView(doc, "g.json"));
  EXPECT_EQ(back.mean, s.mean);
  EXPECT_EQ(back.std, s.std);
  EXPECT_EQ(back.sigma_center(), s.mean);
  EXPECT_EQ(parse_error(R"({"dtype": "float64", "values": [1.0], "mean": [1.0]})"),
            "g.json: series.loss.mean: expected a \"std\" beside it (a multi-seed series has both)");
  EXPECT_EQ(parse_error(R"({"dtype": "float64", "values": [1.0], "mean": [1.0, 2.0], "std": [0.1]})"),
            "g.json: series.loss.mean: expected one mean per value (1), got 2");
  EXPECT_EQ(parse_error(R"({"dtype": "float64", "values": [1.0], "std": [0.5]})"),
            "g.json: series.loss.std: expected a \"mean\" beside it (a multi-seed series has both)");
  EXPECT_EQ(parse_error(R"({"dtype": "float64", "values": [1.0], "mean": [1.0], "std": [-0.0]})"),
            "g.json: series.loss.std[0]: expected a finite number >= 0, got -0");
}

}  // namespace
}  // namespace lockstep
