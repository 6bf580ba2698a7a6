#include "ingest/tensorboard.h"

#include <algorithm>
#include <cstring>
#include <exception>
#include <filesystem>
#include <future>
#include <system_error>
#include <thread>
#include <unordered_set>

#include "core/error.h"
#include "core/json_io.h"
#include "ingest/series_builder.h"
#include "ingest/tensorboard.pb.h"
#include "ingest/tfrecord.h"

namespace lockstep {

namespace {

namespace fs = std::filesystem;

constexpr std::string_view kEventPrefix = "events.out.tfevents.";
constexpr size_t kMaxSeenTags = 1000;  // unrequested tags remembered for "did you mean"
constexpr size_t kBatchRecords = 1 << 18;   // records handed out at once (a buffer holds fewer)
constexpr size_t kParallelRecords = 4096;   // fewer are parsed on the reading thread alone

std::string at_byte(uint64_t offset, const std::string& tag) {
  return "byte " + std::to_string(offset) + ": tag '" + tag + "'";
}

double load_le_float(const std::string& bytes) {
  uint32_t u = 0;
  for (int i = 3; i >= 0; --i) u = (u << 8) | static_cast<unsigned char>(bytes[static_cast<size_t>(i)]);
  float f;
  std::memcpy(&f, &u, sizeof f);
  return static_cast<double>(f);
}

double load_le_double(const std::string& bytes) {
  uint64_t u = 0;
  for (int i = 7; i >= 0; --i) u = (u << 8) | static_cast<unsigned char>(bytes[static_cast<size_t>(i)]);
  double d;
  std::memcpy(&d, &u, sizeof d);
  return d;
}

struct Scalar {
  double value;
  Series::Dtype dtype;
};

// The scalar a Summary.Value holds, or exit 2 saying what it holds instead.
Scalar scalar_of(const tb::Summary::Value& v, const std::string& file, uint64_t offset) {
  auto refuse = [&](const std::string& got) -> Error {
    return BadInput(file, at_byte(offset, v.tag()),
                    "a scalar (simple_value, or a one-element DT_FLOAT or DT_DOUBLE tensor); got " + got);
  };
  // TensorBoard's `oneof value` (tensorboard.proto says why it is not one here).
  int kinds = v.has_simple_value() + v.has_tensor() + v.has_histo() + v.has_obsolete_old_style_histogram() +
              v.has_image() + v.has_audio();
  if (kinds > 1) throw refuse("a value holding " + std::to_string(kinds) + " kinds of data at once");
  if (v.has_simple_value()) return {static_cast<double>(v.simple_value()), Series::Dtype::kFloat32};
  if (v.has_histo() || v.has_obsolete_old_style_histogram()) throw refuse("a histogram");
  if (v.has_image()) throw refuse("an image");
  if (v.has_audio()) throw refuse("an audio clip");
  if (!v.has_tensor()) throw refuse("a value of a kind lockstep does not know (or none)");
  const tb::TensorProto& t = v.tensor();
  if (t.tensor_shape().unknown_rank()) throw refuse("a tensor of unknown rank");
  std::string shape;
  bool scalar = true;
  for (const auto& d : t.tensor_shape().dim()) {
    shape += (shape.empty() ? "" : ", ") + std::to_string(d.size());
    if (d.size() != 1) scalar = false;
  }
  if (!scalar) throw refuse("a tensor of shape [" + shape + "]");
  const std::string& content = t.tensor_content();
  if (t.dtype() == tb::DT_FLOAT) {
    if (t.float_val_size() == 1 && content.empty()) return {static_cast<double>(t.float_val(0)), Series::Dtype::kFloat32};
    if (t.float_val_size() == 0 && t.double_val_size() == 0 && content.size() == 4)
      return {load_le_float(content), Series::Dtype::kFloat32};
    throw refuse("a DT_FLOAT tensor with " + std::to_string(t.float_val_size()) + " float_val and " +
                 std::to_string(content.size()) + " bytes of tensor_content (one value expected)");
  }
  if (t.dtype() == tb::DT_DOUBLE) {
    if (t.double_val_size() == 1 && content.empty()) return {t.double_val(0), Series::Dtype::kFloat64};
    if (t.double_val_size() == 0 && t.float_val_size() == 0 && content.size() == 8)
      return {load_le_double(content), Series::Dtype::kFloat64};
    throw refuse("a DT_DOUBLE tensor with " + std::to_string(t.double_val_size()) + " double_val and " +
                 std::to_string(content.size()) + " bytes of tensor_content (one value expected)");
  }
  throw refuse("a tensor of dtype " + std::to_string(static_cast<int>(t.dtype())) +
               " (TensorFlow DataType; 1 is DT_FLOAT, 2 DT_DOUBLE)");
}

// A requested scalar found by a parsing thread, fed to its SeriesBuilder
// by the reading thread in file order.
struct Found {
  int64_t step;
  double value;
  uint64_t offset;
  uint32_t series;
  Series::Dtype dtype;
};

// What one thread makes of a run of records: the scalars, in order, and
// the first error, which comes after all of them in the file.
struct Part {
  tb::Event event;  // reused: parsing clears it but keeps its allocations
  std::vector<Found> found;
  std::exception_ptr error;
  std::unordered_set<std::string> seen;  // tags not requested
};

void parse_records(const TfRecordReader& reader, const TfRecord* begin, const TfRecord* end, const SeriesSet& set,
                   Part& part) noexcept {
  part.found.clear();
  part.error = nullptr;
  try {
    for (const TfRecord* r = begin; r != end; ++r) {
      reader.check_data_crc(*r);
      if (!part.event.ParseFromArray(r->data, static_cast<int>(r->size)))
        throw BadInput(reader.path(), "byte " + std::to_string(r->offset),
                       "a TensorBoard Event protobuf in the record (its " + std::to_string(r->size) +
                           " bytes do not parse)");
      if (!part.event.has_summary()) continue;
      for (const tb::Summary::Value& v : part.event.summary().value()) {
        int i = set.find(v.tag());
        if (i < 0) {
          if (part.seen.size() < kMaxSeenTags) part.seen.insert(v.tag());
          continue;
        }
        Scalar s = scalar_of(v, reader.path(), r->offset);
        part.found.push_back({part.event.step(), s.value, r->offset, static_cast<uint32_t>(i), s.dtype});
      }
    }
  } catch (...) {
    part.error = std::current_exception();
  }
}

// Reads one event file into the builders of `set`. Records come in
// batches of a buffer's worth; each batch is cut into one run per part,
// parsed in parallel (protobuf parsing is most of the time), then fed to
// the builders in file order, so every message is the one a sequential
// read would give.
void read_event_file(const std::string& file, std::vector<Part>& parts, SeriesSet& set,
                     std::unordered_set<std::string>& seen) {
  TfRecordReader reader(file);
  std::vector<TfRecord> batch;
  std::vector<std::future<void>> helpers;
  bool first_batch = true;
  while (reader.next_batch(batch, kBatchRecords)) {
    size_t n_parts = batch.size() < kParallelRecords ? 1 : parts.size();
    size_t per = (batch.size() + n_parts - 1) / n_parts;
    auto run = [&](size_t p) {
      size_t b = std::min(batch.size(), p * per), e = std::min(batch.size(), b + per);
      parse_records(reader, batch.data() + b, batch.data() + e, set, parts[p]);
    };
    helpers.clear();
    for (size_t p = 1; p < n_parts; ++p) {
      try {
        helpers.push_back(std::async(std::launch::async, run, p));
      } catch (const std::system_error&) {  // no thread to be had: parse it here
        run(p);
      }
    }
    run(0);
    for (auto& h : helpers) h.get();
    if (first_batch) {
      // Room for the whole file's values, extrapolated from its first
      // batch, so long series are not copied while they grow. Every value
      // takes more than 16 bytes of file: the estimate stays below that.
      first_batch = false;
      uint64_t covered = batch.back().offset + 16 + batch.back().size - batch.front().offset;
      std::vector<size_t> counts(set.size(), 0);
      for (size_t p = 0; p < n_parts; ++p)
        for (const Found& f : parts[p].found) ++counts[f.series];
      for (size_t i = 0; i < set.size(); ++i) {
        double estimate = static_cast<double>(counts[i]) * static_cast<double>(reader.size()) /
                          static_cast<double>(covered) * 1.02;
        estimate = std::min(estimate, static_cast<double>(reader.size() / 16));
        set.reserve(i, set.at(i).size() + static_cast<size_t>(estimate));
      }
    }
    for (size_t p = 0; p < n_parts; ++p) {
      for (const Found& f : parts[p].found) set.at(f.series).add(f.step, f.value, f.dtype, f.offset);
      if (parts[p].error) std::rethrow_exception(parts[p].error);
    }
  }
  for (Part& p : parts) {
    for (const std::string& t : p.seen)
      if (seen.size() < kMaxSeenTags) seen.insert(t);
    p.seen.clear();
  }
}

// Threads that parse records: the machine's, at most 4.
size_t parse_threads() {
  unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : std::min(n, 4u);
}

}  // namespace

std::vector<std::string> tensorboard_event_files(const std::string& path) {
  std::error_code ec;
  fs::file_status st = fs::status(path, ec);
  if (ec || !fs::exists(st))
    throw BadInput(path, "", "a TensorBoard event file or a folder of them (it does not exist)");
  if (!fs::is_directory(st)) return {path};
  std::vector<std::string> names;
  fs::directory_iterator it(path, ec);
  if (ec) throw io_error(path, "list the folder", ec.value());
  for (; it != fs::directory_iterator(); it.increment(ec)) {
    std::string name = it->path().filename().string();
    if (name.compare(0, kEventPrefix.size(), kEventPrefix) != 0) continue;
    // An event file's name on something else (a folder, a FIFO, a link to
    // a device) is refused, not skipped: its events would be silently lost.
    std::error_code type_ec;
    if (!it->is_regular_file(type_ec))
      throw BadInput(it->path().string(), "",
                     "a regular TensorBoard event file (named events.out.tfevents.*), got " +
                         std::string(!it->exists(type_ec)      ? "a link to nothing"
                                     : it->is_directory(type_ec) ? "a folder"
                                     : it->is_fifo(type_ec)      ? "a FIFO"
                                                                 : "a device or a socket, or a link to one"));
    names.push_back(name);
  }
  if (ec) throw io_error(path, "list the folder", ec.value());
  if (names.empty())
    throw BadInput(path, "",
                   "a folder holding TensorBoard event files (events.out.tfevents.*); it has none (subfolders are "
                   "not searched: name the run's own folder)");
  std::sort(names.begin(), names.end());
  std::vector<std::string> files;
  for (const std::string& n : names) files.push_back((fs::path(path) / n).string());
  return files;
}

std::map<std::string, Series> read_tensorboard_metrics(const MetricsSpec& spec) {
  std::vector<std::string> files = tensorboard_event_files(spec.path);
  IngestSources sources("byte");
  SeriesSet set(spec.series, "tag", sources);
  std::unordered_set<std::string> seen;
  std::vector<Part> parts(parse_threads());
  for (const std::string& file : files) {
    uint32_t index = sources.add(file);
    set.begin_file(index);
    read_event_file(file, parts, set, seen);
  }
  for (const std::string& t : seen) set.note_unrequested(t);
  std::string where = "in " + std::to_string(files.size()) + " event file" + (files.size() == 1 ? "" : "s");
  return set.finish(spec.path, where);
}

}  // namespace lockstep
