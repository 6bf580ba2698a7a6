// A whole JSON file read where it lies with simdjson On-Demand: a reader
// of another tool's golden (a Megatron-LM golden-values file, Hugging
// Face's trainer_state.json) visits each value once, in file order, and
// decodes it there. No tree of the document is built: DOM's tape and
// string copies are about twice the file's size in fresh memory, the
// system time a 1M-step golden paid on a VM whose page faults are dear.
//
//   JsonStream json("golden_values.json");                 // exit 2 if unreadable
//   UniqueKeys keys;
//   for (auto field_result : json.root_object()) {           // exit 2 unless an object
//     simdjson::ondemand::field field = json.get(std::move(field_result));
//     std::string_view key = json.get(field.unescaped_key());
//     if (!keys.insert(key)) json.refuse();                  // "written twice, at byte ..."
//     if (key != "lm loss") json.skip(field.value(), 2);     // read, checked, not kept
//     else ...;
//   }
//   json.finish();                                           // exit 2 if anything follows
//
// Every value must be visited (read, or skip()ped): On-Demand does not
// check what it steps over. Anything malformed is exit 2 with the strict
// reader's message (core/json_io.h: the byte, the line and column, the
// key written twice), counted from the file's first byte. A bare NaN,
// Infinity or -Infinity (Python's json.dumps writes them) reads as a
// string standing in for it; nonfinite() gives its value.
//
// Internal to src/ingest/ (it exposes simdjson types).
#pragma once

#include <simdjson.h>

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "core/mapped_file.h"
#include "ingest/json_line.h"

namespace lockstep {

/// The keys of one object as a walk meets them. A key is compared as
/// unescaped text.
class UniqueKeys {
 public:
  /// False when `key` was inserted before. `key` must outlive this set's use.
  bool insert(std::string_view key);
  void clear();

 private:
  std::vector<std::string_view> few_;         ///< up to 16 keys: each pair compared
  std::unordered_set<std::string_view> many_;  ///< past 16
};

/// One JSON file, mapped and iterated On-Demand (see the top of this file).
class JsonStream {
 public:
  /// Maps `path` (a UTF-8 byte-order mark skipped, as the strict reader
  /// does). Throws exit-2 Error for an unreadable file, one that is not
  /// UTF-8 text, or one whose strings or characters simdjson's first pass
  /// refuses.
  explicit JsonStream(const std::string& path);

  /// The document's root as an object. Exit 2 "(top level): expected an
  /// object" for valid JSON of another kind; exit 2 naming the error for
  /// invalid JSON.
  simdjson::ondemand::object root_object();

  /// Reads `value` and everything in it, keeping nothing: each string,
  /// number and literal checked, each key once per object, nesting at most
  /// kMaxJsonDepth deep counting `depth` as the level of `value` (the
  /// root object is level 1). Exit 2 naming what is malformed.
  void skip(simdjson::ondemand::value value, size_t depth);

  /// After the root object's walk: only white space may follow. Exit 2
  /// otherwise.
  void finish();

  /// Exit 2 naming what is wrong with the document: the strict reader's
  /// message (the byte; a key written twice with both bytes; too deep), an
  /// integer of 20 digits or more by its byte, else simdjson's `error`.
  /// For a walk that met `error` or a key twice (simdjson::SUCCESS).
  [[noreturn]] void refuse(simdjson::error_code error = simdjson::SUCCESS) const;

  /// Whether string `value` stands for a bare NaN, Infinity or -Infinity
  /// of the file (Python's json.dumps writes them), its value then in
  /// `out`. The value is not consumed: read it with get_string().
  bool nonfinite(simdjson::ondemand::value& value, double& out);

  /// The value of `result`, or exit 2 (refuse) on its error.
  template <typename T>
  T get(simdjson::simdjson_result<T>&& result) const {
    T value;
    if (simdjson::error_code error = std::move(result).get(value); error != simdjson::SUCCESS) refuse(error);
    return value;
  }

  const std::string& path() const { return path_; }

 private:
  /// The file's text as simdjson reads it, the byte-order mark kept: each
  /// bare non-finite token replaced by its stand-in of the same length.
  std::string text_as_read() const;

  std::string path_;
  std::unique_ptr<MappedFile> file_;
  size_t bom_ = 0;                      ///< bytes of a byte-order mark skipped
  std::vector<NonfiniteToken> tokens_;  ///< bare NaN / Infinity / -Infinity, by offset after the mark
  simdjson::padded_string replaced_;    ///< the text with their stand-ins, when there is one
  const char* base_ = nullptr;          ///< the first byte simdjson reads
  simdjson::ondemand::parser parser_;
  simdjson::ondemand::document doc_;
};

/// "a number", "a string", "an object", ... for messages; the value is
/// not consumed.
const char* json_type_name(simdjson::ondemand::value value);

}  // namespace lockstep
