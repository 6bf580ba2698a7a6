// What the JSON-per-line readers (JSONL metrics, MLLOG) share: one parsed
// line at a time with simdjson, Python's bare NaN / Infinity / -Infinity
// tokens, and numbers and steps as lockstep reads them.
//
//   JsonLineParser parser;
//   simdjson::dom::object obj = parser.parse_object(line, "log.jsonl", 12);  // exit 2 if not an object
//   double v;
//   if (!json_number(obj["loss"].value_unsafe(), v)) ...;     // 0.5, NaN, "nan", "inf", "-inf"
//
// Internal to src/ingest/ (it exposes simdjson types; a target that uses
// them links simdjson::simdjson, whose definitions change dom::parser).
#pragma once

#include <simdjson.h>

#include "core/mapped_file.h"

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace lockstep {

/// `text` with Python's json.dumps tokens NaN, Infinity and -Infinity in
/// value position, outside strings, replaced by lockstep's strings "nan",
/// "inf" and "-inf". Returns `text` itself when there is none, else a view
/// of `scratch`. Anything else (a NaN inside a string, a key, "NaNa") is
/// left as it is.
std::string_view replace_nonfinite_tokens(std::string_view text, std::string& scratch);

/// A JSON value as a float64: any JSON number (integers converted), or the
/// strings "nan", "inf", "-inf". False for anything else.
bool json_number(simdjson::dom::element value, double& out);

/// A step: a non-negative integer (an integral float such as 5.0 up to
/// 2^53 counts). False for anything else.
bool json_step(simdjson::dom::element value, int64_t& out);

/// "a number", "a string", "an object", ... for messages.
const char* json_type_name(simdjson::dom::element value);

/// A whole JSON file (another tool's golden: a Megatron-LM golden-values
/// file, trainer_state.json), parsed in place with simdjson: millions of
/// values are read without building a tree of their own.
///
///   JsonDocument doc;
///   simdjson::dom::element root = doc.parse_file("golden_values.json");  // exit 2 if malformed
class JsonDocument {
 public:
  /// Parses `path`: valid JSON (Python's NaN tokens are not), each key
  /// once in every object, nested at most kMaxJsonDepth deep. Throws the
  /// exit-2 Error core/json_io.h's parse_json_text gives (the byte offset,
  /// the duplicate key's path). The result is valid while this lives.
  simdjson::dom::element parse_file(const std::string& path);

 private:
  simdjson::dom::parser parser_;
  std::unique_ptr<MappedFile> file_;
  std::vector<std::string_view> keys_;
};

/// Parses lines of one file, reusing its buffers.
class JsonLineParser {
 public:
  /// Parses `line` (non-finite tokens replaced) as a JSON object whose
  /// members each appear once. Throws exit-2 Error naming `file` and
  /// `line_number` otherwise. The result is valid until the next call.
  simdjson::dom::object parse_object(std::string_view line, const std::string& file, uint64_t line_number);

 private:
  void check_unique_keys(simdjson::dom::element node, const std::string& file, uint64_t line_number);

  simdjson::dom::parser parser_;
  std::string scratch_;
  std::vector<char> padded_;
  std::vector<std::string_view> keys_;
};

}  // namespace lockstep
