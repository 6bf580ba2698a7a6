// Reading JSON files that people edit (smoke configs) or that must not be
// trusted (goldens, records from other trainers), with errors that name the
// file, the JSON path and what was expected.
//
//   nlohmann::json doc = parse_json_file("smoke/digits-cnn.json");
//   JsonView cfg(doc, "smoke/digits-cnn.json");
//   cfg.allow_keys({"name", "steps", "seed"});          // typo -> did you mean
//   int64_t steps = cfg.at("steps").as_int(1, 1000000);  // "steps: expected ..."
//
// Every failure throws lockstep::Error with exit code 2.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace lockstep {

/// Parses `path` as JSON. Throws exit-2 Error naming the file and the byte
/// offset of a syntax error ("truncated" when the input ends early).
nlohmann::json parse_json_file(const std::string& path);

/// Parses `text` (the contents of `path`) as JSON, same errors as above.
nlohmann::json parse_json_text(const std::string& text, const std::string& path);

/// Throws the exit-2 Error parse_json_text gives for `text` when it refuses
/// it, without building the document (nlohmann's SAX parser; memory grows
/// with the nesting and an object's keys, not with the file): for a reader
/// that walked `text` another way and met something wrong. Returns when
/// parse_json_text would accept `text`.
void refuse_json_text(const std::string& text, const std::string& path);

/// Per-step number arrays taken out of a document while it is parsed
/// (parse_json_text with a rule below): a run record with 1,000,000-step
/// series inline then holds one std::vector<double> per array instead of a
/// tree node per number, about a third of the memory and of its page
/// faults. Each taken array is left in the document as a reference (a
/// binary node, which JSON text never produces) that take() turns back
/// into its numbers.
///
///   TakenArrays taken;
///   nlohmann::json doc = parse_json_text(text, "run.json", take_record_arrays, taken);
///   const nlohmann::json& values = doc["series"]["loss"]["values"];
///   if (TakenArrays::is_reference(values)) loss = taken.take(values);
class TakenArrays {
 public:
  /// Whether `node` is a reference to a taken array (a binary node with the subtype add() gives).
  static bool is_reference(const nlohmann::json& node);
  /// The numbers of reference `node`, moved out (a second take of the
  /// same node gives an empty vector). "nan", "inf", "-inf" strings in the
  /// text are NaN and the infinities here.
  std::vector<double> take(const nlohmann::json& node);
  /// Puts every reference left in `doc` back as the array the text held
  /// (float numbers and "nan"/"inf"/"-inf" strings), so that `doc` is what
  /// parse_json_text without a rule gives: for a content hash over it.
  void restore(nlohmann::json& doc) const;
  /// A reference for `numbers`, for the parser.
  nlohmann::json add(std::vector<double> numbers);

 private:
  std::vector<std::vector<double>> arrays_;
};

/// Which arrays parse_json_text takes out: `keys` are the object keys from
/// the root to the array (array indexes left out).
using TakeArrayRule = bool (*)(const std::vector<std::string>& keys);

/// The arrays of a run record (or a golden) that hold per-step numbers:
/// series.<name>.values, .mean, .std and resources.step_time_s.
bool take_record_arrays(const std::vector<std::string>& keys);

/// parse_json_text, taking out each array `rule` selects whose elements are
/// all float numbers (written with a fraction or an exponent) or the
/// strings "nan", "inf", "-inf"; any other array stays in the document.
/// The same input is accepted and refused, with the same messages, as
/// without a rule.
nlohmann::json parse_json_text(const std::string& text, const std::string& path, TakeArrayRule rule,
                               TakenArrays& taken);

/// The same for the file `path`, read where it lies (core/mapped_file.h):
/// no copy of a long record. Throws what read_file() throws besides.
nlohmann::json parse_json_file(const std::string& path, TakeArrayRule rule, TakenArrays& taken);

/// The byte offset of the first integer outside a string in JSON `text`
/// beyond int64 and uint64 (below -2^63 or above 2^64 - 1), or npos: valid
/// JSON that nlohmann reads as a float and simdjson (like most readers)
/// refuses, named by its byte.
size_t first_integer_beyond_64_bits(std::string_view text);

/// The deepest nesting of arrays and objects parse_json_text() accepts;
/// deeper input is exit 2 naming the byte where it goes too deep.
inline constexpr size_t kMaxJsonDepth = 256;

/// Canonical serialisation: keys sorted, no whitespace. Used for content and
/// config hashes, so it must never change for a given value.
std::string canonical_dump(const nlohmann::json& value);

/// Pretty serialisation for files people read and diff (2-space indent,
/// trailing newline).
std::string pretty_dump(const nlohmann::json& value);

/// Closest of `candidates` to `word` by edit distance (at most 2 edits or a
/// third of the word), or "" when none is close. For "did you mean" hints.
std::string closest_spelling(std::string_view word, const std::vector<std::string>& candidates);

/// A typed, path-aware view of one node of a parsed document.
class JsonView {
 public:
  JsonView(const nlohmann::json& node, std::string file, std::string path = "");

  /// JSON path of this node, e.g. "data.augment.noise_std" or "probes[3]".
  const std::string& path() const { return path_; }
  const std::string& file() const { return file_; }
  const nlohmann::json& raw() const { return *node_; }

  bool has(const std::string& key) const;
  /// Member `key`; throws "<file>: <path>.<key>: expected <what> (missing)".
  JsonView at(const std::string& key) const;
  /// Element `i` of an array.
  JsonView at(size_t i) const;
  /// Array length; throws unless this is an array.
  size_t size() const;
  /// Member names of an object, sorted.
  std::vector<std::string> keys() const;

  /// Rejects members not in `allowed`, suggesting the closest allowed name.
  void allow_keys(const std::vector<std::string_view>& allowed) const;

  void expect_object() const;
  void expect_array() const;
  std::string as_string() const;
  bool as_bool() const;
  /// Integer in [lo, hi]; a float such as 1.5 is rejected.
  int64_t as_int(int64_t lo = INT64_MIN, int64_t hi = INT64_MAX) const;
  uint64_t as_uint() const;
  /// Any JSON number, or the strings "nan", "inf", "-inf" (JSON has no
  /// literal for them).
  double as_double() const;
  /// A finite number in [lo, hi].
  double as_finite(double lo, double hi) const;
  /// A string that is one of `choices`.
  std::string as_enum(std::initializer_list<std::string_view> choices) const;

  /// Throws the standard exit-2 error for this node.
  [[noreturn]] void fail(const std::string& expected) const;

 private:
  const nlohmann::json* node_;
  std::string file_;
  std::string path_;
};

/// Whether `t` is a UTC time as lockstep writes one (ISO 8601,
/// "2026-12-03T02:00:00Z": every field in its range, a day the month has,
/// years 1970..9999).
bool is_utc_time(const std::string& t);

/// The UTC time now, or `offset_s` seconds from now, as is_utc_time()
/// accepts it ("2026-11-29T09:12:03Z").
std::string utc_now(int64_t offset_s = 0);

/// JSON value for a double that may be non-finite ("nan", "inf", "-inf").
nlohmann::json double_to_json(double value);

}  // namespace lockstep
