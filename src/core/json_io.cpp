#include "core/json_io.h"

#include <string>

#include <simdjson.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <map>
#include <optional>
#include <vector>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>

#include "core/atomic_file.h"
#include "core/error.h"
#include "core/mapped_file.h"
#include "core/simdjson_number.h"

namespace lockstep {

namespace {

// simdjson DOM -> nlohmann::json. simdjson parses (correctly rounded
// doubles, RFC 8259) an order of magnitude faster than nlohmann's own
// parser on the large number arrays of long series; building nlohmann
// values from it costs little since numbers are stored inline.
nlohmann::json from_simdjson(simdjson::dom::element e, bool& duplicate, bool& deep, size_t depth = 0) {
  using T = simdjson::dom::element_type;
  if ((e.type() == T::ARRAY || e.type() == T::OBJECT) && ++depth > kMaxJsonDepth) {
    deep = true;  // located by the caller (too_deep)
    return nullptr;
  }
  switch (e.type()) {
    case T::ARRAY: {
      simdjson::dom::array a;
      if (e.get_array().get(a) != simdjson::SUCCESS) return nullptr;
      nlohmann::json::array_t out;
      out.reserve(a.size());
      for (simdjson::dom::element child : a) {
        // Numbers in place: long series are millions of them.
        double d;
        if (child.type() == simdjson::dom::element_type::DOUBLE && child.get_double().get(d) == simdjson::SUCCESS)
          out.emplace_back(d);
        else
          out.push_back(from_simdjson(child, duplicate, deep, depth));
      }
      return nlohmann::json(std::move(out));
    }
    case T::OBJECT: {
      nlohmann::json out = nlohmann::json::object();
      simdjson::dom::object obj;  // a named object: the result wrapper is a temporary
      if (e.get_object().get(obj) != simdjson::SUCCESS) return nullptr;
      for (simdjson::dom::key_value_pair kv : obj) {
        std::string key(kv.key);
        if (out.contains(key)) duplicate = true;  // located and refused by the caller
        out[key] = from_simdjson(kv.value, duplicate, deep, depth);
      }
      return out;
    }
    case T::INT64: return e.get_int64().value_unsafe();
    case T::UINT64: return e.get_uint64().value_unsafe();
    case T::DOUBLE: return e.get_double().value_unsafe();
    case T::STRING: return std::string(e.get_string().value_unsafe());
    case T::BOOL: return e.get_bool().value_unsafe();
    case T::NULL_VALUE: return nullptr;
    default: break;  // simdjson 4's BIGINT: only with its big-integer option, which is not used
  }
  return nullptr;
}

// A key written twice in one object of valid JSON `text`: its JSON path
// and the byte offsets of both occurrences. A small scanner over the
// grammar simdjson has already validated (strings, nesting, commas).
struct DuplicateKey {
  std::string path;
  size_t first = 0, second = 0;
};

std::optional<DuplicateKey> find_duplicate_key(const std::string& text) {
  struct Frame {
    bool object;
    std::string path;                     // path of this container
    std::map<std::string, size_t> keys;   // object: key -> offset
    // Keys that are canonical decimals, each above the one before (a
    // Megatron-LM values object: "1", "2", ... a million of them): 16 bytes
    // each, not a map node. Sorted by construction: (number, offset).
    std::vector<std::pair<uint64_t, size_t>> increasing;
    size_t index = 0;                     // array: next element
    std::string pending_key;              // object: the key whose value comes next
  };
  std::vector<Frame> stack;
  auto child_path = [&](const Frame& f) {
    if (f.object) return f.path.empty() ? f.pending_key : f.path + "." + f.pending_key;
    return f.path + "[" + std::to_string(f.index) + "]";
  };
  bool expect_key = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '"') {
      size_t start = i;
      std::string raw;
      for (++i; i < text.size() && text[i] != '"'; ++i) {
        if (text[i] == '\\') raw += text[i++];
        raw += text[i];
      }
      if (expect_key && !stack.empty() && stack.back().object) {
        // Keys compare decoded, so "st\u0065ps" repeats "steps".
        if (raw.find('\\') != std::string::npos) {
          try {
            raw = nlohmann::json::parse("\"" + raw + "\"").get<std::string>();
          } catch (const nlohmann::json::exception&) {
          }
        }
        Frame& f = stack.back();
        uint64_t number = 0;
        bool canonical = !raw.empty() && raw.size() <= 18 && (raw[0] != '0' || raw.size() == 1);
        for (char d : raw) canonical = canonical && d >= '0' && d <= '9' && (number = number * 10 + (d - '0'), true);
        auto twice = [&](size_t first) { return DuplicateKey{f.path.empty() ? raw : f.path + "." + raw, first, start}; };
        if (canonical && (f.increasing.empty() || number > f.increasing.back().first)) {
          f.increasing.emplace_back(number, start);
        } else {
          if (canonical) {
            auto d = std::lower_bound(f.increasing.begin(), f.increasing.end(), std::make_pair(number, size_t{0}));
            if (d != f.increasing.end() && d->first == number) return twice(d->second);
          }
          auto [it, fresh] = f.keys.emplace(raw, start);
          if (!fresh) return twice(it->second);
        }
        f.pending_key = raw;
        expect_key = false;
      }
      continue;
    }
    if (c == '{' || c == '[') {
      std::string p = stack.empty() ? "" : child_path(stack.back());
      stack.push_back({c == '{', p, {}, {}, 0, ""});
      expect_key = c == '{';
    } else if (c == '}' || c == ']') {
      if (!stack.empty()) stack.pop_back();
      expect_key = false;
    } else if (c == ',') {
      if (!stack.empty()) {
        if (stack.back().object) expect_key = true;
        else ++stack.back().index;
      }
    }
  }
  return std::nullopt;
}

}  // namespace

// The byte offset where `text` first nests deeper than `limit` arrays and
// objects (strings skipped), or npos. Deeper input is refused before any
// parser sees it: the fallback readers below would spend memory growing
// with the square of the depth on it.
static size_t too_deep(const std::string& text, size_t limit) {
  size_t depth = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '"') {
      for (++i; i < text.size() && text[i] != '"'; ++i)
        if (text[i] == '\\') ++i;
    } else if (c == '{' || c == '[') {
      if (++depth > limit) return i;
    } else if ((c == '}' || c == ']') && depth > 0) {
      --depth;
    }
  }
  return std::string::npos;
}

// "UTF-16 little-endian" or "UTF-16 big-endian" when `text` is UTF-16 (a
// byte-order mark, or JSON's ASCII with every other byte NUL, as Windows
// editors and PowerShell's Out-File write), else "".
static std::string utf16_kind(std::string_view text) {
  if (text.size() >= 4 && text.compare(0, 4, std::string_view("\xff\xfe\0\0", 4)) == 0) return "UTF-32 little-endian";
  if (text.size() >= 4 && text.compare(0, 4, std::string_view("\0\0\xfe\xff", 4)) == 0) return "UTF-32 big-endian";
  if (text.size() >= 4 && text[0] != 0 && text[1] == 0 && text[2] == 0 && text[3] == 0) return "UTF-32 little-endian";
  if (text.size() >= 2) {
    unsigned char a = static_cast<unsigned char>(text[0]), b = static_cast<unsigned char>(text[1]);
    if (a == 0xff && b == 0xfe) return "UTF-16 little-endian";
    if (a == 0xfe && b == 0xff) return "UTF-16 big-endian";
    if (a != 0 && b == 0 && text.size() % 2 == 0) return "UTF-16 little-endian";
    if (a == 0 && b != 0 && text.size() % 2 == 0) return "UTF-16 big-endian";
  }
  return "";
}

// The byte offset of the first number token outside strings for which
// `pick(token)` holds, or npos.
template <typename Pick>
static size_t first_number_token(std::string_view text, const Pick& pick) {
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '"') {
      for (++i; i < text.size() && text[i] != '"'; ++i)
        if (text[i] == '\\') ++i;
      continue;
    }
    if (c != '-' && (c < '0' || c > '9')) continue;
    size_t start = i;
    while (i < text.size() && std::strchr("+-.0123456789eE", text[i])) ++i;
    if (pick(text.substr(start, i - start))) return start;
    --i;
  }
  return std::string::npos;
}

// The byte offset of the first number outside strings whose value is
// beyond a float64 (1e400), or npos.
static size_t first_out_of_range_number(const std::string& text) {
  return first_number_token(text, [](std::string_view t) {
    std::string token(t);
    errno = 0;
    double v = std::strtod(token.c_str(), nullptr);
    return std::isinf(v) || (errno == ERANGE && v != 0);
  });
}

size_t first_integer_beyond_64_bits(std::string_view text) {
  return first_number_token(text, [](std::string_view t) {
    if (t.find_first_of(".eE") != std::string_view::npos) return false;
    std::string token(t);
    errno = 0;
    if (token[0] == '-') (void)std::strtoll(token.c_str(), nullptr, 10);
    else (void)std::strtoull(token.c_str(), nullptr, 10);
    return errno == ERANGE;
  });
}

namespace {

// Exit 2 naming `path`, the key path and both bytes where `text` writes a
// key twice in one object: such a file could show one value to a reviewer
// and the other to the comparator.
void refuse_duplicate_key(const std::string& text, const std::string& path) {
  if (auto d = find_duplicate_key(text))
    throw BadInput(path, d->path,
                   "each key once; it is written twice, at byte " + std::to_string(d->first) + " and byte " +
                       std::to_string(d->second));
}

// nlohmann's parse error `e` on `text` as exit 2 naming `path` by line,
// column and byte, with nlohmann's reason in its own words.
[[noreturn]] void throw_syntax_error(const std::string& text, const std::string& path,
                                     const nlohmann::json::parse_error& e) {
  // nlohmann counts from 1; every offset lockstep names counts from 0.
  // A person edits a config by line and column, a program seeks a byte:
  // both are named.
  const std::string message = e.what();
  size_t at = std::min<size_t>(e.byte > 0 ? e.byte - 1 : 0, text.size());
  // nlohmann reports a bad literal ("tru}") where it stopped reading, after
  // it: the offset named is where the literal starts.
  auto literal_char = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '+' || c == '-' || c == '.';
  };
  if (message.find("invalid literal") != std::string::npos)
    while (at > 0 && at <= text.size() && literal_char(text[at - 1])) --at;
  const size_t line = 1 + static_cast<size_t>(std::count(text.begin(), text.begin() + at, '\n'));
  const size_t line_start = at == 0 ? std::string::npos : text.rfind('\n', at - 1);
  const size_t column = at - (line_start == std::string::npos ? 0 : line_start + 1) + 1;
  std::string where = "line " + std::to_string(line) + ", column " + std::to_string(column) + " (byte " +
                      std::to_string(at) + ")";
  // nlohmann reports data after a complete value as "expected end of input".
  // A file cut short ends in an error at its last byte, whether inside a
  // value, a string or a literal ("tr"); a word no literal starts with
  // ("x") is a syntax error there, not a cut.
  bool trailing = message.find("; expected end of input") != std::string::npos;
  bool bad_word = false;
  if (message.find("invalid literal") != std::string::npos) {
    const std::string word = text.substr(at, 6);
    bad_word = std::string("true").rfind(word, 0) != 0 && std::string("false").rfind(word, 0) != 0 &&
               std::string("null").rfind(word, 0) != 0;
  }
  bool truncated = !trailing && !bad_word && e.byte >= text.size();
  // "syntax error while parsing object - unexpected string literal;
  // expected '}'; last read: ..." -> "in an object: unexpected string
  // literal; expected '}'" (what was last read is the input: not quoted).
  std::string detail;
  const std::string lead = "syntax error while parsing ";
  if (size_t p = message.find(lead); p != std::string::npos) {
    detail = message.substr(p + lead.size());
    if (size_t cut = detail.find("; last read"); cut != std::string::npos) detail.resize(cut);
    // nlohmann's words and token names only.
    if (size_t dash = detail.find(" - "); dash != std::string::npos && dash > 0)
      detail = " in " + std::string(std::strchr("aeiou", detail[0]) ? "an " : "a ") + detail.substr(0, dash) + ": " +
               detail.substr(dash + 3);
    else
      detail = ": " + detail;
  }
  std::string what = trailing    ? "nothing after the JSON value (trailing data)"
                     : truncated ? "complete JSON (file is truncated or empty)"
                                 : "valid JSON (syntax error" + detail + ")";
  throw BadInput(path, where, what);
}

}  // namespace

namespace {

// Exit 2 for text no JSON reader should see: UTF-16, or a NUL byte.
void refuse_non_text(std::string_view text, const std::string& path) {
  if (std::string kind = utf16_kind(text); !kind.empty())
    throw BadInput(path, "", "UTF-8 text; the file is " + kind + " (save it as UTF-8, e.g. iconv -f " +
                                 kind.substr(0, 6) + " -t UTF-8)");
  // A NUL would end the text for some readers and not for others.
  if (const void* nul = std::memchr(text.data(), '\0', text.size()))
    throw BadInput(path, "byte " + std::to_string(static_cast<const char*>(nul) - text.data()),
                   "text without NUL bytes (the file holds binary data)");
}

// The reference's binary subtype: its array's index, offset so that a
// subtype no one set (none) is never read as index 0.
constexpr uint64_t kReferenceBase = 0x4c53;  // "LS"

// What the walk below does not take as it is (a syntax error, a key twice,
// too deep, trailing data): parse_json_text without a rule decides and
// names it.
struct LeaveToFullParse {};

// simdjson On-Demand -> nlohmann::json, taking out the arrays `rule`
// selects. On-Demand keeps no tape of the document (DOM's 16 bytes per
// number), and the taken numbers go straight into their vector.
class TakingWalk {
 public:
  TakingWalk(TakeArrayRule rule, TakenArrays& taken) : rule_(rule), taken_(taken) {}

  // `field`: `v` is the value of an object's key (a rule path ends there),
  // not an element of an array.
  nlohmann::json value(simdjson::ondemand::value v, size_t depth, bool field) {
    simdjson::ondemand::json_type type;
    if (v.type().get(type) != simdjson::SUCCESS) throw LeaveToFullParse{};
    switch (type) {
      case simdjson::ondemand::json_type::object: {
        simdjson::ondemand::object o;
        if (v.get_object().get(o) != simdjson::SUCCESS) throw LeaveToFullParse{};
        return object(o, depth + 1);
      }
      case simdjson::ondemand::json_type::array: {
        simdjson::ondemand::array a;
        if (v.get_array().get(a) != simdjson::SUCCESS) throw LeaveToFullParse{};
        return array(a, depth + 1, field);
      }
      case simdjson::ondemand::json_type::number: return number(v);
      case simdjson::ondemand::json_type::string: {
        std::string_view s;
        if (v.get_string().get(s) != simdjson::SUCCESS) throw LeaveToFullParse{};
        return std::string(s);
      }
      case simdjson::ondemand::json_type::boolean: {
        bool b;
        if (v.get_bool().get(b) != simdjson::SUCCESS) throw LeaveToFullParse{};
        return b;
      }
      case simdjson::ondemand::json_type::null: {
        bool null = false;
        if (v.is_null().get(null) != simdjson::SUCCESS || !null) throw LeaveToFullParse{};
        return nullptr;
      }
      default: break;  // simdjson 4's json_type::unknown
    }
    throw LeaveToFullParse{};
  }

  nlohmann::json object(simdjson::ondemand::object o, size_t depth) {
    if (depth > kMaxJsonDepth) throw LeaveToFullParse{};
    nlohmann::json out = nlohmann::json::object();
    for (auto field_result : o) {
      simdjson::ondemand::field field;
      std::string_view key_view;
      if (std::move(field_result).get(field) != simdjson::SUCCESS ||
          field.unescaped_key().get(key_view) != simdjson::SUCCESS)
        throw LeaveToFullParse{};
      std::string key(key_view);
      if (out.contains(key)) throw LeaveToFullParse{};  // a key twice: named by the full parse
      keys_.push_back(key);
      out[key] = value(field.value(), depth, true);
      keys_.pop_back();
    }
    return out;
  }

 private:
  static nlohmann::json number(simdjson::ondemand::value v) {
    JsonNumber n;  // an integer beyond 64 bits: nlohmann reads it
    if (read_number(v, n) != simdjson::SUCCESS) throw LeaveToFullParse{};
    switch (n.kind) {
      case JsonNumber::Kind::kInt64: return n.i;
      case JsonNumber::Kind::kUint64: return n.u;
      case JsonNumber::Kind::kFloat: break;
    }
    return n.d;
  }

  // "nan", "inf", "-inf" as JsonView::as_double reads them.
  static bool nonfinite(std::string_view s, double& out) {
    if (s == "nan") out = std::numeric_limits<double>::quiet_NaN();
    else if (s == "inf") out = std::numeric_limits<double>::infinity();
    else if (s == "-inf") out = -std::numeric_limits<double>::infinity();
    else return false;
    return true;
  }

  nlohmann::json array(simdjson::ondemand::array a, size_t depth, bool field) {
    if (depth > kMaxJsonDepth) throw LeaveToFullParse{};
    bool taking = field && rule_(keys_);  // an array inside one is never taken
    std::vector<double> numbers;
    nlohmann::json::array_t nodes;
    // A series counted first (a walk of its part of the index, which then
    // starts over): it grows in place, not by copies at each doubling.
    size_t count = 0;
    if (taking) {
      if (a.count_elements().get(count) != simdjson::SUCCESS) throw LeaveToFullParse{};
      numbers.reserve(count);
    }
    for (auto child_result : a) {
      simdjson::ondemand::value child;
      if (std::move(child_result).get(child) != simdjson::SUCCESS) throw LeaveToFullParse{};
      if (taking) {
        simdjson::ondemand::json_type type;
        if (child.type().get(type) != simdjson::SUCCESS) throw LeaveToFullParse{};
        if (type == simdjson::ondemand::json_type::number) {
          JsonNumber n;
          if (read_number(child, n) != simdjson::SUCCESS) throw LeaveToFullParse{};
          if (n.kind == JsonNumber::Kind::kFloat) {
            numbers.push_back(n.d);
            continue;
          }
          nodes = as_nodes(numbers);
          taking = false;
          nodes.push_back(n.kind == JsonNumber::Kind::kInt64 ? nlohmann::json(n.i) : nlohmann::json(n.u));
          continue;
        }
        if (type == simdjson::ondemand::json_type::string) {
          std::string_view s;
          if (child.get_string().get(s) != simdjson::SUCCESS) throw LeaveToFullParse{};
          double d;
          if (nonfinite(s, d)) {
            numbers.push_back(d);
            continue;
          }
          nodes = as_nodes(numbers);
          taking = false;
          nodes.emplace_back(std::string(s));
          continue;
        }
        nodes = as_nodes(numbers);
        taking = false;
      }
      nodes.push_back(value(child, depth, false));
    }
    if (taking) return taken_.add(std::move(numbers));
    return nlohmann::json(std::move(nodes));
  }

  // The numbers taken so far as the nodes the text held.
  static nlohmann::json::array_t as_nodes(std::vector<double>& numbers) {
    nlohmann::json::array_t nodes;
    nodes.reserve(numbers.size());
    for (double d : numbers) nodes.push_back(std::isfinite(d) ? nlohmann::json(d) : double_to_json(d));
    numbers = {};
    return nodes;
  }

  TakeArrayRule rule_;
  TakenArrays& taken_;
  std::vector<std::string> keys_;
};

}  // namespace

bool TakenArrays::is_reference(const nlohmann::json& node) {
  return node.is_binary() && node.get_binary().has_subtype() && node.get_binary().subtype() >= kReferenceBase;
}

nlohmann::json TakenArrays::add(std::vector<double> numbers) {
  arrays_.push_back(std::move(numbers));
  return nlohmann::json::binary({}, kReferenceBase + (arrays_.size() - 1));
}

std::vector<double> TakenArrays::take(const nlohmann::json& node) {
  size_t i = static_cast<size_t>(node.get_binary().subtype() - kReferenceBase);
  return i < arrays_.size() ? std::move(arrays_[i]) : std::vector<double>{};
}

void TakenArrays::restore(nlohmann::json& doc) const {
  if (is_reference(doc)) {
    const std::vector<double>& numbers = arrays_.at(static_cast<size_t>(doc.get_binary().subtype() - kReferenceBase));
    nlohmann::json::array_t nodes;
    nodes.reserve(numbers.size());
    for (double d : numbers) nodes.push_back(std::isfinite(d) ? nlohmann::json(d) : double_to_json(d));
    doc = std::move(nodes);
  } else if (doc.is_structured()) {
    for (auto& child : doc) restore(child);
  }
}

bool take_record_arrays(const std::vector<std::string>& keys) {
  if (keys.size() == 3 && keys[0] == "series") return keys[2] == "values" || keys[2] == "mean" || keys[2] == "std";
  return keys.size() == 2 && keys[0] == "resources" && keys[1] == "step_time_s";
}

namespace {

// parse_json_text with a rule, on `text` followed by readable bytes up to
// `capacity` (simdjson's padding).
nlohmann::json parse_taking(std::string_view text, size_t capacity, const std::string& path, TakeArrayRule rule,
                            TakenArrays& taken) {
  refuse_non_text(text, path);
  try {
    simdjson::ondemand::parser parser;
    simdjson::ondemand::document doc;
    simdjson::padded_string copy;
    simdjson::padded_string_view in(text.data(), text.size(), capacity);
    if (capacity < text.size() + simdjson::SIMDJSON_PADDING) {
      copy = simdjson::padded_string(text);
      in = copy;
    }
    if (parser.iterate(in).get(doc) != simdjson::SUCCESS) throw LeaveToFullParse{};
    simdjson::ondemand::object root;
    if (doc.get_object().get(root) != simdjson::SUCCESS) throw LeaveToFullParse{};  // records are objects
    TakingWalk walk(rule, taken);
    nlohmann::json out = walk.object(root, 1);
    // Past the root object only whitespace: no token left (OUT_OF_BOUNDS).
    const char* trailing = nullptr;
    if (doc.current_location().get(trailing) != simdjson::OUT_OF_BOUNDS) throw LeaveToFullParse{};
    return out;
  } catch (const LeaveToFullParse&) {
    taken = TakenArrays();
    return parse_json_text(std::string(text), path);
  }
}

}  // namespace

nlohmann::json parse_json_text(const std::string& text, const std::string& path, TakeArrayRule rule,
                               TakenArrays& taken) {
  return parse_taking(text, text.capacity(), path, rule, taken);
}

nlohmann::json parse_json_file(const std::string& path, TakeArrayRule rule, TakenArrays& taken) {
  MappedFile file(path);
  return parse_taking(file.text(), file.capacity(), path, rule, taken);
}

namespace {

// Exit 2 naming the byte where `text` nests deeper than kMaxJsonDepth.
void refuse_if_too_deep(const std::string& text, const std::string& path) {
  if (size_t at = too_deep(text, kMaxJsonDepth); at != std::string::npos)
    throw BadInput(path, "byte " + std::to_string(at),
                   "arrays and objects nested at most " + std::to_string(kMaxJsonDepth) +
                       " deep (lockstep's files nest a few levels)");
}

// nlohmann's error `e` that is no syntax error (out_of_range 406: a number
// beyond the range of a double, 1e400) as exit 2 naming its byte.
[[noreturn]] void throw_number_error(const std::string& text, const std::string& path, const std::string& what) {
  size_t at = first_out_of_range_number(text);
  if (at != std::string::npos) {
    size_t end = at;
    while (end < text.size() && std::strchr("+-.0123456789eE", text[end])) ++end;
    throw BadInput(path, "byte " + std::to_string(at),
                   "a number within the range of a float64 (at most about 1.8e308), got " +
                       input_excerpt(text.substr(at, end - at)));
  }
  throw BadInput(path, "", "numbers within the range of a float64 (" + what + ")");
}

// nlohmann's SAX events, all taken and dropped: a parse that checks the
// grammar and keeps only its first error.
class FirstError : public nlohmann::json_sax<nlohmann::json> {
 public:
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override { return true; }
  bool key(string_t&) override { return true; }
  bool end_object() override { return true; }
  bool start_array(std::size_t) override { return true; }
  bool end_array() override { return true; }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& ex) override {
    if (const auto* e = dynamic_cast<const nlohmann::json::parse_error*>(&ex)) syntax.emplace_back(*e);
    else other = ex.what();
    return false;
  }
  std::vector<nlohmann::json::parse_error> syntax;  // at most one
  std::string other;                                 // a number out of range
};

}  // namespace

void refuse_json_text(const std::string& text, const std::string& path) {
  refuse_non_text(text, path);
  refuse_if_too_deep(text, path);
  FirstError first;
  nlohmann::json::sax_parse(text, &first);
  if (!first.syntax.empty()) throw_syntax_error(text, path, first.syntax.front());
  if (!first.other.empty()) throw_number_error(text, path, first.other);
  refuse_duplicate_key(text, path);
}

nlohmann::json parse_json_text(const std::string& text, const std::string& path) {
  refuse_non_text(text, path);
  auto refuse_if_too_deep = [&] { lockstep::refuse_if_too_deep(text, path); };
  {
    simdjson::dom::parser parser;
    simdjson::dom::element doc;
    // read_file leaves simdjson's padding spare: no copy of a long record.
    simdjson::error_code parsed =
        text.capacity() >= text.size() + simdjson::SIMDJSON_PADDING
            ? parser.parse(simdjson::padded_string_view(text.data(), text.size(), text.capacity())).get(doc)
            : parser.parse(simdjson::padded_string(text)).get(doc);
    if (parsed == simdjson::DEPTH_ERROR) refuse_if_too_deep();
    if (parsed == simdjson::SUCCESS) {
      bool duplicate = false, deep = false;
      nlohmann::json out = from_simdjson(doc, duplicate, deep);
      if (deep) refuse_if_too_deep();
      if (!duplicate) return out;
      // A file that says two things for one key could show one to a
      // reviewer and the other to the comparator: never accepted.
      refuse_duplicate_key(text, path);
      throw BadInput(path, "", "each key once in every object (a key is written twice)");
    }
  }
  // Input simdjson refuses: nlohmann's parser says where and why, or reads
  // what simdjson cannot (an integer of 2^64 or more); either way a key
  // written twice is refused as above.
  refuse_if_too_deep();
  try {
    nlohmann::json out = nlohmann::json::parse(text);
    refuse_duplicate_key(text, path);
    return out;
  } catch (const nlohmann::json::parse_error& e) {
    throw_syntax_error(text, path, e);
  } catch (const nlohmann::json::exception& e) {
    throw_number_error(text, path, e.what());
  }
}

nlohmann::json parse_json_file(const std::string& path) {
  return parse_json_text(read_file(path), path);
}

namespace {

// `value` with every string and key made well-formed UTF-8 (valid_utf8).
nlohmann::json with_valid_utf8(const nlohmann::json& value) {
  if (value.is_string()) return valid_utf8(value.get_ref<const std::string&>());
  if (value.is_array()) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& v : value) out.push_back(with_valid_utf8(v));
    return out;
  }
  if (value.is_object()) {
    nlohmann::json out = nlohmann::json::object();
    for (const auto& [k, v] : value.items()) out[valid_utf8(k)] = with_valid_utf8(v);
    return out;
  }
  return value;
}

// JSON text of `value`; a string holding bytes that are not UTF-8 (a path
// from the file system) is written with those bytes as "\xNN" text
// (nlohmann refuses them: type_error 316), never an internal error.
std::string dump_utf8(const nlohmann::json& value, int indent) {
  try {
    return value.dump(indent);
  } catch (const nlohmann::json::type_error& e) {
    if (e.id != 316) throw;
    return with_valid_utf8(value).dump(indent);
  }
}

}  // namespace

std::string canonical_dump(const nlohmann::json& value) { return dump_utf8(value, -1); }

std::string pretty_dump(const nlohmann::json& value) { return dump_utf8(value, 2) + "\n"; }

namespace {

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t sub = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string type_name(const nlohmann::json& j) { return j.type_name(); }

}  // namespace

std::string closest_spelling(std::string_view word, const std::vector<std::string>& candidates) {
  std::string best;
  size_t best_d = std::numeric_limits<size_t>::max();
  for (const auto& c : candidates) {
    size_t d = edit_distance(word, c);
    if (d < best_d) {
      best_d = d;
      best = c;
    }
  }
  size_t limit = std::max<size_t>(2, word.size() / 3);
  return best_d <= limit ? best : "";
}

namespace {

// closest_spelling() for input of any length: a name longer than any
// sensible field or choice gets no hint (and costs no edit distance).
std::string hint_for(const std::string& word, const std::vector<std::string>& names) {
  if (word.size() > 64) return "";
  // The spellings of other tools (PyTorch, Hugging Face, torchrun) that no
  // edit distance reaches: suggested when the real name is allowed here.
  static const std::pair<const char*, const char*> kSynonyms[] = {
      {"learning_rate", "lr"},    {"learningrate", "lr"},        {"max_steps", "steps"}, {"num_steps", "steps"},
      {"num_workers", "workers"}, {"nproc_per_node", "world_size"}, {"nprocs", "world_size"},
      {"random_seed", "seed"},    {"manual_seed", "seed"}};
  for (const auto& [other, ours] : kSynonyms)
    if (word == other && std::find(names.begin(), names.end(), ours) != names.end()) return ours;
  return closest_spelling(word, names);
}

}  // namespace

JsonView::JsonView(const nlohmann::json& node, std::string file, std::string path)
    : node_(&node), file_(std::move(file)), path_(std::move(path)) {}

void JsonView::fail(const std::string& expected) const {
  throw BadInput(file_, path_.empty() ? "(top level)" : path_, expected);
}

bool JsonView::has(const std::string& key) const {
  return node_->is_object() && node_->contains(key);
}

JsonView JsonView::at(const std::string& key) const {
  expect_object();
  std::string child = path_.empty() ? key : path_ + "." + key;
  auto it = node_->find(key);
  if (it == node_->end()) throw BadInput(file_, child, "a value (the field is missing)");
  return JsonView(*it, file_, child);
}

JsonView JsonView::at(size_t i) const {
  expect_array();
  std::string child = path_ + "[" + std::to_string(i) + "]";
  if (i >= node_->size()) throw BadInput(file_, child, "an element (the array is too short)");
  return JsonView((*node_)[i], file_, child);
}

size_t JsonView::size() const {
  expect_array();
  return node_->size();
}

std::vector<std::string> JsonView::keys() const {
  expect_object();
  std::vector<std::string> out;
  for (auto it = node_->begin(); it != node_->end(); ++it) out.push_back(it.key());
  return out;
}

void JsonView::allow_keys(const std::vector<std::string_view>& allowed) const {
  expect_object();
  std::vector<std::string> names(allowed.begin(), allowed.end());
  for (auto it = node_->begin(); it != node_->end(); ++it) {
    if (std::find(names.begin(), names.end(), it.key()) != names.end()) continue;
    std::string child = path_.empty() ? input_excerpt(it.key()) : path_ + "." + input_excerpt(it.key());
    std::string hint = hint_for(it.key(), names);
    std::string expected = "a known field, not '" + input_excerpt(it.key()) + "'";
    if (!hint.empty()) expected += " (did you mean '" + hint + "'?)";
    throw BadInput(file_, child, expected);
  }
}

void JsonView::expect_object() const {
  if (!node_->is_object()) fail("an object, got " + type_name(*node_));
}

void JsonView::expect_array() const {
  if (!node_->is_array()) fail("an array, got " + type_name(*node_));
}

std::string JsonView::as_string() const {
  if (!node_->is_string()) fail("a string, got " + type_name(*node_));
  return node_->get<std::string>();
}

bool JsonView::as_bool() const {
  if (!node_->is_boolean()) fail("true or false, got " + type_name(*node_));
  return node_->get<bool>();
}

int64_t JsonView::as_int(int64_t lo, int64_t hi) const {
  std::string range = "an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
  if (lo == INT64_MIN && hi == INT64_MAX) range = "an integer";
  if (node_->is_number_unsigned()) {
    uint64_t u = node_->get<uint64_t>();
    if (u > static_cast<uint64_t>(INT64_MAX)) fail(range + ", got " + std::to_string(u));
    int64_t v = static_cast<int64_t>(u);
    if (v < lo || v > hi) fail(range + ", got " + std::to_string(v));
    return v;
  }
  if (!node_->is_number_integer()) fail(range + ", got " + (node_->is_number() ? node_->dump() : type_name(*node_)));
  int64_t v = node_->get<int64_t>();
  if (v < lo || v > hi) fail(range + ", got " + std::to_string(v));
  return v;
}

uint64_t JsonView::as_uint() const {
  if (node_->is_number_unsigned()) return node_->get<uint64_t>();
  if (node_->is_number_integer() && node_->get<int64_t>() >= 0)
    return static_cast<uint64_t>(node_->get<int64_t>());
  fail("an unsigned integer, got " + (node_->is_number() ? node_->dump() : type_name(*node_)));
}

double JsonView::as_double() const {
  if (node_->is_number()) return node_->get<double>();
  if (node_->is_string()) {
    const auto& s = node_->get_ref<const std::string&>();
    if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
    if (s == "inf") return std::numeric_limits<double>::infinity();
    if (s == "-inf") return -std::numeric_limits<double>::infinity();
  }
  fail("a number (or \"nan\", \"inf\", \"-inf\"), got " + type_name(*node_));
}

double JsonView::as_finite(double lo, double hi) const {
  if (!node_->is_number()) fail("a number, got " + type_name(*node_));
  double v = node_->get<double>();
  if (!(v >= lo && v <= hi))
    fail("a number in [" + nlohmann::json(lo).dump() + ", " + nlohmann::json(hi).dump() + "], got " +
         node_->dump());
  return v;
}

std::string JsonView::as_enum(std::initializer_list<std::string_view> choices) const {
  std::string list;
  std::vector<std::string> names;
  for (auto c : choices) {
    list += (list.empty() ? "" : ", ") + std::string("\"") + std::string(c) + "\"";
    names.emplace_back(c);
  }
  if (!node_->is_string()) fail("one of " + list + ", got " + type_name(*node_));
  std::string v = node_->get<std::string>();
  if (std::find(names.begin(), names.end(), v) == names.end()) {
    std::string hint = hint_for(v, names);
    fail("one of " + list + ", got \"" + input_excerpt(v) + "\"" +
         (hint.empty() ? "" : " (did you mean \"" + hint + "\"?)"));
  }
  return v;
}

bool is_utc_time(const std::string& t) {
  if (t.size() != 20 || t[4] != '-' || t[7] != '-' || t[10] != 'T' || t[13] != ':' || t[16] != ':' || t[19] != 'Z')
    return false;
  auto num = [&](size_t at, size_t n, int lo, int hi) {
    int v = 0;
    for (size_t i = at; i < at + n; ++i) {
      if (t[i] < '0' || t[i] > '9') return false;
      v = v * 10 + (t[i] - '0');
    }
    return v >= lo && v <= hi;
  };
  if (!(num(0, 4, 1970, 9999) && num(5, 2, 1, 12) && num(8, 2, 1, 31) && num(11, 2, 0, 23) && num(14, 2, 0, 59) &&
        num(17, 2, 0, 60)))
    return false;
  // A leap second is the last second of a day (23:59:60), never another.
  if (t.substr(17, 2) == "60" && t.substr(11, 5) != "23:59") return false;
  // A day the month has (2026-02-30 is none).
  const int year = std::stoi(t.substr(0, 4)), month = std::stoi(t.substr(5, 2)), day = std::stoi(t.substr(8, 2));
  const bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
  static const int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return day <= kDays[month - 1] + (month == 2 && leap ? 1 : 0);
}

std::string utc_now(int64_t offset_s) {
  std::time_t t = std::time(nullptr) + static_cast<std::time_t>(offset_s);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

nlohmann::json double_to_json(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  return value;
}

}  // namespace lockstep
