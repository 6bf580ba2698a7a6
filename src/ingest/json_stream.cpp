#include "ingest/json_stream.h"

#include <algorithm>

#include "core/error.h"
#include "core/json_io.h"
#include "core/simdjson_number.h"
#include "ingest/json_line.h"

namespace lockstep {

bool UniqueKeys::insert(std::string_view key) {
  if (!many_.empty()) return many_.insert(key).second;
  for (std::string_view k : few_)
    if (k == key) return false;
  few_.push_back(key);
  if (few_.size() > 16) many_.insert(few_.begin(), few_.end());
  return true;
}

void UniqueKeys::clear() {
  few_.clear();
  many_.clear();
}

namespace {

// A bare token's stand-in: a string of the same length ("N" for NaN), so
// every byte offset stays the file's.
std::string_view stand_in(const NonfiniteToken& t) {
  return t.length == 3 ? "\"N\"" : t.length == 8 ? "\"Infini\"" : "\"-Infini\"";
}

}  // namespace

JsonStream::JsonStream(const std::string& path) : path_(path), file_(std::make_unique<MappedFile>(path)) {
  std::string_view text = file_->text();
  size_t capacity = file_->capacity();
  // A UTF-8 byte-order mark (an editor's) is not JSON, but the strict
  // reader skips it as nlohmann does: so does this one.
  if (text.substr(0, 3) == "\xEF\xBB\xBF") {
    text.remove_prefix(3);
    capacity -= 3;
    bom_ = 3;
  }
  // Python's json.dumps writes a NaN or infinite float as a bare NaN,
  // Infinity or -Infinity (Hugging Face's trainer_state.json, a grad_norm
  // that overflowed): each is read as a string of its length standing in
  // for it, and nonfinite() gives its value.
  tokens_ = nonfinite_tokens(text);
  if (!tokens_.empty()) {
    std::string copy(text);
    for (const NonfiniteToken& t : tokens_) copy.replace(t.offset, t.length, stand_in(t));
    replaced_ = simdjson::padded_string(copy);
    text = std::string_view(replaced_.data(), replaced_.size());
    capacity = text.size() + simdjson::SIMDJSON_PADDING;
  }
  base_ = text.data();
  if (simdjson::error_code error = parser_.iterate(simdjson::padded_string_view(text.data(), text.size(), capacity)).get(doc_);
      error != simdjson::SUCCESS)
    refuse(error);
}

bool JsonStream::nonfinite(simdjson::ondemand::value& value, double& out) {
  if (tokens_.empty()) return false;
  size_t at = static_cast<size_t>(value.raw_json_token().data() - base_);
  auto it = std::lower_bound(tokens_.begin(), tokens_.end(), at,
                             [](const NonfiniteToken& t, size_t offset) { return t.offset < offset; });
  if (it == tokens_.end() || it->offset != at) return false;
  out = it->value;
  return true;
}

std::string JsonStream::text_as_read() const {
  std::string whole(file_->text());
  for (const NonfiniteToken& t : tokens_) whole.replace(bom_ + t.offset, t.length, stand_in(t));
  return whole;
}

simdjson::ondemand::object JsonStream::root_object() {
  simdjson::ondemand::object root;
  simdjson::error_code error = doc_.get_object().get(root);
  if (error == simdjson::INCORRECT_TYPE) {
    refuse_json_text(text_as_read(), path_);  // exit 2 if it is no JSON at all
    throw BadInput(path_, "(top level)", "an object");
  }
  if (error != simdjson::SUCCESS) refuse(error);
  return root;
}

void JsonStream::skip(simdjson::ondemand::value value, size_t depth) {
  using Type = simdjson::ondemand::json_type;
  switch (get(value.type())) {
    case Type::object: {
      if (depth > kMaxJsonDepth) refuse(simdjson::DEPTH_ERROR);
      UniqueKeys keys;
      for (auto field_result : get(value.get_object())) {
        simdjson::ondemand::field field = get(std::move(field_result));
        if (!keys.insert(get(field.unescaped_key()))) refuse();
        skip(field.value(), depth + 1);
      }
      return;
    }
    case Type::array:
      if (depth > kMaxJsonDepth) refuse(simdjson::DEPTH_ERROR);
      for (auto child : get(value.get_array())) skip(get(std::move(child)), depth + 1);
      return;
    case Type::number: {
      JsonNumber n;
      if (simdjson::error_code e = read_number(value, n); e != simdjson::SUCCESS) refuse(e);
      return;
    }
    case Type::string: get(value.get_string()); return;
    case Type::boolean: get(value.get_bool()); return;
    case Type::null:
      if (!get(value.is_null())) refuse(simdjson::N_ATOM_ERROR);
      return;
    default: refuse(simdjson::TAPE_ERROR);  // simdjson 4's json_type::unknown
  }
}

void JsonStream::finish() {
  const char* trailing = nullptr;
  if (simdjson::error_code error = doc_.current_location().get(trailing); error != simdjson::OUT_OF_BOUNDS)
    refuse(error == simdjson::SUCCESS ? simdjson::TRAILING_CONTENT : error);
}

void JsonStream::refuse(simdjson::error_code error) const {
  // The strict reader says exactly what and where (byte, key path), its
  // offsets counted from the file's first byte, a byte-order mark included.
  const std::string whole = text_as_read();
  refuse_json_text(whole, path_);
  // What the strict reader takes and simdjson refuses: an integer beyond
  // 64 bits (simdjson 3 says NUMBER_ERROR, 4 BIGINT_ERROR).
  if (size_t at = first_integer_beyond_64_bits(whole); at != std::string_view::npos)
    throw BadInput(path_, "byte " + std::to_string(at),
                   "a number lockstep can read: an integer from -2^63 to 2^64 - 1, or a float (1.5e29), not " +
                       input_excerpt(whole.substr(at, std::min<size_t>(40, whole.size() - at))));
  throw BadInput(path_, "", std::string("JSON lockstep can read (") +
                                (error == simdjson::SUCCESS ? "a key written twice" : simdjson::error_message(error)) + ")");
}

const char* json_type_name(simdjson::ondemand::value value) {
  using Type = simdjson::ondemand::json_type;
  Type type;
  if (value.type().get(type) != simdjson::SUCCESS) return "a value";
  switch (type) {
    case Type::array: return "an array";
    case Type::object: return "an object";
    case Type::number: return "a number";
    case Type::string: return "a string";
    case Type::boolean: return "a boolean";
    case Type::null: return "null";
    default: break;  // simdjson 4's json_type::unknown
  }
  return "a value";
}

}  // namespace lockstep
