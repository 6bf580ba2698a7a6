#include "record/series_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iterator>

#include "core/atomic_file.h"
#include "core/error.h"
#include "core/hash.h"
#include "core/json_io.h"

namespace lockstep {

// The sidecar is little-endian binary64; every platform lockstep builds for
// (x86-64, aarch64) is little-endian, so values are copied as they are.
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the series sidecar is little-endian");

namespace {

constexpr const char* kSuffix = ".series";
constexpr size_t kHashDigits = 16;

std::string stem_of(const std::string& json_name) {
  const std::string ext = ".json";
  if (json_name.size() > ext.size() && json_name.compare(json_name.size() - ext.size(), ext.size(), ext) == 0)
    return json_name.substr(0, json_name.size() - ext.size());
  return json_name;
}

}  // namespace

std::string sidecar_dir_of(const std::string& json_path) {
  std::error_code ec;
  std::filesystem::path real = std::filesystem::weakly_canonical(json_path, ec);
  if (ec) real = json_path;
  return real.parent_path().string();
}

std::string sidecar_name(const std::string& json_name, const std::string& hash_hex) {
  return stem_of(json_name) + "." + hash_hex.substr(0, kHashDigits) + kSuffix;
}

std::string sidecar_twin_of(const std::string& json_name) {
  std::string stem = stem_of(json_name);
  return stem == json_name ? json_name + ".json" : stem;
}

bool is_sidecar_of(const std::string& file_name, const std::string& json_name) {
  const std::string stem = stem_of(json_name) + ".";
  const std::string suffix = kSuffix;
  if (file_name.size() != stem.size() + kHashDigits + suffix.size()) return false;
  if (file_name.compare(0, stem.size(), stem) != 0) return false;
  if (file_name.compare(file_name.size() - suffix.size(), suffix.size(), suffix) != 0) return false;
  std::string digits = file_name.substr(stem.size(), kHashDigits);
  return is_hex_digest(digits, kHashDigits);
}

nlohmann::json SeriesPacker::add(const std::vector<double>& values) {
  size_t offset = size_;
  if (!values.empty()) parts_.emplace_back(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(double));
  size_ += values.size() * sizeof(double);
  return {{"offset", offset}, {"count", values.size()}};
}

nlohmann::json SeriesPacker::descriptor(const std::string& json_name) const {
  Xxh3Stream stream;
  for (std::string_view part : parts_) stream.update(part.data(), part.size());
  std::string hash = stream.hex();
  return {{"file", sidecar_name(json_name, hash)}, {"bytes", size_}, {"xxh3_128", hash}};
}

struct SeriesBlob::State {
  std::string path;       ///< the sidecar
  std::string json_file;  ///< the record, for messages
  std::string hash;       ///< expected XXH3-128
  size_t size = 0;
  int fd = -1;
  struct Range {
    int uses = 0;  ///< references to this exact range; the last take() moves
    std::vector<double> values;
  };
  std::map<std::pair<int64_t, int64_t>, Range> ranges;  ///< (offset, count) -> numbers
  /// Byte spans referenced so far, offset -> (end, the reference's path):
  /// no two may overlap, so the numbers decoded never exceed the file.
  std::map<int64_t, std::pair<int64_t, std::string>> spans;
  bool read = false;

  ~State() {
    if (fd >= 0) ::close(fd);
  }
  [[noreturn]] void fail(const std::string& what) const {
    throw Error(ExitCode::kBadInput, path + ": series sidecar of " + json_file + ": " + what);
  }
};

SeriesBlob::SeriesBlob() : state_(std::make_unique<State>()) {}
SeriesBlob::SeriesBlob(SeriesBlob&&) noexcept = default;
SeriesBlob& SeriesBlob::operator=(SeriesBlob&&) noexcept = default;
SeriesBlob::~SeriesBlob() = default;

SeriesBlob SeriesBlob::open(const JsonView& d, const std::string& dir) {
  d.allow_keys({"file", "bytes", "xxh3_128"});
  std::string name = d.at("file").as_string();
  bool control = std::any_of(name.begin(), name.end(), [](char c) { return static_cast<unsigned char>(c) < 0x20; });
  if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos || control)
    d.at("file").fail("a plain file name in the record's folder, got " + canonical_dump(nlohmann::json(name)));
  int64_t bytes = d.at("bytes").as_int(0, static_cast<int64_t>(kMaxReadBytes));
  if (bytes % 8 != 0) d.at("bytes").fail("a multiple of 8 (binary64 values), got " + std::to_string(bytes));
  std::string hash = d.at("xxh3_128").as_string();
  if (!is_hex_digest(hash, 32))
    d.at("xxh3_128").fail("32 lowercase hex digits (XXH3-128), got \"" + input_excerpt(hash) + "\"");

  SeriesBlob blob;
  State& st = *blob.state_;
  st.path = (std::filesystem::path(dir.empty() ? "." : dir) / name).string();
  st.json_file = d.file();
  st.hash = hash;
  st.size = static_cast<size_t>(bytes);
  // O_NONBLOCK: opening a FIFO must not wait for a writer (it is refused next).
  st.fd = ::open(st.path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (st.fd < 0) d.at("file").fail("a readable sidecar file beside the record; " + st.path + ": " + std::strerror(errno));
  struct stat info {};
  if (::fstat(st.fd, &info) != 0 || !S_ISREG(info.st_mode))
    d.at("file").fail("a regular file; " + st.path + " is not one");
  if (static_cast<uint64_t>(info.st_size) != st.size)  // before reading anything
    st.fail("expected " + std::to_string(st.size) + " bytes (series_data.bytes), got " +
            std::to_string(info.st_size) + " (truncated or replaced)");
  return blob;
}

void SeriesBlob::want(const JsonView& ref) {
  if (!ref.raw().is_object()) ref.fail("an array of numbers or a sidecar reference {\"offset\", \"count\"}");
  ref.allow_keys({"offset", "count"});
  const int64_t size = static_cast<int64_t>(state_->size);
  int64_t offset = ref.at("offset").as_int(0, size);
  if (offset % 8 != 0) ref.at("offset").fail("a multiple of 8, got " + std::to_string(offset));
  int64_t count = ref.at("count").as_int(0, (size - offset) / 8);
  if (count > 0) {
    // Spans never overlap, so only the neighbours on either side can.
    const int64_t end = offset + count * 8;
    auto next = state_->spans.lower_bound(offset);
    auto clash = next != state_->spans.end() && next->first < end ? next : state_->spans.end();
    if (clash == state_->spans.end() && next != state_->spans.begin() && std::prev(next)->second.first > offset)
      clash = std::prev(next);
    if (clash != state_->spans.end())
      ref.fail("a range of the sidecar no other reference shares (lockstep writes each array once), got bytes [" +
               std::to_string(offset) + ", " + std::to_string(end) + "), which overlap " + clash->second.second +
               "'s [" + std::to_string(clash->first) + ", " + std::to_string(clash->second.first) + ")");
    state_->spans.emplace(offset, std::make_pair(end, ref.path()));
  }
  State::Range& r = state_->ranges[{offset, count}];
  if (r.uses++ == 0) r.values.resize(static_cast<size_t>(count));
}

void SeriesBlob::read() {
  State& st = *state_;
  // 256 KiB pieces stay in L2 between read(2) and the copies, so the only
  // fresh memory touched is the arrays themselves.
  constexpr size_t kPiece = 256 * 1024;
  std::unique_ptr<char[]> piece(new char[kPiece]);
  Xxh3Stream hash;
  size_t at = 0;
  for (;;) {
    ssize_t n = ::read(st.fd, piece.get(), kPiece);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) st.fail(std::string("cannot read: ") + std::strerror(errno));
    if (n == 0) break;
    size_t end = at + static_cast<size_t>(n);
    if (end > st.size) st.fail("grew while being read (expected " + std::to_string(st.size) + " bytes)");
    hash.update(piece.get(), static_cast<size_t>(n));
    for (auto& [key, r] : st.ranges) {
      size_t lo = std::max(at, static_cast<size_t>(key.first));
      size_t hi = std::min(end, static_cast<size_t>(key.first) + static_cast<size_t>(key.second) * sizeof(double));
      if (lo < hi)
        std::memcpy(reinterpret_cast<char*>(r.values.data()) + (lo - static_cast<size_t>(key.first)),
                    piece.get() + (lo - at), hi - lo);
    }
    at = end;
  }
  if (at != st.size)
    st.fail("shrank while being read (expected " + std::to_string(st.size) + " bytes, read " + std::to_string(at) + ")");
  if (hash.hex() != st.hash) st.fail("content does not match series_data.xxh3_128 (edited or replaced)");
  st.read = true;
}

std::vector<double> SeriesBlob::take(const JsonView& ref) {
  auto it = state_->ranges.find({ref.at("offset").as_int(), ref.at("count").as_int()});
  if (!state_->read || it == state_->ranges.end() || it->second.uses == 0)
    throw std::logic_error("SeriesBlob::take: " + ref.path() + " was not registered with want() and read");
  return --it->second.uses == 0 ? std::move(it->second.values) : it->second.values;
}

void want_record_references(const JsonView& record, SeriesBlob& blob) {
  if (record.has("series") && record.at("series").raw().is_object()) {
    JsonView series = record.at("series");
    for (const auto& name : series.keys()) {
      JsonView s = series.at(name);
      if (!s.raw().is_object()) continue;  // series_from_json reports it
      for (const char* field : {"values", "mean", "std"})
        if (s.has(field) && s.at(field).raw().is_object()) blob.want(s.at(field));
    }
  }
  if (record.has("resources") && record.at("resources").raw().is_object()) {
    JsonView res = record.at("resources");
    if (res.has("step_time_s") && res.at("step_time_s").raw().is_object()) blob.want(res.at("step_time_s"));
  }
}

std::vector<double> number_array(const JsonView& node, SeriesBlob* blob, TakenArrays* taken) {
  if (taken && TakenArrays::is_reference(node.raw())) return taken->take(node.raw());
  if (blob && node.raw().is_object()) return blob->take(node);
  if (!node.raw().is_array()) {
    node.fail(blob ? "an array of numbers or a sidecar reference {\"offset\", \"count\"}"
                   : "an array of numbers (a sidecar reference {\"offset\", \"count\"} needs "
                     "\"series_data\", which only a run record read from a file may have)");
  }
  // Hot path: read numbers straight from the array and build a
  // path-carrying view only for an element that needs an error.
  const nlohmann::json& arr = node.raw();
  std::vector<double> out;
  out.reserve(arr.size());
  for (size_t i = 0; i < arr.size(); ++i) {
    const nlohmann::json& e = arr[i];
    out.push_back(e.is_number() ? e.get<double>() : node.at(i).as_double());
  }
  return out;
}

void fail_number(const JsonView& node, size_t i, const std::string& expected) {
  if (node.raw().is_array()) node.at(i).fail(expected);
  if (TakenArrays::is_reference(node.raw()))
    JsonView(nullptr, node.file(), node.path() + "[" + std::to_string(i) + "]").fail(expected);
  node.fail(expected + " at index " + std::to_string(i));
}

}  // namespace lockstep
