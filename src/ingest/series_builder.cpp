#include "ingest/series_builder.h"

#include <algorithm>
#include <cstring>

#include "core/error.h"
#include "core/json_io.h"
#include "core/float_bits.h"
#include "core/hash.h"

namespace lockstep {

namespace {

constexpr int kPositionBits = 48;
constexpr uint64_t kPositionMask = (uint64_t{1} << kPositionBits) - 1;
constexpr uint32_t kMaxFiles = (uint32_t{1} << (64 - kPositionBits)) - 1;

uint64_t bits_of(double v) {
  uint64_t b;
  std::memcpy(&b, &v, sizeof b);
  return b;
}

double value_of(uint64_t bits) {
  double v;
  std::memcpy(&v, &bits, sizeof v);
  return v;
}

// "0.5", or "nan (bits 0x7ff8000000000001)" where the decimal form alone
// would not tell two values apart.
std::string show(uint64_t bits, uint64_t other) {
  std::string a = format_double(value_of(bits));
  if (a == format_double(value_of(other))) a += " (bits 0x" + hex64(bits) + ")";
  return a;
}

}  // namespace

uint32_t IngestSources::add(const std::string& path) {
  if (files_.size() >= kMaxFiles)
    throw BadInput(path, "", "at most " + std::to_string(kMaxFiles) + " files in one read");
  files_.push_back(path);
  return static_cast<uint32_t>(files_.size() - 1);
}

SeriesBuilder::SeriesBuilder(std::string label, const IngestSources& sources)
    : label_(std::move(label)), sources_(sources) {}

const std::string& SeriesBuilder::file_of(uint64_t origin) const {
  return sources_.file(static_cast<uint32_t>(origin >> kPositionBits));
}

std::string SeriesBuilder::position_of(uint64_t origin) const {
  return sources_.position(origin & kPositionMask);
}

std::string SeriesBuilder::where(uint64_t origin) const { return file_of(origin) + " (" + position_of(origin) + ")"; }

void SeriesBuilder::begin_file(uint32_t file) {
  file_ = file;
  last_step_in_file_ = -1;
}

void SeriesBuilder::reserve(size_t values) {
  if (values > kMaxSeriesValues) values = kMaxSeriesValues;
  values_.reserve(values);
}

void SeriesBuilder::extrapolate(uint64_t done, uint64_t total) {
  if (done == 0 || total <= done) return;
  double estimate = static_cast<double>(size()) * (static_cast<double>(total) / static_cast<double>(done)) * 1.125;
  reserve(static_cast<size_t>(std::min(estimate, static_cast<double>(kMaxSeriesValues))) + 16);
}

void SeriesBuilder::add(int64_t step, double value, Series::Dtype dtype, uint64_t position) {
  uint64_t origin = (static_cast<uint64_t>(file_) << kPositionBits) | (position & kPositionMask);
  bool fast = step > last_step_in_file_ && have_dtype_ && dtype == dtype_ && steps_.size() < kMaxSeriesValues;
  if (!fast) {  // the first point, or something to check (and maybe report)
    const std::string& file = sources_.file(file_);
    std::string field = sources_.position(position) + ": " + label_;
    if (step < 0) throw BadInput(file, field, "a non-negative step, got step " + std::to_string(step));
    if (!have_dtype_) {
      have_dtype_ = true;
      dtype_ = dtype;
      dtype_origin_ = origin;
    } else if (dtype != dtype_) {
      throw BadInput(file, field,
                     std::string(dtype_name(dtype_)) + " values, as at " + where(dtype_origin_) + "; got a " +
                         dtype_name(dtype) + " value at step " + std::to_string(step) +
                         " (one series keeps one dtype)");
    }
    if (last_step_in_file_ >= 0 && step <= last_step_in_file_) {
      uint64_t last_bits = bits_of(values_[last_in_file_]), bits = bits_of(value);
      uint64_t last_origin = origins_[last_in_file_];  // an error or a re-log: off the hot path
      if (step < last_step_in_file_)
        throw BadInput(file, field,
                       "steps in increasing order; step " + std::to_string(step) + " comes after step " +
                           std::to_string(last_step_in_file_) + " (" + position_of(last_origin) + ")");
      if (bits != last_bits)
        throw BadInput(file, field,
                       "one value per step; step " + std::to_string(step) +
                           " is logged twice with different values: " + show(last_bits, bits) + " at " +
                           position_of(last_origin) + ", " + show(bits, last_bits) + " here");
      return;  // the same step and bits again: a re-log
    }
    if (steps_.size() >= kMaxSeriesValues)
      throw BadInput(file, field, "at most " + std::to_string(kMaxSeriesValues) + " values per series");
  }
  if (!steps_.empty() && step <= static_cast<int64_t>(steps_.back())) sorted_ = false;  // files overlap
  steps_.push_back(static_cast<uint64_t>(step));
  values_.push_back(value);
  origins_.push_back(origin);
  last_step_in_file_ = step;
  last_in_file_ = steps_.size() - 1;
}

void SeriesBuilder::merge_files() {
  size_t n = steps_.size();
  const std::vector<int64_t> all_steps = steps_.to_vector<int64_t>();
  const std::vector<uint64_t> all_origins = origins_.to_vector();
  std::vector<uint32_t> order(n);
  for (size_t i = 0; i < n; ++i) order[i] = static_cast<uint32_t>(i);
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return all_steps[a] < all_steps[b]; });
  ArithmeticRuns steps, origins;
  std::vector<double> values;
  values.reserve(n);
  for (uint32_t i : order) {
    if (!steps.empty() && all_steps[i] == static_cast<int64_t>(steps.back())) {
      uint64_t first = bits_of(values.back()), again = bits_of(values_[i]);
      if (again != first)
        throw BadInput(file_of(all_origins[i]), position_of(all_origins[i]) + ": " + label_,
                       "step " + std::to_string(all_steps[i]) + " to repeat the value " + show(first, again) +
                           " that " + where(origins.back()) + " logged for it; got " + show(again, first) +
                           " (a step logged again, as by a restarted run, must repeat the same value)");
      continue;
    }
    steps.push_back(static_cast<uint64_t>(all_steps[i]));
    values.push_back(values_[i]);
    origins.push_back(all_origins[i]);
  }
  steps_ = std::move(steps);
  values_.swap(values);
  origins_ = std::move(origins);
}

Series SeriesBuilder::finish() {
  if (!sorted_) merge_files();  // overlapping files: a restarted run re-logged steps
  size_t n = steps_.size();
  // One run is a grid already (the steps ascend strictly); otherwise each
  // gap is checked, to name the first one off the grid.
  if (n >= 3 && !gaps_ && steps_.runs() != 1) {
    const std::vector<int64_t> steps = steps_.to_vector<int64_t>();
    int64_t k = steps[1] - steps[0];  // both non-negative: no overflow
    for (size_t i = 2; i < n; ++i) {
      int64_t gap = steps[i] - steps[i - 1];
      if (gap == k) continue;
      uint64_t origin = origins_[i];
      std::string grid = "every " + std::to_string(k) + " step" + (k == 1 ? "" : "s") + " from step " +
                         std::to_string(steps[0]);
      // In uint64: both are below 2^63, so their sum cannot wrap.
      std::string missing = std::to_string(static_cast<uint64_t>(steps[i - 1]) + static_cast<uint64_t>(k));
      if (gap > k)
        throw BadInput(file_of(origin), position_of(origin) + ": " + label_,
                       "step " + missing + " before step " + std::to_string(steps[i]) + ": the steps go " + grid +
                           ", and step " + missing + " is missing");
      throw BadInput(file_of(origin), position_of(origin) + ": " + label_,
                     "steps " + grid + " (the first two steps' gap); got step " + std::to_string(steps[i]) +
                         " after step " + std::to_string(steps[i - 1]));
    }
  }
  Series series;
  series.dtype = dtype_;
  series.not_logged = std::move(not_logged_);
  series.not_logged_count = not_logged_count_;
  not_logged_ = {};
  not_logged_count_ = 0;
  // Exactly 0, 1, ..., n-1 (the steps ascend strictly): a series whose
  // source left a step out (allow_gaps) keeps its steps, or every value
  // after the hole would move onto the step before it.
  bool dense = n > 0 && steps_[0] == 0 && steps_.back() == n - 1;
  series.values = std::move(values_);
  if (!dense) series.steps = steps_.to_vector<int64_t>();
  steps_.clear();
  values_ = {};
  origins_.clear();
  return series;
}

SeriesSet::SeriesSet(const std::map<std::string, std::string>& series, std::string kind, const IngestSources& sources)
    : kind_(std::move(kind)), series_(series) {
  for (const auto& [name, key] : series) {
    if (index_.count(key)) continue;
    index_.emplace(key, builders_.size());
    keys_.push_back(key);
    builders_.emplace_back(kind_ + " '" + key + "'", sources);
  }
  size_t size = 16;
  while (size < 2 * keys_.size()) size *= 2;
  slots_.assign(size, -1);
  mask_ = size - 1;
  for (size_t i = 0; i < keys_.size(); ++i) {
    uint64_t slot = hash(keys_[i]) & mask_;
    while (slots_[slot] >= 0) slot = (slot + 1) & mask_;
    slots_[slot] = static_cast<int32_t>(i);
  }
}

void SeriesSet::begin_file(uint32_t file) {
  for (SeriesBuilder& b : builders_) b.begin_file(file);
}

std::map<std::string, Series> SeriesSet::finish(const std::string& path, const std::string& where) {
  for (size_t i = 0; i < builders_.size(); ++i) {
    if (builders_[i].size() > 0) continue;
    std::string names;
    std::vector<std::string> readers;
    for (const auto& [name, key] : series_)
      if (key == keys_[i]) {
        names += (names.empty() ? "" : ", ") + name;
        readers.push_back(name);
      }
    std::vector<std::string> others(unrequested_.begin(), unrequested_.end());
    std::string hint = closest_spelling(keys_[i], others);
    std::string present;
    if (!hint.empty()) {
      present = " (did you mean '" + input_excerpt(hint) + "'?)";
    } else if (!others.empty() && others.size() <= 20) {
      present = " (" + kind_ + "s logged:";
      for (const std::string& t : others) present += " '" + input_excerpt(t) + "'";  // one line, cut
      present += ")";
    }
    throw MissingSeries(BadInput(path, kind_ + " '" + keys_[i] + "'",
                                 "the " + kind_ + " of series " + names + " " + where + "; it never appears" + present)
                            .what(),
                        kind_, keys_[i], readers, present);
  }
  std::vector<Series> done;
  done.reserve(builders_.size());
  for (SeriesBuilder& b : builders_) done.push_back(b.finish());
  std::vector<size_t> uses(builders_.size(), 0);
  for (const auto& [name, key] : series_) ++uses[index_.find(key)->second];
  std::map<std::string, Series> out;
  for (const auto& [name, key] : series_) {
    size_t i = index_.find(key)->second;
    if (--uses[i] == 0) out.emplace(name, std::move(done[i]));  // the last reader of it
    else out.emplace(name, done[i]);
  }
  return out;
}

}  // namespace lockstep
