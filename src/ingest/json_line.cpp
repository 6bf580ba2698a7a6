#include "ingest/json_line.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "core/error.h"

namespace lockstep {

namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

bool ends_token(std::string_view text, size_t at) {
  return at >= text.size() || is_space(text[at]) || text[at] == ',' || text[at] == '}' || text[at] == ']';
}

}  // namespace

namespace {

// Steps a scan over text[i]: true when the byte belongs to a JSON string
// (its quotes included; an escape takes the byte after it along).
bool in_json_string(std::string_view text, size_t& i, bool& in_string) {
  if (!in_string) return in_string = text[i] == '"';
  if (text[i] == '\\') ++i;
  else if (text[i] == '"') in_string = false;
  return true;
}

}  // namespace

std::vector<NonfiniteToken> nonfinite_tokens(std::string_view text) {
  std::vector<NonfiniteToken> out;
  if (text.find('N') == text.npos && text.find('I') == text.npos) return out;  // the common line
  static constexpr std::string_view kTokens[] = {"NaN", "Infinity", "-Infinity"};
  static const double kValues[] = {std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity(),
                                   -std::numeric_limits<double>::infinity()};
  std::vector<char> stack;  // '{' or '[' for each open container
  bool in_string = false;
  char previous = 0;  // last structural character outside strings
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (in_string && in_json_string(text, i, in_string)) continue;
    if (is_space(c)) continue;
    bool value_position = previous == ':' || (!stack.empty() && stack.back() == '[' && (previous == '[' || previous == ','));
    if (value_position && (c == 'N' || c == 'I' || c == '-')) {
      bool found = false;
      for (size_t t = 0; t < 3 && !found; ++t) {
        if (text.compare(i, kTokens[t].size(), kTokens[t]) == 0 && ends_token(text, i + kTokens[t].size())) {
          out.push_back({i, kTokens[t].size(), kValues[t]});
          i += kTokens[t].size() - 1;
          found = true;
        }
      }
      if (found) {
        previous = '"';  // a value, as a string would be
        continue;
      }
    }
    if (c == '"') in_string = true;
    else if (c == '{' || c == '[') stack.push_back(c);
    else if ((c == '}' || c == ']') && !stack.empty()) stack.pop_back();
    previous = c;
  }
  return out;
}

std::string_view replace_nonfinite_tokens(std::string_view text, std::string& scratch) {
  std::vector<NonfiniteToken> tokens = nonfinite_tokens(text);
  if (tokens.empty()) return text;
  scratch.clear();
  size_t copied = 0;
  for (const NonfiniteToken& t : tokens) {
    scratch.append(text.data() + copied, t.offset - copied);
    scratch.append(std::isnan(t.value) ? "\"nan\"" : t.value > 0 ? "\"inf\"" : "\"-inf\"");
    copied = t.offset + t.length;
  }
  scratch.append(text.data() + copied, text.size() - copied);
  return scratch;
}

bool json_number(simdjson::dom::element value, double& out) {
  using T = simdjson::dom::element_type;
  switch (value.type()) {
    case T::DOUBLE: out = value.get_double().value_unsafe(); return true;
    case T::INT64: out = static_cast<double>(value.get_int64().value_unsafe()); return true;
    case T::UINT64: out = static_cast<double>(value.get_uint64().value_unsafe()); return true;
    case T::STRING: {
      std::string_view s = value.get_string().value_unsafe();
      if (s == "nan") out = std::numeric_limits<double>::quiet_NaN();
      else if (s == "inf") out = std::numeric_limits<double>::infinity();
      else if (s == "-inf") out = -std::numeric_limits<double>::infinity();
      else return false;
      return true;
    }
    default: return false;
  }
}

bool json_step(simdjson::dom::element value, int64_t& out) {
  using T = simdjson::dom::element_type;
  switch (value.type()) {
    case T::INT64: out = value.get_int64().value_unsafe(); return out >= 0;
    case T::UINT64: return false;  // above INT64_MAX
    case T::DOUBLE: {
      double d = value.get_double().value_unsafe();
      if (!(d >= 0 && d <= 9007199254740992.0) || std::floor(d) != d) return false;
      out = static_cast<int64_t>(d);
      return true;
    }
    default: return false;
  }
}

const char* json_type_name(simdjson::dom::element value) {
  using T = simdjson::dom::element_type;
  switch (value.type()) {
    case T::ARRAY: return "an array";
    case T::OBJECT: return "an object";
    case T::INT64: case T::UINT64: case T::DOUBLE: return "a number";
    case T::STRING: return "a string";
    case T::BOOL: return "a boolean";
    case T::NULL_VALUE: return "null";
    default: break;  // simdjson 4's BIGINT: only with its big-integer option, which is not used
  }
  return "a value";
}

void JsonLineParser::check_unique_keys(simdjson::dom::element node, const std::string& file, uint64_t line_number) {
  // Named arrays and objects: the result wrappers are temporaries.
  simdjson::dom::array array;
  if (node.get_array().get(array) == simdjson::SUCCESS) {
    for (simdjson::dom::element child : array) check_unique_keys(child, file, line_number);
    return;
  }
  simdjson::dom::object object;
  if (node.get_object().get(object) != simdjson::SUCCESS) return;
  size_t first = keys_.size();
  for (simdjson::dom::key_value_pair kv : object) {
    keys_.push_back(kv.key);
    // Scalars (a metrics line's every value) hold no keys: not descended.
    auto type = kv.value.type();
    if (type == simdjson::dom::element_type::ARRAY || type == simdjson::dom::element_type::OBJECT)
      check_unique_keys(kv.value, file, line_number);
  }
  size_t n = keys_.size() - first;
  auto twice = [&](std::string_view key) {
    throw BadInput(file, "line " + std::to_string(line_number),
                   "each key once in every object; \"" + std::string(key) + "\" is written twice");
  };
  if (n > 1 && n <= 16) {  // a metrics line: each pair, cheaper than sorting
    for (size_t i = first + 1; i < keys_.size(); ++i)
      for (size_t j = first; j < i; ++j)
        if (keys_[i].size() == keys_[j].size() && keys_[i] == keys_[j]) twice(keys_[i]);
  } else if (n > 16) {
    auto begin = keys_.begin() + static_cast<std::ptrdiff_t>(first);
    std::sort(begin, keys_.end());
    auto dup = std::adjacent_find(begin, keys_.end());
    if (dup != keys_.end()) twice(*dup);
  }
  keys_.resize(first);
}

simdjson::dom::object JsonLineParser::parse_object(std::string_view line, const std::string& file,
                                                   uint64_t line_number) {
  std::string_view text = replace_nonfinite_tokens(line, scratch_);
  if (padded_.size() < text.size() + simdjson::SIMDJSON_PADDING) padded_.resize(text.size() + simdjson::SIMDJSON_PADDING);
  std::memcpy(padded_.data(), text.data(), text.size());
  simdjson::dom::element doc;
  auto error = parser_.parse(reinterpret_cast<const uint8_t*>(padded_.data()), text.size(), false).get(doc);
  if (error != simdjson::SUCCESS)
    throw BadInput(file, "line " + std::to_string(line_number),
                   std::string("one JSON object per line (") + simdjson::error_message(error) + ")");
  simdjson::dom::object obj;
  if (doc.get_object().get(obj) != simdjson::SUCCESS)
    throw BadInput(file, "line " + std::to_string(line_number),
                   std::string("one JSON object per line, got ") + json_type_name(doc));
  // A key written twice could show one value to a reviewer and the other
  // to lockstep: refused, as everywhere in lockstep (core/json_io.h).
  check_unique_keys(doc, file, line_number);
  return obj;
}

}  // namespace lockstep
