#include "ingest/arithmetic_runs.h"

#include <algorithm>

namespace lockstep {

namespace {
// A run costs three words, a plain element one: past this many runs, and
// when they outnumber a third of the elements, the array is smaller.
constexpr size_t kMinRunsBeforePlain = 16;
}  // namespace

void ArithmeticRuns::push_back(uint64_t v) {
  if (plain_) {
    plain_values_.push_back(v);
  } else if (runs_.empty()) {
    runs_.push_back({0, v, 0});
  } else {
    Run& r = runs_.back();
    size_t count = size_ - r.begin;
    if (count == 1) {
      r.stride = v - r.first;
    } else if (v != last_ + r.stride) {
      if (runs_.size() >= kMinRunsBeforePlain && runs_.size() * 3 > size_) {
        plain_values_ = to_vector();
        plain_values_.push_back(v);
        runs_ = {};
        plain_ = true;
      } else {
        runs_.push_back({size_, v, 0});
      }
    }
  }
  ++size_;
  last_ = v;
}

uint64_t ArithmeticRuns::operator[](size_t i) const {
  if (plain_) return plain_values_[i];
  auto after = std::upper_bound(runs_.begin(), runs_.end(), i, [](size_t x, const Run& r) { return x < r.begin; });
  const Run& r = *(after - 1);
  return r.first + static_cast<uint64_t>(i - r.begin) * r.stride;
}

void ArithmeticRuns::clear() {
  runs_ = {};
  plain_values_ = {};
  plain_ = false;
  size_ = 0;
  last_ = 0;
}

}  // namespace lockstep
