#include "record/series_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

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

// Maps `path` read-only. Mapping instead of read(2) saves a copy and a
// zero-filled buffer: for 64 MB that is most of the time on a VM whose page
// faults are slow. MAP_POPULATE maps every page in one call. (A file
// truncated by another process while it is mapped would raise SIGBUS; the
// size is checked first, so only such a race could.)
std::shared_ptr<const void> map_file(const std::string& path, size_t& size) {
  auto fail = [&](const std::string& why) -> std::shared_ptr<const void> {
    throw Error(ExitCode::kBadInput, path + ": cannot read the series sidecar: " + why);
  };
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return fail(std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return fail("not a regular file");
  }
  size = static_cast<size_t>(st.st_size);
  if (size == 0) {
    ::close(fd);
    return std::shared_ptr<const void>(nullptr);
  }
  void* p = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
  int err = errno;
  ::close(fd);
  if (p == MAP_FAILED) return fail(std::strerror(err));
  return std::shared_ptr<const void>(p, [size](const void* q) { ::munmap(const_cast<void*>(q), size); });
}

std::string stem_of(const std::string& json_name) {
  const std::string ext = ".json";
  if (json_name.size() > ext.size() && json_name.compare(json_name.size() - ext.size(), ext.size(), ext) == 0)
    return json_name.substr(0, json_name.size() - ext.size());
  return json_name;
}

}  // namespace

std::string sidecar_name(const std::string& json_name, const std::string& hash_hex) {
  return stem_of(json_name) + "." + hash_hex.substr(0, kHashDigits) + kSuffix;
}

bool is_sidecar_of(const std::string& file_name, const std::string& json_name) {
  const std::string stem = stem_of(json_name) + ".";
  const std::string suffix = kSuffix;
  if (file_name.size() != stem.size() + kHashDigits + suffix.size()) return false;
  if (file_name.compare(0, stem.size(), stem) != 0) return false;
  if (file_name.compare(file_name.size() - suffix.size(), suffix.size(), suffix) != 0) return false;
  std::string digits = file_name.substr(stem.size(), kHashDigits);
  return digits.find_first_not_of("0123456789abcdef") == std::string::npos;
}

nlohmann::json SeriesPacker::add(const std::vector<double>& values) {
  size_t offset = bytes_.size();
  bytes_.resize(offset + values.size() * sizeof(double));
  if (!values.empty()) std::memcpy(&bytes_[offset], values.data(), values.size() * sizeof(double));
  return {{"offset", offset}, {"count", values.size()}};
}

nlohmann::json SeriesPacker::descriptor(const std::string& json_name) const {
  std::string hash = xxh3_128_hex(bytes_.data(), bytes_.size());
  return {{"file", sidecar_name(json_name, hash)}, {"bytes", bytes_.size()}, {"xxh3_128", hash}};
}

SeriesBlob SeriesBlob::load(const JsonView& d, const std::string& dir) {
  d.allow_keys({"file", "bytes", "xxh3_128"});
  std::string name = d.at("file").as_string();
  if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos ||
      name.find('\0') != std::string::npos)
    d.at("file").fail("a plain file name in the record's folder, got \"" + name + "\"");
  int64_t bytes = d.at("bytes").as_int(0, static_cast<int64_t>(kMaxReadBytes));
  if (bytes % 8 != 0) d.at("bytes").fail("a multiple of 8 (binary64 values), got " + std::to_string(bytes));
  std::string hash = d.at("xxh3_128").as_string();
  if (hash.size() != 32 || hash.find_first_not_of("0123456789abcdef") != std::string::npos)
    d.at("xxh3_128").fail("32 lowercase hex digits (XXH3-128), got \"" + hash + "\"");

  std::string path = (std::filesystem::path(dir.empty() ? "." : dir) / name).string();
  SeriesBlob blob;
  blob.map_ = map_file(path, blob.size_);
  if (blob.size_ != static_cast<size_t>(bytes))
    throw Error(ExitCode::kBadInput, path + ": series sidecar of " + d.file() + ": expected " +
                                         std::to_string(bytes) + " bytes (series_data.bytes), got " +
                                         std::to_string(blob.size_) + " (truncated or replaced)");
  std::string actual = xxh3_128_hex(blob.map_.get(), blob.size_);
  if (actual != hash)
    throw Error(ExitCode::kBadInput, path + ": series sidecar of " + d.file() +
                                         ": content does not match series_data.xxh3_128 (edited or replaced)");
  return blob;
}

std::vector<double> SeriesBlob::values(const JsonView& ref) const {
  if (!ref.raw().is_object()) ref.fail("an array of numbers or a sidecar reference {\"offset\", \"count\"}");
  ref.allow_keys({"offset", "count"});
  const int64_t size = static_cast<int64_t>(size_);
  int64_t offset = ref.at("offset").as_int(0, size);
  if (offset % 8 != 0) ref.at("offset").fail("a multiple of 8, got " + std::to_string(offset));
  int64_t count = ref.at("count").as_int(0, (size - offset) / 8);
  if (count == 0) return {};
  // The mapping is page-aligned and the offset a multiple of 8, so the
  // doubles are aligned.
  const double* first = reinterpret_cast<const double*>(static_cast<const char*>(map_.get()) + offset);
  return std::vector<double>(first, first + count);
}

std::vector<double> number_array(const JsonView& node, const SeriesBlob* blob) {
  if (blob && node.raw().is_object()) return blob->values(node);
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

}  // namespace lockstep
