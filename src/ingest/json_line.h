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

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace lockstep {

/// A bare NaN, Infinity or -Infinity (Python's json.dumps writes them for
/// non-finite floats) in value position of JSON text.
struct NonfiniteToken {
  size_t offset;  ///< byte of its first character
  size_t length;  ///< 3, 8 or 9
  double value;   ///< NaN, +inf or -inf
};

/// Every such token in `text`, outside strings, in order (none in a key, a
/// string, or a word such as "NaNa").
std::vector<NonfiniteToken> nonfinite_tokens(std::string_view text);

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
