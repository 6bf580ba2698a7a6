// Whole JSON files parsed in place (JsonDocument): each key once in every
// object, however many keys it has and in whatever order, and nesting
// bounded; the refusals name the file and the key's path.
#include "ingest/json_line.h"

#include <gtest/gtest.h>

#include <string>

#include "core/json_io.h"
#include "ingest/ingest_test_util.h"

namespace lockstep {
namespace {

#define EXPECT_HAS(text, part) \
  EXPECT_TRUE((text).find(part) != std::string::npos) << "missing \"" << (part) << "\" in: " << (text)

class JsonDocumentTest : public ::testing::Test {
 protected:
  IngestTempDir dir_{"json-document"};
  std::string file_ = dir_.path("doc.json");
  std::string parse_error(const std::string& text) {
    write_bytes(file_, text);
    return exit2_message([&] {
      JsonDocument doc;
      doc.parse_file(file_);
    });
  }
};

// {"v": {"0": 0, "1": 1, ...}} with n keys, `extra` appended inside.
std::string numbered_object(size_t n, const std::string& extra) {
  std::string s = "{\"v\": {";
  for (size_t i = 0; i < n; ++i) s += (i ? ", \"" : "\"") + std::to_string(i) + "\": " + std::to_string(i);
  return s + extra + "}}";
}

TEST_F(JsonDocumentTest, ManyDistinctKeysParse) {
  write_bytes(file_, numbered_object(5000, ", \"x\": 1, \"05\": 2"));
  JsonDocument doc;
  simdjson::dom::element root = doc.parse_file(file_);
  EXPECT_EQ(root["v"].get_object().value().size(), 5002u);
}

TEST_F(JsonDocumentTest, AKeyWrittenTwiceIsRefusedInSmallAndLargeObjects) {
  EXPECT_HAS(parse_error(R"({"a": 1, "b": {"c": 1, "c": 2}})"), file_ + ": b.c: expected each key once; it is written twice");
  // After a run of increasing numbers (no lookup needed), then not.
  EXPECT_HAS(parse_error(numbered_object(100, ", \"7\": 7")), file_ + ": v.7: expected each key once");
  EXPECT_HAS(parse_error(numbered_object(100, ", \"x\": 1, \"x\": 2")), file_ + ": v.x: expected each key once");
}

TEST_F(JsonDocumentTest, MalformedAndTooDeepDocumentsNameTheByte) {
  EXPECT_HAS(parse_error(R"({"a": [1, 2)"), file_ + ": line 1, column 12 (byte 11): ");
  EXPECT_HAS(parse_error(std::string(300, '[') + std::string(300, ']')),
             "arrays and objects nested at most " + std::to_string(kMaxJsonDepth) + " deep");
}

}  // namespace
}  // namespace lockstep
