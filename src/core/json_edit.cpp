#include "core/json_edit.h"

#include <utility>

#include "core/error.h"

namespace lockstep {

namespace {

constexpr size_t npos = std::string::npos;

// The index just past the string starting at `i` (a '"').
size_t past_string(const std::string& text, size_t i) {
  for (++i; i < text.size() && text[i] != '"'; ++i)
    if (text[i] == '\\') ++i;
  return i + 1;
}

// Where top-level key `key`'s value lies in `text`: [begin, end); npos
// when the key is absent. Also the first key's column (its indent).
struct Found {
  size_t begin = npos, end = npos;
  size_t first_key_indent = npos;
};

Found top_level_value(const std::string& text, const std::string& key) {
  Found out;
  int depth = 0;
  char last = 0;  // the last significant character outside strings
  for (size_t i = 0; i < text.size(); ++i) {
    char ch = text[i];
    if (ch == '"') {
      size_t after = past_string(text, i);
      if (depth == 1 && (last == '{' || last == ',')) {
        if (out.first_key_indent == npos) {
          size_t line = text.rfind('\n', i);
          out.first_key_indent = line == npos ? npos : i - line - 1;
        }
        std::string name = nlohmann::json::parse(text.substr(i, after - i)).get<std::string>();
        size_t colon = text.find(':', after);
        size_t begin = text.find_first_not_of(" \t\r\n", colon + 1);
        // The value ends where the depth comes back to 1 at ',' or '}'.
        int d = 1;
        size_t j = begin;
        for (; j < text.size(); ++j) {
          char x = text[j];
          if (x == '"') {
            j = past_string(text, j) - 1;
          } else if (x == '{' || x == '[') {
            ++d;
          } else if (x == '}' || x == ']') {
            if (--d == 0) break;
          } else if (x == ',' && d == 1) {
            break;
          }
        }
        if (name == key) {
          out.begin = begin;
          out.end = text.find_last_not_of(" \t\r\n", j - 1) + 1;
          return out;
        }
        i = j - 1;
        last = ':';
        continue;
      }
      i = after - 1;
      last = '"';
      continue;
    }
    if (ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n') continue;
    if (ch == '{' || ch == '[') ++depth;
    if (ch == '}' || ch == ']') --depth;
    last = ch;
  }
  return out;
}

// `value` pretty, as the value of a top-level key: each line after the
// first indented by `indent`, lines ended by `eol`.
std::string nested(const nlohmann::ordered_json& value, const std::string& indent, const std::string& eol) {
  std::string text = value.dump(static_cast<int>(indent.size())), out;
  for (char ch : text) {
    if (ch == '\n') {
      out += eol + indent;
      continue;
    }
    out += ch;
  }
  return out;
}

}  // namespace

std::string with_top_level_key(const std::string& text, const std::string& key, const nlohmann::ordered_json& value,
                               const std::string& path) {
  nlohmann::json parsed = nlohmann::json::parse(text, nullptr, false);
  if (parsed.is_discarded() || !parsed.is_object()) throw BadInput(path, "", "a JSON object to set \"" + key + "\" in");
  Found found = top_level_value(text, key);
  size_t first_eol = text.find('\n');
  std::string eol = first_eol != npos && first_eol > 0 && text[first_eol - 1] == '\r' ? "\r\n" : "\n";
  std::string indent(found.first_key_indent == npos || found.first_key_indent == 0 ? 2 : found.first_key_indent, ' ');
  std::string body = nested(value, indent, eol);
  if (found.begin != npos) return text.substr(0, found.begin) + body + text.substr(found.end);
  size_t close = text.find_last_of('}');
  size_t last = text.find_last_not_of(" \t\r\n", close - 1);
  std::string sep = text[last] == '{' ? "" : ",";
  return text.substr(0, last + 1) + sep + eol + indent + nlohmann::json(key).dump() + ": " + body + eol +
         text.substr(close);
}

}  // namespace lockstep
