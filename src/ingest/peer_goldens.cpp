#include "ingest/peer_goldens.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "core/simdjson_number.h"
#include "ingest/json_stream.h"
#include "ingest/line_reader.h"
#include "ingest/number_text.h"
#include "ingest/series_builder.h"

namespace lockstep {

namespace {

using simdjson::ondemand::json_type;
using simdjson::ondemand::value;

// What a metric value held.
enum class Metric {
  kNumber,     ///< a number, or "inf" / "-inf" / "nan" / "NaN" as a string (`out`)
  kNanString,  ///< the string "nan" or "NaN" (`out` is NaN): Megatron-LM's "not logged"
  kOther,      ///< anything else: the caller refuses it
};

// Reads a metric value: a number, or "nan" / "NaN" / "inf" / "-inf"; any
// other value (kOther) is read too, `depth` its level (JsonStream::skip).
// Exit 2 for malformed JSON.
Metric metric_value(value v, JsonStream& json, size_t depth, double& out) {
  json_type type = json.get(v.type());
  if (type == json_type::number) {
    JsonNumber n;  // an integer beyond 64 bits: refused, named by its byte
    if (simdjson::error_code e = read_number(v, n); e != simdjson::SUCCESS) json.refuse(e);
    out = n.as_double();
    return Metric::kNumber;
  }
  if (type != json_type::string) {
    json.skip(v, depth);
    return Metric::kOther;
  }
  if (json.nonfinite(v, out)) {  // a bare NaN, Infinity or -Infinity: a value
    json.get(v.get_string());
    return Metric::kNumber;
  }
  std::string_view s = json.get(v.get_string());
  if (!(s == "nan" || s == "NaN" || s == "inf" || s == "-inf") || !float_repr(s, out)) return Metric::kOther;
  return s == "nan" || s == "NaN" ? Metric::kNanString : Metric::kNumber;
}

// Reads an integer in [lo, hi] into `x` (an integral float such as 5.0
// counts). False otherwise, `got` naming what the value is; the value is
// read either way (`depth` its level). Exit 2 for malformed JSON.
bool read_integer(value v, JsonStream& json, size_t depth, int64_t lo, int64_t hi, int64_t& x, const char*& got) {
  got = "a number";
  if (json.get(v.type()) != json_type::number) {
    got = json_type_name(v);
    json.skip(v, depth);
    return false;
  }
  JsonNumber n;  // an integer beyond 64 bits: refused, named by its byte
  if (simdjson::error_code e = read_number(v, n); e != simdjson::SUCCESS) json.refuse(e);
  switch (n.kind) {
    case JsonNumber::Kind::kInt64: x = n.i; break;
    case JsonNumber::Kind::kFloat:
      if (std::floor(n.d) != n.d || n.d < -9e15 || n.d > 9e15) return false;
      x = static_cast<int64_t>(n.d);
      break;
    case JsonNumber::Kind::kUint64: return false;
  }
  return x >= lo && x <= hi;
}

// "an integer between lo and hi, got <what>" for `path`.
[[noreturn]] void refuse_integer(const std::string& file, const std::string& path, int64_t lo, int64_t hi,
                                 const char* got) {
  throw BadInput(file, path, "an integer between " + std::to_string(lo) + " and " + std::to_string(hi) + ", got " + got);
}

// read_integer, else exit 2 naming `path`.
int64_t integer_at(value v, JsonStream& json, size_t depth, const std::string& path, int64_t lo, int64_t hi) {
  int64_t x = 0;
  const char* got = nullptr;
  if (!read_integer(v, json, depth, lo, hi, x, got)) refuse_integer(json.path(), path, lo, hi, got);
  return x;
}

// A step key of a Megatron values object, read from the raw key: a
// decimal step written as plain digits (Megatron-LM writes it so; a key
// with an escape is not taken for one). `text` is the key as written.
bool step_key(const simdjson::ondemand::raw_json_string& key, std::string_view& text, int64_t& step) {
  const char* begin = key.raw();
  const char* p = begin;
  while (*p != '"' && *p != '\\') ++p;
  bool plain = *p == '"';
  // A key with escapes: named in messages as written, up to its closing quote.
  while (*p != '"') p += *p == '\\' ? 2 : 1;
  text = std::string_view(begin, static_cast<size_t>(p - begin));
  return plain && decimal_step(text, step);
}

// A Megatron metric block's fields besides its values.
struct MegatronBlock {
  int64_t start = 0, end = -1, interval = 1;
  bool have_start = false;     ///< start_step given: the first value must be at it
  bool have_interval = false;  ///< step_interval given
  bool full = false;        ///< "value_precision": "full"
  size_t values_field = 0;  ///< the index of "values" among the block's fields
};

// Reads metric `name`'s block fields, stepping over its values (read by a
// second walk of the block); exit 2 naming a field of another type, an
// unknown field, missing values or end_step before start_step.
MegatronBlock megatron_block_fields(simdjson::ondemand::object block, const std::string& name, JsonStream& json) {
  const std::string& file = json.path();
  MegatronBlock f;
  bool have_values = false;
  UniqueKeys keys;
  size_t index = 0;
  for (auto field_result : block) {
    simdjson::ondemand::field field = json.get(std::move(field_result));
    std::string_view key = json.get(field.unescaped_key());
    if (!keys.insert(key)) json.refuse();
    std::string path = name + "." + input_excerpt(std::string(key));
    if (key == "start_step") f.start = integer_at(field.value(), json, 3, path, 0, int64_t{1} << 52), f.have_start = true;
    else if (key == "end_step") f.end = integer_at(field.value(), json, 3, path, 0, int64_t{1} << 52);
    else if (key == "step_interval") f.interval = integer_at(field.value(), json, 3, path, 1, int64_t{1} << 40), f.have_interval = true;
    else if (key == "values") f.values_field = index, have_values = true;
    else if (key == "value_precision") {
      value v = field.value();
      std::string_view p;
      if (json.get(v.type()) != json_type::string) json.skip(v, 3);  // malformed JSON is named as such first
      else p = json.get(v.get_string());
      if (p != "full" && p != "rounded") throw BadInput(file, path, "one of \"full\", \"rounded\"");
      f.full = p == "full";
    } else {
      throw BadInput(file, path, "one of the keys start_step, end_step, step_interval, values, value_precision "
                                 "(unknown field)");
    }
    ++index;
  }
  if (!have_values) throw BadInput(file, name + ".values", "a value (the field is missing)");
  if (f.end >= 0 && f.end < f.start)
    throw BadInput(file, name + ".end_step", "a step at or after start_step " + std::to_string(f.start));
  return f;
}

// After a block's values: at least one was logged (`n`; `not_logged`
// "nan" steps aside), and they reach end_step: values that stop a whole
// interval short of it are a golden cut short (end_step may be the last
// step logged or one interval past it). `last`: the last step read.
void check_block_end(const MegatronBlock& f, const std::string& name, const std::string& file, uint64_t n,
                     uint64_t not_logged, int64_t last) {
  if (n == 0)
    throw BadInput(file, name + ".values",
                   not_logged > 0 ? "at least one logged value; every step of the block is \"nan\" (not logged)"
                                  : "at least one value");
  if (f.end >= 0 && last >= 0 && last + f.interval < f.end)
    throw BadInput(file, name + ".values",
                   "values up to end_step " + std::to_string(f.end) + " (every " + std::to_string(f.interval) +
                       " step(s) from start_step " + std::to_string(f.start) + "); they stop at step " +
                       std::to_string(last));
}

// A value of a values object whose keys are not in increasing order, read
// before the values are put in step order.
struct KeyedValue {
  int64_t step;
  std::string_view key;  // as written (the mapped file's bytes)
  double x;
  Metric metric;
};

// The values of a values object whose step keys are not in increasing
// order, read in file order and put in step order (stable); exit 2 naming
// a key that is no decimal step, a key written twice, or a step written
// under two keys ("1" and "01").
std::vector<KeyedValue> values_by_step(simdjson::ondemand::object by_key, const std::string& name, JsonStream& json) {
  std::vector<KeyedValue> out;
  for (auto field_result : by_key) {
    simdjson::ondemand::field field = json.get(std::move(field_result));
    KeyedValue kv{};
    if (!step_key(field.key(), kv.key, kv.step)) {
      bool digits = !kv.key.empty() && kv.key.find_first_not_of("0123456789") == std::string_view::npos;
      throw BadInput(json.path(), name + ".values." + input_excerpt(std::string(kv.key)),
                     digits ? "a step of at most 2^52, got " + std::string(kv.key)
                            : "a value under a decimal step key (plain digits), not '" + input_excerpt(std::string(kv.key)) + "'");
    }
    kv.metric = metric_value(field.value(), json, 4, kv.x);  // kOther refused once in step order
    out.push_back(kv);
  }
  std::stable_sort(out.begin(), out.end(), [](const KeyedValue& a, const KeyedValue& b) { return a.step < b.step; });
  for (size_t k = 1; k < out.size(); ++k)
    if (out[k].step == out[k - 1].step) {
      if (out[k].key == out[k - 1].key) json.refuse();  // one key twice: named with both bytes
      throw BadInput(json.path(), name + ".values." + input_excerpt(std::string(out[k].key)),
                     "one value for step " + std::to_string(out[k].step) + " (it is also '" +
                         input_excerpt(std::string(out[k - 1].key)) + "')");
    }
  return out;
}

// Whether a values object's step keys increase (plain digits, each step
// after the one before), and how many there are (`count`): a walk of its
// keys alone. Megatron-LM writes them so; then each value is read as it
// comes, without a copy.
bool keys_increase(simdjson::ondemand::object by_key, JsonStream& json, size_t& count) {
  int64_t previous = -1;
  count = 0;
  for (auto field_result : by_key) {
    simdjson::ondemand::field field = json.get(std::move(field_result));
    std::string_view text;
    int64_t step;
    if (!step_key(field.key(), text, step) || step <= previous) return false;
    previous = step;
    ++count;
  }
  return true;
}

// One Megatron block's values fed to a builder in step order, on
// Megatron-LM's grid: every step_interval-th step from start_step, "nan"
// where none was logged (left out: an absent step, not a value). A step
// missing or off that grid is a golden cut or edited: exit 2 naming it.
class BlockValues {
 public:
  BlockValues(const MegatronBlock& f, const std::string& name, JsonStream& json, SeriesBuilder& b)
      : f_(f), name_(name), json_(json), b_(b) {
    b_.allow_gaps();  // the grid is checked here; "nan" steps are left out
  }

  // The values: a list from start_step by step_interval (older goldens),
  // or an object of step keys.
  void read(value values) {
    json_type type = json_.get(values.type());
    if (type == json_type::array) read_list(json_.get(values.get_array()));
    else if (type == json_type::object) read_object(json_.get(values.get_object()));
    else {
      const char* got = json_type_name(values);
      json_.skip(values, 3);  // malformed JSON is named as such first
      throw BadInput(json_.path(), name_ + ".values", std::string("an object of step keys or a list, got ") + got);
    }
    check_block_end(f_, name_, json_.path(), n_, not_logged_, last_);
  }

 private:
  // A list's steps come from start_step and step_interval alone: both
  // must be given (a default would be a guess).
  void read_list(simdjson::ondemand::array list) {
    for (auto [given, field] : {std::pair<bool, const char*>{f_.have_start, "start_step"}, {f_.have_interval, "step_interval"}})
      if (!given)
        throw BadInput(json_.path(), name_ + "." + field,
                       std::string("a value: a list of values runs from start_step by step_interval (the field is "
                                   "missing)"));
    b_.reserve(b_.size() + json_.get(list.count_elements()));
    int64_t k = 0;
    for (auto element : list) {
      auto path = [&] { return name_ + ".values[" + std::to_string(k) + "]"; };
      if (k > ((int64_t{1} << 52) - f_.start) / f_.interval)  // start + k * interval past 2^52, before it overflows
        throw BadInput(json_.path(), path(), "a step below 2^52 (start_step + index * step_interval)");
      double x = 0;
      Metric metric = metric_value(json_.get(std::move(element)), json_, 4, x);
      add(f_.start + k * f_.interval, metric, x, path);
      ++k;
    }
  }

  // Steps as numbers, in order: "10" after "9", not after "1".
  void read_object(simdjson::ondemand::object by_key) {
    size_t count = 0;
    bool increasing = keys_increase(by_key, json_, count);
    json_.get(by_key.reset());
    if (!increasing) {
      std::vector<KeyedValue> sorted = values_by_step(by_key, name_, json_);
      b_.reserve(b_.size() + sorted.size());
      for (const KeyedValue& kv : sorted)
        add(kv.step, kv.metric, kv.x, [&] { return name_ + ".values." + input_excerpt(std::string(kv.key)); });
      return;
    }
    b_.reserve(b_.size() + count);
    for (auto kv_result : by_key) {
      simdjson::ondemand::field kv = json_.get(std::move(kv_result));
      std::string_view key;
      int64_t step = 0;
      step_key(kv.key(), key, step);
      double x = 0;
      Metric metric = metric_value(kv.value(), json_, 4, x);
      add(step, metric, x, [&] { return name_ + ".values." + input_excerpt(std::string(key)); });
    }
  }

  // `path()` names the value, built only for a message: a string per value
  // was a tenth of the reader's time on a million steps.
  template <typename Path>
  void add(int64_t step, Metric metric, double x, const Path& path) {
    const std::string& file = json_.path();
    if (last_ < 0 && f_.have_start && step != f_.start)
      throw BadInput(file, path(), "the first value at start_step " + std::to_string(f_.start) +
                                       " (Megatron-LM writes every step from start_step, \"nan\" where none was "
                                       "logged), got step " + std::to_string(step));
    if (last_ >= 0 && step != last_ + f_.interval)
      throw BadInput(file, path(), "step " + std::to_string(last_ + f_.interval) + " next (every " +
                                       std::to_string(f_.interval) + " step(s) from start_step " +
                                       std::to_string(f_.start) + ", \"nan\" where none was logged), got step " +
                                       std::to_string(step));
    last_ = step;
    if (step > (int64_t{1} << 52)) throw BadInput(file, path(), "a step of at most 2^52, got " + std::to_string(step));
    if (metric == Metric::kOther) throw BadInput(file, path(), "a number or \"nan\"");
    if (f_.end >= 0 && step > f_.end) throw BadInput(file, path(), "a step at most end_step " + std::to_string(f_.end));
    if (step < f_.start) throw BadInput(file, path(), "a step at least start_step " + std::to_string(f_.start));
    // "nan" is Megatron-LM's "not logged at this step" (a resumed run's
    // _2nd file before its resume).
    if (metric == Metric::kNanString) {
      b_.skip(step);
      ++not_logged_;
      return;
    }
    b_.add(step, x, Series::Dtype::kFloat64, ++n_);
  }

  const MegatronBlock& f_;
  const std::string& name_;
  JsonStream& json_;
  SeriesBuilder& b_;
  uint64_t n_ = 0, not_logged_ = 0;
  int64_t last_ = -1;
};

// One Megatron metric block into builder `b`. Returns whether it says
// "value_precision": "full".
bool read_megatron_block(value block_value, const std::string& name, JsonStream& json, SeriesBuilder& b) {
  if (json.get(block_value.type()) != json_type::object) {
    const char* got = json_type_name(block_value);
    json.skip(block_value, 2);  // malformed JSON is named as such first
    throw BadInput(json.path(), name, std::string("an object with \"values\", got ") + got);
  }
  simdjson::ondemand::object block = json.get(block_value.get_object());
  const MegatronBlock f = megatron_block_fields(block, name, json);
  // The second walk of the block: to its values.
  json.get(block.reset());
  size_t index = 0;
  for (auto field_result : block) {
    simdjson::ondemand::field field = json.get(std::move(field_result));
    if (index++ == f.values_field) BlockValues(f, name, json, b).read(field.value());
  }
  return f.full;
}

}  // namespace

std::map<std::string, Series> read_megatron_metrics(const MetricsSpec& spec) {
  JsonStream json(spec.path);
  IngestSources sources("value");
  uint32_t file = sources.add(spec.path);
  SeriesSet set(spec.series, "metric", sources);
  set.begin_file(file);
  std::set<std::string> full;  // metrics whose block says "value_precision": "full"
  UniqueKeys names;
  for (auto field_result : json.root_object()) {
    simdjson::ondemand::field field = json.get(std::move(field_result));
    std::string_view key = json.get(field.unescaped_key());
    if (!names.insert(key)) json.refuse();
    int i = set.find(key);
    if (i < 0) {
      set.note_unrequested(key);
      json.skip(field.value(), 2);
      continue;
    }
    std::string name(key);
    if (read_megatron_block(field.value(), name, json, set.at(static_cast<size_t>(i)))) full.insert(name);
  }
  json.finish();
  std::map<std::string, Series> out = set.finish(spec.path, "among the file's metrics");
  // Megatron's legacy goldens hold 5 decimals unless the block says
  // "value_precision": "full": those are never marked rounded.
  for (auto& [name, s] : out)
    s.rounded = full.count(spec.series.at(name)) ? 0 : decimal_grid(s.values, s.dtype == Series::Dtype::kFloat32);
  return out;
}

std::map<std::string, Series> read_torchtitan_metrics(const MetricsSpec& spec) {
  if (spec.series.size() != 1)
    throw BadUsage("torchtitan: a loss file holds one series; give one --series NAME=TAG (the TAG is not read)");
  IngestSources sources("line");
  uint32_t file = sources.add(spec.path);
  SeriesBuilder b("the loss", sources);
  b.begin_file(file);
  LineReader lines(spec.path);
  lines.require_final_newline();  // a cut value would parse
  std::string_view line;
  // Byte loops, not find_first_of/not_of: those search their set with a
  // memchr per byte, most of the reader's time on a million lines.
  while (lines.next(line)) {
    const size_t size = line.size();
    auto blank = [&](size_t i, bool cr) { return line[i] == ' ' || line[i] == '\t' || (cr && line[i] == '\r'); };
    auto skip = [&](size_t i, bool cr) {  // past spaces, tabs (and CRs)
      while (i < size && blank(i, cr)) ++i;
      return i;
    };
    auto field_end = [&](size_t i, bool cr) {
      while (i < size && !blank(i, cr)) ++i;
      return i;
    };
    size_t a = skip(0, false);
    if (skip(a, true) == size) continue;  // a blank line
    uint64_t n = lines.line_number();
    if (n == kExtrapolateAfterLines) b.extrapolate(lines.offset(), lines.file_bytes());
    size_t gap = field_end(a, false), c = skip(gap, false), e = field_end(c, true);
    int64_t step;
    double value;
    if (c == size || skip(e, true) != size)
      throw BadInput(spec.path, "line " + std::to_string(n), "\"<step> <loss>\" (two fields)");
    if (!decimal_step(line.substr(a, gap - a), step))
      throw BadInput(spec.path, "line " + std::to_string(n), "a decimal step first, got '" + std::string(line.substr(a, gap - a)) + "'");
    std::string_view v = line.substr(c, e - c);
    if (!float_repr(v, value))
      throw BadInput(spec.path, "line " + std::to_string(n), "a number after the step, got '" + std::string(v) + "'");
    b.add(step, value, Series::Dtype::kFloat64, n);
  }
  if (b.size() == 0) throw BadInput(spec.path, "", "at least one \"<step> <loss>\" line");
  return {{spec.series.begin()->first, b.finish()}};
}

namespace {

// A requested key's value in one log_history entry.
struct Logged {
  int index;  // the series
  Metric metric;
  double x;
};

// One log_history entry (`k`) into `set`: each requested key's value at
// the entry's "step". Exit 2 naming the entry for a value or step of
// another kind, a key written twice, or a requested key logged without a
// step.
void read_hf_entry(value entry_value, size_t k, JsonStream& json, SeriesSet& set, std::vector<Logged>& logged,
                   UniqueKeys& keys) {
  const std::string& file = json.path();
  auto path = [k] { return "log_history[" + std::to_string(k) + "]"; };  // for a message only
  if (json.get(entry_value.type()) != json_type::object) {
    const char* got = json_type_name(entry_value);
    json.skip(entry_value, 3);  // malformed JSON is named as such first
    throw BadInput(file, path(), std::string("an object, got ") + got);
  }
  logged.clear();
  keys.clear();
  bool have_step = false, step_ok = false;
  int64_t step = -1;
  const char* step_got = nullptr;  // what the step is, when it is no step
  for (auto field_result : json.get(entry_value.get_object())) {
    simdjson::ondemand::field field = json.get(std::move(field_result));
    std::string_view key = json.get(field.unescaped_key());
    if (!keys.insert(key)) json.refuse();
    if (key == "step") {
      have_step = true;
      step_ok = read_integer(field.value(), json, 4, 0, int64_t{1} << 52, step, step_got);
    } else if (int i = set.find(key); i >= 0) {
      Logged l{i, Metric::kOther, 0};
      l.metric = metric_value(field.value(), json, 4, l.x);
      logged.push_back(l);
    } else {
      set.note_unrequested(key);
      json.skip(field.value(), 4);
    }
  }
  if (logged.empty()) return;
  if (!have_step) throw BadInput(file, path(), "a \"step\" in an entry that logs a requested key");
  if (!step_ok) refuse_integer(file, path() + ".step", 0, int64_t{1} << 52, step_got);
  for (const Logged& l : logged) {
    if (l.metric == Metric::kOther)
      throw BadInput(file, path() + "." + set.key(static_cast<size_t>(l.index)), "a number or \"nan\"");
    set.at(static_cast<size_t>(l.index)).add(step, l.x, Series::Dtype::kFloat64, k);
  }
}

}  // namespace

std::map<std::string, Series> read_hf_trainer_metrics(const MetricsSpec& spec) {
  JsonStream json(spec.path);
  IngestSources sources("log_history entry");
  uint32_t file = sources.add(spec.path);
  SeriesSet set(spec.series, "key", sources);
  set.begin_file(file);
  bool have_history = false;
  UniqueKeys root_keys, entry_keys;
  std::vector<Logged> logged;
  for (auto field_result : json.root_object()) {
    simdjson::ondemand::field field = json.get(std::move(field_result));
    std::string_view key = json.get(field.unescaped_key());
    if (!root_keys.insert(key)) json.refuse();
    if (key != "log_history") {
      json.skip(field.value(), 2);
      continue;
    }
    value history_value = field.value();
    if (json.get(history_value.type()) != json_type::array) {
      const char* got = json_type_name(history_value);
      json.skip(history_value, 2);  // malformed JSON is named as such first
      throw BadInput(spec.path, "log_history", std::string("an array, got ") + got);
    }
    have_history = true;
    simdjson::ondemand::array history = json.get(history_value.get_array());
    // Each requested key is logged once per entry at most: room for that
    // (pages never written are never touched).
    size_t entries = json.get(history.count_elements());
    for (size_t i = 0; i < set.size(); ++i) set.reserve(i, entries);
    size_t k = 0;
    for (auto entry : history) read_hf_entry(json.get(std::move(entry)), k++, json, set, logged, entry_keys);
  }
  json.finish();
  if (!have_history)
    throw BadInput(spec.path, "(top level)", "a \"log_history\" list (Hugging Face Trainer's trainer_state.json)");
  return set.finish(spec.path, "in log_history");
}

}  // namespace lockstep
