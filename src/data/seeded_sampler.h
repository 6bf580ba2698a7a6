// A random sampler whose permutation is a function of (seed, epoch) only.
//
// LibTorch's RandomSampler draws from the global generator (its order then
// depends on every other draw made before), and DistributedRandomSampler
// ignores the seed (docs/libtorch.md §3). This one permutes with a private
// generator seeded from the "sampler" stream at the current epoch:
//
//   auto epoch = std::make_shared<std::atomic<uint64_t>>(0);
//   SeededRandomSampler s(n, seed, epoch, /*shuffle=*/true);
//   // the DataLoader owns the sampler by value; advance the epoch through
//   // the shared counter before loader->begin(), which calls reset().
#pragma once

#include <torch/data/samplers/base.h>
#include <torch/serialize/archive.h>
#include <torch/types.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

namespace lockstep {

/// Seeded, epoch-aware sampler over [0, size).
class SeededRandomSampler : public torch::data::samplers::Sampler<> {
 public:
  /// Rank `rank` of `world_size` takes positions rank, rank + world_size,
  /// ... of the first floor(size / world_size) * world_size entries of the
  /// epoch's global order (torch.utils.data.DistributedSampler with
  /// drop_last=True); 0 of 1 takes the whole order.
  SeededRandomSampler(int64_t size, uint64_t seed, std::shared_ptr<std::atomic<uint64_t>> epoch,
                      bool shuffle, int rank = 0, int world_size = 1);

  /// Recomputes the order for the current epoch (called by DataLoader::begin()).
  void reset(torch::optional<size_t> new_size = torch::nullopt) override;
  /// The next `batch_size` indices, fewer at the end of the epoch, nullopt after it.
  torch::optional<std::vector<size_t>> next(size_t batch_size) override;
  void save(torch::serialize::OutputArchive& archive) const override;
  void load(torch::serialize::InputArchive& archive) override;

 private:
  int64_t size_;
  uint64_t seed_;
  std::shared_ptr<std::atomic<uint64_t>> epoch_;
  bool shuffle_;
  int rank_, world_size_;
  std::vector<size_t> order_;
  size_t pos_ = 0;
};

}  // namespace lockstep
