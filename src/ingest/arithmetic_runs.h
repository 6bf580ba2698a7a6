// A sequence of 64-bit integers kept as runs of arithmetic progressions:
// the steps and origins a SeriesBuilder collects. A log's steps 0, 1, 2,
// ... or 0, 10, 20, ..., and the lines or byte offsets its values sit at,
// are a handful of runs whatever their count, where a plain array costs 8
// bytes a point (1,000,000 steps x 8 metrics: 128 MB of fresh memory, and
// its page faults, for two arrays nobody reads unless an error is named).
// A sequence without that structure (byte offsets of values of varying
// length) turns into a plain array as soon as its runs would take more
// room than one.
//
//   ArithmeticRuns steps;
//   for (int64_t s = 0; s < 1000000; s += 10) steps.push_back(s);   // one run
//   steps[41];              // 410
//   steps.back();           // 999990
//   steps.to_vector();      // the 100,000 numbers, for a caller that sorts them
//
// Values are kept modulo 2^64 (uint64 arithmetic), so any int64 or uint64
// sequence round-trips exactly.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace lockstep {

/// A push-only sequence of 64-bit integers, compressed into runs of
/// constant stride; O(1) push_back and back(), O(log runs) indexing.
class ArithmeticRuns {
 public:
  /// Appends `v` (an int64 or uint64 bit pattern).
  void push_back(uint64_t v);

  /// Element `i`, 0 <= i < size() (not checked).
  uint64_t operator[](size_t i) const;
  /// The last element; the sequence must not be empty.
  uint64_t back() const { return last_; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

  /// Number of runs (1 for an arithmetic sequence), or 0 once the
  /// sequence is a plain array; for tests and the fast paths of callers.
  size_t runs() const { return plain_ ? 0 : runs_.size(); }
  /// The stride of a sequence that is one run (0 for a single element).
  uint64_t stride() const { return runs_.empty() ? 0 : runs_.front().stride; }

  /// Every element, in order, as T (int64_t for steps).
  template <class T = uint64_t>
  std::vector<T> to_vector() const {
    std::vector<T> out;
    out.reserve(size_);
    for_each([&](uint64_t v) { out.push_back(static_cast<T>(v)); });
    return out;
  }

  /// Calls f(value) for every element, in order.
  template <class F>
  void for_each(F f) const {
    if (plain_) {
      for (uint64_t v : plain_values_) f(v);
      return;
    }
    for (size_t k = 0; k < runs_.size(); ++k) {
      size_t end = k + 1 < runs_.size() ? runs_[k + 1].begin : size_;
      uint64_t v = runs_[k].first;
      for (size_t i = runs_[k].begin; i < end; ++i, v += runs_[k].stride) f(v);
    }
  }

  /// Empties the sequence and releases its memory.
  void clear();

 private:
  struct Run {
    size_t begin;     // index of the run's first element
    uint64_t first;   // its value
    uint64_t stride;  // value(begin + k) = first + k * stride (mod 2^64)
  };
  std::vector<Run> runs_;
  std::vector<uint64_t> plain_values_;  // once plain_
  bool plain_ = false;
  size_t size_ = 0;
  uint64_t last_ = 0;
};

}  // namespace lockstep
