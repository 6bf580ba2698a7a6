#include "record/batch_probe.h"

#include "core/hash.h"
#include "core/error.h"

#include <cmath>
#include <stdexcept>

#include "core/float_bits.h"
#include "core/json_io.h"

namespace lockstep {

const std::vector<std::string>& tensor_stat_names() {
  static const std::vector<std::string> names = {"sum", "mean", "std", "min", "max"};
  return names;
}

double tensor_stat(const TensorStats& s, const std::string& name) {
  if (name == "sum") return s.sum;
  if (name == "mean") return s.mean;
  if (name == "std") return s.std;
  if (name == "min") return s.min;
  if (name == "max") return s.max;
  throw std::invalid_argument("unknown tensor statistic " + name);
}

nlohmann::json to_json(const TensorStats& s) {
  return {{"shape", s.shape},
          {"dtype", s.dtype},
          {"xxh3_128", s.xxh3_128},
          {"sum", double_to_json(s.sum)},
          {"mean", double_to_json(s.mean)},
          {"std", double_to_json(s.std)},
          {"min", double_to_json(s.min)},
          {"max", double_to_json(s.max)},
          {"nan_count", s.nan_count},
          {"inf_count", s.inf_count}};
}

nlohmann::json to_json(const BatchProbe& p) {
  nlohmann::json out = {{"batch", p.batch},
                        {"sample_index_hash", p.sample_index_hash},
                        {"inputs", to_json(p.inputs)},
                        {"labels", to_json(p.labels)}};
  if (p.rank >= 0) out["rank"] = p.rank;
  return out;
}

std::string batch_content_difference(const BatchProbe& a, const BatchProbe& b) {
  if (a.sample_index_hash != b.sample_index_hash)
    return "sample_index_hash " + a.sample_index_hash + " → " + b.sample_index_hash + " (other samples)";
  if (a.inputs.xxh3_128 != b.inputs.xxh3_128)
    return "inputs (xxh3 " + a.inputs.xxh3_128.substr(0, 12) + "… → " + b.inputs.xxh3_128.substr(0, 12) + "…)";
  if (a.labels.xxh3_128 != b.labels.xxh3_128)
    return "labels (xxh3 " + a.labels.xxh3_128.substr(0, 12) + "… → " + b.labels.xxh3_128.substr(0, 12) + "…)";
  return "";
}


TensorStats tensor_stats_from_json(const JsonView& n) {
  n.allow_keys({"shape", "dtype", "xxh3_128", "sum", "mean", "std", "min", "max", "nan_count",
                "inf_count"});
  TensorStats s;
  JsonView shape = n.at("shape");
  if (shape.size() > 64) shape.fail("at most 64 dimensions, got " + std::to_string(shape.size()));
  for (size_t i = 0; i < shape.size(); ++i) s.shape.push_back(shape.at(i).as_int(0));
  s.dtype = n.at("dtype").as_enum({"float32", "float64", "float16", "bfloat16", "int64", "int32", "int16",
                                   "int8", "uint8", "bool"});
  s.xxh3_128 = n.at("xxh3_128").as_string();
  if (!is_hex_digest(s.xxh3_128, 32)) n.at("xxh3_128").fail("32 lowercase hex digits (XXH3-128)");
  s.sum = n.at("sum").as_double();
  s.mean = n.at("mean").as_double();
  s.std = n.at("std").as_double();
  s.min = n.at("min").as_double();
  s.max = n.at("max").as_double();
  s.nan_count = n.at("nan_count").as_uint();
  s.inf_count = n.at("inf_count").as_uint();
  if (s.std < 0) n.at("std").fail("a population standard deviation >= 0, got " + format_double(s.std));
  if (s.min > s.max) n.at("min").fail("at most max (" + format_double(s.max) + "), got " + format_double(s.min));
  return s;
}


bool same_batch(const BatchProbe& a, const BatchProbe& b) {
  return a.sample_index_hash == b.sample_index_hash && a.inputs.xxh3_128 == b.inputs.xxh3_128 &&
         a.labels.xxh3_128 == b.labels.xxh3_128;
}

std::vector<BatchProbe> interleave_rank_probes(const std::vector<std::vector<BatchProbe>>& per_rank,
                                               const std::string& where, int64_t first_batch) {
  std::vector<BatchProbe> out;
  if (per_rank.empty()) return out;
  size_t n = per_rank.front().size();
  for (size_t r = 1; r < per_rank.size(); ++r)
    if (per_rank[r].size() != n)
      throw Error(ExitCode::kRegression, where + ": rank " + std::to_string(r) + " has " +
                                             std::to_string(per_rank[r].size()) + " batches, rank 0 " +
                                             std::to_string(n) + " (every rank must see as many batches)");
  out.reserve(n * per_rank.size());
  for (size_t k = 0; k < n; ++k)
    for (size_t r = 0; r < per_rank.size(); ++r) {
      out.push_back(per_rank[r][k]);
      out.back().rank = static_cast<int64_t>(r);
      out.back().batch = first_batch + static_cast<int64_t>(out.size() - 1);
    }
  return out;
}

BatchProbe batch_probe_from_json(const JsonView& n) {
  n.allow_keys({"batch", "rank", "sample_index_hash", "inputs", "labels"});
  BatchProbe p;
  p.batch = n.at("batch").as_int(0);
  if (n.has("rank")) p.rank = n.at("rank").as_int(0, 1023);
  p.sample_index_hash = n.at("sample_index_hash").as_string();
  if (!is_hex_digest(p.sample_index_hash, 16))
    n.at("sample_index_hash").fail("16 lowercase hex digits (XXH3-64)");
  p.inputs = tensor_stats_from_json(n.at("inputs"));
  p.labels = tensor_stats_from_json(n.at("labels"));
  return p;
}

}  // namespace lockstep
