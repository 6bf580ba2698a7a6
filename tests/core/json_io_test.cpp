#include "core/json_io.h"

#include <gtest/gtest.h>

#include "core/error.h"

namespace lockstep {
namespace {

std::string error_of(const std::function<void()>& f, ExitCode* code = nullptr) {
  try {
    f();
  } catch (const Error& e) {
    if (code) *code = e.code();
    return e.what();
  }
  return "(no error)";
}

TEST(ParseJson, TruncatedNamesFileAndSaysTruncated) {
  ExitCode code{};
  std::string msg = error_of([] { parse_json_text("{\"a\": [1, 2", "goldens/x.json"); }, &code);
  EXPECT_EQ(code, ExitCode::kBadInput);
  EXPECT_EQ(msg, "goldens/x.json: byte 12: expected complete JSON (file is truncated or empty)");
}

TEST(ParseJson, SyntaxErrorGivesOffset) {
  std::string msg = error_of([] { parse_json_text("{\"a\": x}", "c.json"); });
  EXPECT_EQ(msg, "c.json: byte 7: expected valid JSON (syntax error)");
}

TEST(JsonView, UnknownKeySuggestsSpelling) {
  auto doc = nlohmann::json::parse(R"({"tolerence": {}})");
  JsonView v(doc, "smoke/a.json");
  std::string msg = error_of([&] { v.allow_keys({"tolerance", "steps"}); });
  EXPECT_EQ(msg, "smoke/a.json: tolerence: expected a known field, not 'tolerence' (did you mean 'tolerance'?)");
}

TEST(JsonView, TypedAccessNamesThePath) {
  auto doc = nlohmann::json::parse(R"({"data": {"batch_size": 1.5, "workers": -1, "mode": "strikt"}})");
  JsonView v(doc, "f.json");
  EXPECT_EQ(error_of([&] { v.at("data").at("batch_size").as_int(1, 10); }),
            "f.json: data.batch_size: expected an integer in [1, 10], got number");
  EXPECT_EQ(error_of([&] { v.at("data").at("workers").as_int(0, 64); }),
            "f.json: data.workers: expected an integer in [0, 64], got -1");
  EXPECT_EQ(error_of([&] { v.at("data").at("mode").as_enum({"strict", "default"}); }),
            "f.json: data.mode: expected one of \"strict\", \"default\", got \"strikt\" (did you mean \"strict\"?)");
  EXPECT_EQ(error_of([&] { v.at("data").at("seed"); }),
            "f.json: data.seed: expected a value (the field is missing)");
}

TEST(JsonView, ZeroAndHugeIntegersAreRangeChecked) {
  auto doc = nlohmann::json::parse(R"({"steps": 0, "big": 18446744073709551615})");
  JsonView v(doc, "f.json");
  EXPECT_EQ(error_of([&] { v.at("steps").as_int(1, 100); }), "f.json: steps: expected an integer in [1, 100], got 0");
  EXPECT_EQ(error_of([&] { v.at("big").as_int(1, 100); }),
            "f.json: big: expected an integer in [1, 100], got 18446744073709551615");
}

TEST(ParseJson, NumberBeyondDoubleIsExit2) {
  ExitCode code{};
  std::string msg = error_of([] { parse_json_text("{\"seed\": 1e400}", "c.json"); }, &code);
  EXPECT_EQ(code, ExitCode::kBadInput);
  EXPECT_EQ(msg.rfind("c.json: expected numbers within the range of a float64", 0), 0u) << msg;
}

TEST(JsonView, NonFiniteStrings) {
  auto doc = nlohmann::json::parse(R"(["nan", "inf", "-inf", 2.5, "x"])");
  JsonView v(doc, "f.json");
  EXPECT_TRUE(std::isnan(v.at(0).as_double()));
  EXPECT_EQ(v.at(1).as_double(), INFINITY);
  EXPECT_EQ(v.at(2).as_double(), -INFINITY);
  EXPECT_EQ(v.at(3).as_double(), 2.5);
  EXPECT_EQ(error_of([&] { v.at(4).as_double(); }),
            "f.json: [4]: expected a number (or \"nan\", \"inf\", \"-inf\"), got string");
}

TEST(ClosestSpelling, OnlyCloseWords) {
  EXPECT_EQ(closest_spelling("tolerence", {"tolerance", "steps"}), "tolerance");
  EXPECT_EQ(closest_spelling("zzzzzz", {"tolerance", "steps"}), "");
}

}  // namespace
}  // namespace lockstep
