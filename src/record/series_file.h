// The series sidecar: a run record whose series are long keeps their
// numbers in one binary file beside its JSON, because 17-digit decimal text
// is ~20 bytes a value and parses at about 100-200 MB/s, while raw binary64
// is 8 bytes and needs no parsing (1,000,000 steps x 8 metrics: 156 MB of
// JSON against 64 MB, read in a fraction of the time).
//
//   "series_data": {"file": "run.3f9a0c1b2d4e5f60.series", "bytes": 64000000,
//                   "xxh3_128": "<32 hex digits>"},
//   "series": {"loss": {"dtype": "float32", "values": {"offset": 0, "count": 1000000}}}
//
// Layout: the arrays back to back, each value an IEEE-754 binary64 in
// little-endian byte order; a reference is a byte offset (a multiple of 8)
// and a count. Wherever a record holds an array of per-step numbers
// ("values", "mean", "std" of a series, "resources.step_time_s") it may hold
// a reference instead. The file name is a plain name in the JSON's folder
// ending in the first 16 hex digits of the file's XXH3-128, so a new sidecar
// never replaces the one an older JSON points at: the JSON is written last
// and switches atomically. Size and hash are checked before any value is
// used (exit 2 naming the file otherwise).
//
// Goldens never use a sidecar: they are one self-describing file that git
// diffs, review reads from git objects and the content hash covers.
//
//   SeriesPacker pack;                          // writing
//   json["values"] = pack.add(series.values);
//   SeriesBlob blob = SeriesBlob::open(view.at("series_data"), json_dir);   // reading
//   blob.want(loss_values_node); blob.read();
//   std::vector<double> v = blob.take(loss_values_node);
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace lockstep {

class JsonView;
class TakenArrays;

/// Series longer than this many steps go to a sidecar when lockstep writes
/// a run record; shorter records stay one JSON file.
inline constexpr int64_t kInlineSeriesSteps = 10000;

/// Collects arrays for a sidecar being written, without copying them: the
/// arrays given to add() must stay alive and unchanged until the sidecar
/// is written (write_run_record writes it from the record's own series).
class SeriesPacker {
 public:
  /// Appends `values` and returns their reference {"offset": O, "count": N}.
  nlohmann::json add(const std::vector<double>& values);
  /// The sidecar's bytes so far, as the pieces to write in order.
  const std::vector<std::string_view>& parts() const { return parts_; }
  /// {"file": "<stem>.<16 hex>.series", "bytes": N, "xxh3_128": "..."} for a
  /// record whose JSON file name (without folder) is `json_name`.
  nlohmann::json descriptor(const std::string& json_name) const;

 private:
  std::vector<std::string_view> parts_;
  size_t size_ = 0;
};

/// A sidecar being read: open() checks it, want() registers the references
/// found in the JSON, read() reads the file once, hashing every byte and
/// copying each wanted range straight into its array, and take() hands the
/// arrays out. What is hashed is exactly what is used, whatever another
/// process does to the file meanwhile, and no byte is loaded twice.
class SeriesBlob {
 public:
  SeriesBlob(SeriesBlob&&) noexcept;
  SeriesBlob& operator=(SeriesBlob&&) noexcept;
  ~SeriesBlob();

  /// Checks the descriptor (a record's "series_data") and opens the sidecar
  /// in folder `dir`. Throws exit-2 Error naming the JSON file and field when
  /// the name is not a plain file name or the file is missing, not a regular
  /// file or unreadable, and naming the sidecar too when its size differs.
  static SeriesBlob open(const JsonView& descriptor, const std::string& dir);

  /// Registers a reference node for read(). Throws exit-2 Error naming the
  /// node when it is not {"offset", "count"}, the offset is not a multiple
  /// of 8, the range runs past the end of the file or overlaps the range of
  /// a reference registered before (lockstep writes each array once; shared
  /// ranges would let a small record decode far more than its file holds).
  void want(const JsonView& reference);

  /// Reads and verifies the file. Throws exit-2 Error naming the sidecar
  /// when its hash differs or it changes size while being read.
  void read();

  /// The numbers of a reference registered with want(), after read().
  std::vector<double> take(const JsonView& reference);

 private:
  SeriesBlob();
  struct State;
  std::unique_ptr<State> state_;
};

/// The per-step numbers of `node`: a JSON array (numbers, or the strings
/// "nan", "inf", "-inf"), a reference to an array taken out while parsing
/// when `taken` is given (core/json_io.h), or, when `blob` is given, a
/// sidecar reference registered with blob->want() and read. Throws exit-2
/// Error naming the node otherwise.
std::vector<double> number_array(const JsonView& node, SeriesBlob* blob, TakenArrays* taken = nullptr);

/// Throws the exit-2 Error for element `i` of the numbers number_array()
/// read from `node`: named by its own path ("series.loss.values[3]") for
/// an array in the JSON, taken or not, by index for a sidecar reference.
[[noreturn]] void fail_number(const JsonView& node, size_t i, const std::string& expected);

/// Calls blob.want() for every sidecar reference in a record's "series"
/// and "resources.step_time_s" (the places a record may hold one).
void want_record_references(const JsonView& record, SeriesBlob& blob);

/// The folder a record's sidecar is looked up in: the folder of the JSON
/// file itself, symbolic links resolved (a link latest.json -> runs/7/run.json
/// finds runs/7/run.<hash>.series).
std::string sidecar_dir_of(const std::string& json_path);

/// The sidecar name of a record stored as `json_name` whose sidecar has
/// XXH3-128 `hash_hex`: "<json_name without .json>.<first 16 hex>.series".
std::string sidecar_name(const std::string& json_name, const std::string& hash_hex);

/// True when `file_name` is a sidecar name of `json_name` (any hash), so a
/// writer can remove the stale ones.
bool is_sidecar_of(const std::string& file_name, const std::string& json_name);

/// The other record name whose sidecars share `json_name`'s name pattern:
/// "run" for "run.json", "run.json" for "run". A writer leaves the stale
/// sidecars alone while that record exists beside it.
std::string sidecar_twin_of(const std::string& json_name);

}  // namespace lockstep
