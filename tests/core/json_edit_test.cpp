// with_top_level_key: one top-level key set, every other byte of a file a
// person wrote kept (order, spacing, line ends); nested or quoted
// look-alikes of the key untouched.
#include "core/json_edit.h"

#include <string>

#include <gtest/gtest.h>

#include "core/error.h"

namespace lockstep {
namespace {

const nlohmann::ordered_json kTol = {{"series", {{"loss", {{"rtol", 0.001}}}}}};

TEST(JsonEdit, AKeyPresentIsReplacedWhereItStands) {
  const std::string text =
      "{\n  \"name\": \"wine\",\n  \"tolerance\": {\"series\": {}},\n  \"steps\": 10   // after\n}\n";
  // Not JSON with the comment: the same without it.
  const std::string json = "{\n  \"name\": \"wine\",\n  \"tolerance\": {\"series\": {}},\n  \"steps\": 10\n}\n";
  EXPECT_THROW(with_top_level_key(text, "tolerance", kTol, "c.json"), Error);
  EXPECT_EQ(with_top_level_key(json, "tolerance", kTol),
            "{\n  \"name\": \"wine\",\n  \"tolerance\": {\n    \"series\": {\n      \"loss\": {\n        \"rtol\": 0.001\n"
            "      }\n    }\n  },\n  \"steps\": 10\n}\n");
}

TEST(JsonEdit, AKeyAbsentIsAddedAfterTheLastOne) {
  EXPECT_EQ(with_top_level_key("{\n  \"name\": \"wine\"\n}\n", "calibration", {{"n", 4}}),
            "{\n  \"name\": \"wine\",\n  \"calibration\": {\n    \"n\": 4\n  }\n}\n");
  EXPECT_EQ(with_top_level_key("{}", "calibration", {{"n", 4}}), "{\n  \"calibration\": {\n    \"n\": 4\n  }\n}");
}

TEST(JsonEdit, TheFilesIndentAndLineEndsAreKept) {
  EXPECT_EQ(with_top_level_key("{\r\n    \"name\": \"wine\"\r\n}\r\n", "calibration", {{"n", 4}}),
            "{\r\n    \"name\": \"wine\",\r\n    \"calibration\": {\r\n        \"n\": 4\r\n    }\r\n}\r\n");
  EXPECT_EQ(with_top_level_key("{\"name\": \"wine\", \"tolerance\": 1}", "tolerance", 2), "{\"name\": \"wine\", \"tolerance\": 2}");
}

TEST(JsonEdit, NestedOrQuotedLookAlikesAreNotTouched) {
  const std::string text =
      "{\n  \"note\": \"\\\"tolerance\\\": {}\",\n  \"trainer\": {\"tolerance\": 5},\n  \"t\\u006flerance\": 1\n}\n";
  // The escaped spelling is the key itself; the quoted and nested ones are not.
  EXPECT_EQ(with_top_level_key(text, "tolerance", 7),
            "{\n  \"note\": \"\\\"tolerance\\\": {}\",\n  \"trainer\": {\"tolerance\": 5},\n  \"t\\u006flerance\": 7\n}\n");
  EXPECT_EQ(with_top_level_key("{\"a\": [\"}\", {\"b\": \"]\"}], \"b\": 1}", "b", 2),
            "{\"a\": [\"}\", {\"b\": \"]\"}], \"b\": 2}");
}

TEST(JsonEdit, SomethingOtherThanAnObjectIsExit2NamingTheFile) {
  for (const std::string text : {"[1, 2]", "{\"a\": ", "", "\"x\""}) {
    try {
      with_top_level_key(text, "tolerance", 1, "smoke/x.json");
      ADD_FAILURE() << "accepted: " << text;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ExitCode::kBadInput);
      EXPECT_EQ(std::string(e.what()), "smoke/x.json: expected a JSON object to set \"tolerance\" in");
    }
  }
}

}  // namespace
}  // namespace lockstep
