// Assembles one lockstep Series from the (step, value) points a log reader
// finds, and enforces the rules every metrics format shares
// (docs/trainers.md):
//
//   IngestSources files("byte");               // positions are byte offsets
//   uint32_t f = files.add("run/events.out.tfevents.1");
//   SeriesBuilder loss("tag 'train/loss'", files);
//   loss.begin_file(f);
//   loss.add(0, 2.5, Series::Dtype::kFloat32, 88);    // step, value, dtype, byte
//   Series s = loss.finish();                  // merged, grid-checked; exit 2 otherwise
//
//   SeriesSet set(spec.series, "tag", files);   // one builder per distinct tag
//   if (int i = set.find("train/loss"); i >= 0) set.at(i).add(...);
//   std::map<std::string, Series> out = set.finish(spec.path, "in the event files");
//
// Within one file the steps of a series must not go down; a step logged
// twice is accepted when both values have the same bits (a restart's
// re-log), else exit 2 naming both places. Across files (TensorBoard) the
// same holds after merging by step. The merged steps must then form a
// regular grid s0, s0+k, s0+2k, ... (k = the first gap): a missing step is
// exit 2 naming it. Series::steps is left empty when the steps are exactly
// 0, 1, ..., n-1.
#pragma once

#include <cstdint>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "ingest/arithmetic_runs.h"
#include "record/series.h"

namespace lockstep {

/// The files a reader has opened, so a value's origin can be named in a
/// message ("<file>: line 12" or "<file>: byte 4096").
class IngestSources {
 public:
  /// `unit` is what a position counts: "line" or "byte".
  explicit IngestSources(std::string unit) : unit_(std::move(unit)) {}

  /// Registers a file and returns its index; throws exit 2 beyond 65535 files.
  uint32_t add(const std::string& path);
  /// The path registered as `index`.
  const std::string& file(uint32_t index) const { return files_.at(index); }
  /// "line 12" or "byte 4096".
  std::string position(uint64_t position) const { return unit_ + " " + std::to_string(position); }

 private:
  std::string unit_;
  std::vector<std::string> files_;
};

/// Most values one series may hold (64 Mi): a larger log is refused with
/// exit 2 instead of growing memory without bound.
constexpr size_t kMaxSeriesValues = size_t{1} << 26;

/// The line after which a line-based reader calls SeriesSet::extrapolate:
/// late enough for a fair estimate, early enough to copy little.
constexpr uint64_t kExtrapolateAfterLines = 4096;

/// Collects the points of one series and turns them into a Series.
class SeriesBuilder {
 public:
  /// `label` names the series in messages, e.g. "tag 'train/loss'",
  /// "key 'loss'", "column 'loss'".
  SeriesBuilder(std::string label, const IngestSources& sources);

  /// Points added next come from file `file` (an index of the sources).
  void begin_file(uint32_t file);

  /// Adds the value logged for `step` at `position` (line or byte offset)
  /// of the current file. Throws exit-2 Error naming the file, the
  /// position and the label for a negative step, a step lower than the
  /// previous one of this series in this file, the same step with a value
  /// of other bits, a change of dtype, or too many values.
  void add(int64_t step, double value, Series::Dtype dtype, uint64_t position);

  /// Notes that the source marked `step` not logged (Megatron-LM's "nan"):
  /// no point, said in the series' not_logged (the first 8) and count.
  void skip(int64_t step) {
    if (not_logged_.size() < 8) not_logged_.push_back(step);
    ++not_logged_count_;
  }

  /// The steps may leave holes in their grid: the reader checks the grid
  /// itself and skips steps its source marks not logged (Megatron-LM's
  /// "nan"); finish() then checks only the order.
  void allow_gaps() { gaps_ = true; }

  /// Number of points kept so far (re-logged duplicates are not counted).
  size_t size() const { return steps_.size(); }

  /// Makes room for `values` points in all (capped at kMaxSeriesValues), so
  /// a long series is not copied as it grows: a reader's estimate, e.g.
  /// from SeriesSet::extrapolate. Room never touched costs no memory.
  void reserve(size_t values);

  /// Reserves room for a whole file from the points so far: `done` bytes
  /// of `total` read, size() scaled by total / done, plus an eighth. Call
  /// it once, early (a reader does after kExtrapolateAfterLines lines), so
  /// that a long series grows in place instead of being copied at each
  /// doubling.
  void extrapolate(uint64_t done, uint64_t total);

  /// Merges the files' points by step (identical re-logs accepted), checks
  /// the grid and returns the series; throws exit-2 Error naming the label
  /// and the step for a conflicting re-log or a missing or off-grid step.
  /// Must not be called on an empty builder. The points move into the
  /// series (no copy when the files did not overlap).
  Series finish();

 private:
  /// Orders the points by step (stable: files in the order read) and drops
  /// identical re-logs; exit 2 for a step re-logged with other bits.
  void merge_files();
  std::string where(uint64_t origin) const;
  const std::string& file_of(uint64_t origin) const;
  std::string position_of(uint64_t origin) const;

  std::string label_;
  const IngestSources& sources_;
  // The points: step, value, origin (file << 48 | position) of each. The
  // values become the Series' own; steps and origins are almost always
  // arithmetic (steps 0, 1, 2, ...; lines 2, 3, 4, ...), so they take a few
  // runs instead of 16 bytes a point (ingest/arithmetic_runs.h).
  ArithmeticRuns steps_;
  std::vector<double> values_;
  ArithmeticRuns origins_;
  uint32_t file_ = 0;
  int64_t last_step_in_file_ = -1;  // last step of the current file, -1 before its first
  size_t last_in_file_ = 0;          // index of that point
  bool sorted_ = true;               // steps_ strictly ascending so far
  bool gaps_ = false;                // allow_gaps()
  std::vector<int64_t> not_logged_;  // skip(): the first 8
  uint64_t not_logged_count_ = 0;
  bool have_dtype_ = false;
  Series::Dtype dtype_ = Series::Dtype::kFloat64;
  uint64_t dtype_origin_ = 0;
};

/// What SeriesSet::finish throws when a requested tag, key or column
/// never appears in the log: an exit-2 Error whose message names the log,
/// with its parts kept so a caller that knows where the series were
/// declared (a smoke config's trainer.metrics.series) can name that field
/// instead.
class MissingSeries : public Error {
 public:
  MissingSeries(const std::string& message, std::string kind, std::string key, std::vector<std::string> names,
                std::string hint)
      : Error(ExitCode::kBadInput, message), kind(std::move(kind)), key(std::move(key)), names(std::move(names)),
        hint(std::move(hint)) {}
  std::string kind;                ///< "tag", "key", "column", "metric"
  std::string key;                 ///< the one that never appears
  std::vector<std::string> names;  ///< the lockstep series reading it, sorted
  std::string hint;                ///< " (did you mean 'x'?)", " (keys logged: ...)" or ""
};

/// The builders of one read: one per distinct tag, key or column
/// requested (two series may read the same one), and the lockstep names.
class SeriesSet {
 public:
  /// `series` maps lockstep names to what they are read from; `kind` is
  /// "tag", "key" or "column".
  SeriesSet(const std::map<std::string, std::string>& series, std::string kind, const IngestSources& sources);

  /// Index of the builder reading `key`, or -1 when it was not requested.
  /// Called for every value of a log (TensorBoard: millions), so it is a
  /// small open-addressing table rather than a map walk.
  int find(std::string_view key) const {
    for (uint64_t slot = hash(key) & mask_;; slot = (slot + 1) & mask_) {
      int32_t i = slots_[slot];
      if (i < 0) return -1;
      if (keys_[static_cast<size_t>(i)] == key) return i;
    }
  }
  /// Builder `index`, 0 <= index < size().
  SeriesBuilder& at(size_t index) { return builders_[index]; }
  /// Number of distinct tags, keys or columns requested.
  size_t size() const { return builders_.size(); }
  /// The tag, key or column builder `index` reads.
  const std::string& key(size_t index) const { return keys_[index]; }

  /// begin_file on every builder.
  void begin_file(uint32_t file);

  /// Remembers a tag/key the log has but nobody asked for (the first 1000
  /// distinct ones), so a misspelt one can be named by finish(). Call it
  /// only when find() returned -1.
  void note_unrequested(std::string_view key) {
    if (unrequested_.size() < kMaxUnrequested) unrequested_.emplace(key);
  }

  /// reserve on builder `index` (a reader's estimate of its values).
  void reserve(size_t index, size_t values) { builders_[index].reserve(values); }

  /// SeriesBuilder::extrapolate on every builder.
  void extrapolate(uint64_t done, uint64_t total) {
    for (SeriesBuilder& b : builders_) b.extrapolate(done, total);
  }

  /// Finishes every builder, lockstep name -> Series. Throws exit-2 Error
  /// naming `path` and the first tag/key/column that has no value ("...
  /// never appears <where>", then "did you mean 'x'?" or the unrequested
  /// ones noted, when at most 20) as MissingSeries, or whatever
  /// SeriesBuilder::finish throws.
  std::map<std::string, Series> finish(const std::string& path, const std::string& where);

 private:
  static constexpr size_t kMaxUnrequested = 1000;
  std::string kind_;
  std::map<std::string, std::string> series_;
  std::set<std::string, std::less<>> unrequested_;
  /// Length and the first and last 8 bytes, mixed: cheap, and enough to
  /// tell apart the handful of tags a run asks for (collisions only probe).
  static uint64_t hash(std::string_view key) {
    uint64_t a = 0, b = 0;
    size_t n = key.size();
    if (n >= 8) {  // two unaligned loads
      std::memcpy(&a, key.data(), 8);
      std::memcpy(&b, key.data() + n - 8, 8);
    } else {
      std::memcpy(&a, key.data(), n);
    }
    uint64_t h = (a ^ (b * 0x9e3779b97f4a7c15ull) ^ n) * 0xff51afd7ed558ccdull;
    return h ^ (h >> 29);
  }

  std::map<std::string, size_t, std::less<>> index_;
  std::vector<int32_t> slots_;  // open addressing over keys_; -1 = empty
  uint64_t mask_ = 0;
  std::vector<std::string> keys_;
  std::vector<SeriesBuilder> builders_;
};

}  // namespace lockstep
