// Whole JSON files read On-Demand (JsonStream): what a walk skips is still
// read and checked — each key once in every object, however many keys it
// has, nesting bounded, every literal and number, nothing after the root —
// and the refusals name the file, the key's path or the byte.
#include "ingest/json_stream.h"

#include <gtest/gtest.h>

#include <string>

#include "core/json_io.h"
#include "ingest/ingest_test_util.h"

namespace lockstep {
namespace {

#define EXPECT_HAS(text, part) \
  EXPECT_TRUE((text).find(part) != std::string::npos) << "missing \"" << (part) << "\" in: " << (text)

class JsonStreamTest : public ::testing::Test {
 protected:
  IngestTempDir dir_{"json-stream"};
  std::string file_ = dir_.path("doc.json");

  // The number of root fields of `text`, each skipped.
  size_t skip_all(const std::string& text) {
    write_bytes(file_, text);
    JsonStream json(file_);
    UniqueKeys keys;
    size_t n = 0;
    for (auto field_result : json.root_object()) {
      simdjson::ondemand::field field = json.get(std::move(field_result));
      if (!keys.insert(json.get(field.unescaped_key()))) json.refuse();
      json.skip(field.value(), 2);
      ++n;
    }
    json.finish();
    return n;
  }
  std::string skip_error(const std::string& text) {
    return exit2_message([&] { skip_all(text); });
  }
};

// {"v": {"0": 0, "1": 1, ...}} with n keys, `extra` appended inside.
std::string numbered_object(size_t n, const std::string& extra) {
  std::string s = "{\"v\": {";
  for (size_t i = 0; i < n; ++i) s += (i ? ", \"" : "\"") + std::to_string(i) + "\": " + std::to_string(i);
  return s + extra + "}}";
}

TEST_F(JsonStreamTest, ManyDistinctKeysAreRead) {
  EXPECT_EQ(skip_all(numbered_object(5000, ", \"x\": 1, \"05\": 2")), 1u);
  EXPECT_EQ(skip_all(R"({"a": [1, 2.5, -3e-7, "s\u00e9", true, false, null, {"b": []}], "c": {}})"), 2u);
}

TEST_F(JsonStreamTest, AKeyWrittenTwiceIsRefusedInSmallAndLargeObjects) {
  EXPECT_HAS(skip_error(R"({"a": 1, "b": {"c": 1, "c": 2}})"), file_ + ": b.c: expected each key once; it is written twice");
  EXPECT_HAS(skip_error(numbered_object(100, ", \"7\": 7")), file_ + ": v.7: expected each key once");
  EXPECT_HAS(skip_error(numbered_object(100, ", \"x\": 1, \"x\": 2")), file_ + ": v.x: expected each key once");
  EXPECT_HAS(skip_error(R"({"a": 1, "a": 1})"), file_ + ": a: expected each key once");
}

// What On-Demand would step over unread is read: a bad literal or number
// inside a skipped value is refused by its byte.
TEST_F(JsonStreamTest, MalformedValuesInsideSkippedOnesNameTheByte) {
  EXPECT_HAS(skip_error(R"({"a": [1, 2)"), file_ + ": line 1, column 12 (byte 11): ");
  EXPECT_HAS(skip_error(R"({"a": {"b": [tru]}})"), file_ + ": line 1, column 14 (byte 13): expected valid JSON");
  EXPECT_HAS(skip_error(R"({"a": {"b": [1.]}})"), file_ + ": line 1, column 16 (byte 15): expected valid JSON (syntax error in a value: invalid number; expected digit after '.')");
  EXPECT_HAS(skip_error(R"({"a": 1} x)"), "nothing after the JSON value (trailing data)");
  EXPECT_HAS(skip_error(R"({"a": [123456789012345678901234567890]})"), file_ + ": byte 7: expected a number lockstep can read");
}

TEST_F(JsonStreamTest, TooDeepAndNotAnObjectAreRefused) {
  EXPECT_HAS(skip_error("{\"a\": " + std::string(300, '[') + std::string(300, ']') + "}"),
             "arrays and objects nested at most " + std::to_string(kMaxJsonDepth) + " deep");
  EXPECT_HAS(skip_error("[1, 2]"), file_ + ": (top level): expected an object");
  EXPECT_HAS(skip_error("[1, 2"), file_ + ": line 1, column 6 (byte 5)");
  EXPECT_HAS(skip_error(""), file_);
}

TEST(UniqueKeys, FewAndManyKeys) {
  UniqueKeys keys;
  std::vector<std::string> names;
  for (int i = 0; i < 40; ++i) names.push_back("k" + std::to_string(i));
  for (const std::string& k : names) EXPECT_TRUE(keys.insert(k));
  EXPECT_FALSE(keys.insert("k3"));
  EXPECT_FALSE(keys.insert("k39"));
  keys.clear();
  EXPECT_TRUE(keys.insert("k3"));
  EXPECT_FALSE(keys.insert("k3"));
}

}  // namespace
}  // namespace lockstep
