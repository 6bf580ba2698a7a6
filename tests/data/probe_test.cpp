#include "data/probe.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <limits>
#include <tuple>

#include "core/hash.h"
#include "data/loader.h"
#include "data/tensor_stats.h"

namespace lockstep {
namespace {

// A probe is the statistics of data/tensor_stats.h (tested there against
// their definition), the XXH3-128 of the bytes, and shape and dtype.
TEST(Probe, IsTheStatisticsAndTheHashOfTheBytes) {
  std::vector<float> v = {1, 2, 3, 4, std::nanf(""), INFINITY, -INFINITY, 6, 0.5f};
  TensorStats p = probe_floats(v.data(), v.size());
  TensorStats s;
  accumulate_stats(v.data(), v.size(), s);
  EXPECT_EQ(p.xxh3_128, xxh3_128_hex(v.data(), v.size() * sizeof(float)));
  EXPECT_EQ(p.shape, (std::vector<int64_t>{9}));
  EXPECT_EQ(p.dtype, "float32");
  EXPECT_EQ(p.sum, 16.5);
  EXPECT_EQ(p.nan_count, 1u);
  EXPECT_EQ(p.inf_count, 2u);
  EXPECT_EQ(std::make_tuple(p.sum, p.mean, p.std, p.min, p.max), std::make_tuple(s.sum, s.mean, s.std, s.min, s.max));
}

TEST(Probe, TensorAndRawBufferAgree) {
  torch::Tensor t = torch::arange(0, 100, torch::kFloat32).reshape({10, 10});
  TensorStats a = probe_tensor(t);
  TensorStats b = probe_floats(t.data_ptr<float>(), 100);
  EXPECT_EQ(a.xxh3_128, b.xxh3_128);
  EXPECT_EQ(a.sum, 4950.0);
  EXPECT_EQ(a.shape, (std::vector<int64_t>{10, 10}));
  EXPECT_EQ(a.dtype, "float32");
  EXPECT_EQ(probe_tensor(torch::arange(0, 4, torch::kInt64)).dtype, "int64");
}

TEST(Probe, IndependentOfThreadCount) {
  torch::Tensor t = torch::randn({1 << 16}, at::make_generator<at::CPUGeneratorImpl>(3));
  at::set_num_threads(1);
  TensorStats one = probe_tensor(t);
  at::set_num_threads(2);
  TensorStats two = probe_tensor(t);
  at::set_num_threads(1);
  EXPECT_EQ(one.sum, two.sum);
  EXPECT_EQ(one.std, two.std);
}

std::shared_ptr<CsvTable> synthetic_table(int64_t rows) {
  auto t = std::make_shared<CsvTable>();
  t->rows = rows;
  t->features = 16;
  for (int64_t i = 0; i < rows * 16; ++i) t->values.push_back(static_cast<float>((i * 7) % 17) / 16.0f);
  for (int64_t i = 0; i < rows; ++i) t->labels.push_back(i % 3);
  t->num_classes = 3;
  return t;
}

std::vector<BatchProbe> pass(int workers, bool draw_global) {
  LoaderSpec spec;
  spec.sample_shape = {1, 4, 4};
  spec.batch_size = 8;
  spec.workers = workers;
  spec.augment.max_shift = 1;
  spec.augment.noise_std = 0.1;
  SmokeLoader loader(synthetic_table(100), spec, 99);
  std::vector<BatchProbe> out;
  for (uint64_t epoch = 0; epoch < 2; ++epoch)
    loader.run_epoch(epoch, [&](int64_t k, SmokeBatch& b) {
      if (draw_global) torch::rand({17});  // must not change any batch
      out.push_back(probe_batch(k, b.inputs, b.labels, b.indices));
      return true;
    });
  return out;
}

bool same(const std::vector<BatchProbe>& a, const std::vector<BatchProbe>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (to_json(a[i]) != to_json(b[i])) return false;
  return true;
}

TEST(Loader, BatchesIdenticalForAnyWorkerCountAndGlobalDraws) {
  torch::manual_seed(1);
  auto reference = pass(0, false);
  EXPECT_EQ(reference.size(), 24u);  // 2 epochs x floor(100 / 8)
  for (int workers : {1, 2, 4}) EXPECT_TRUE(same(pass(workers, false), reference)) << workers;
  torch::manual_seed(2);
  torch::rand({5});
  EXPECT_TRUE(same(pass(2, true), reference));
}

TEST(Loader, EpochsDifferAndSeedsDiffer) {
  auto p = pass(0, false);
  EXPECT_NE(p[0].sample_index_hash, p[12].sample_index_hash);  // epoch 1 reshuffled
}

}  // namespace
}  // namespace lockstep
