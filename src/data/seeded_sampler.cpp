#include "data/seeded_sampler.h"

#include <torch/torch.h>

#include "determinism/seed_streams.h"

namespace lockstep {

SeededRandomSampler::SeededRandomSampler(int64_t size, uint64_t seed,
                                         std::shared_ptr<std::atomic<uint64_t>> epoch, bool shuffle, int rank,
                                         int world_size)
    : size_(size), seed_(seed), epoch_(std::move(epoch)), shuffle_(shuffle), rank_(rank), world_size_(world_size) {
  reset();
}

void SeededRandomSampler::reset(torch::optional<size_t> new_size) {
  if (new_size) size_ = static_cast<int64_t>(*new_size);
  order_.resize(static_cast<size_t>(size_));
  if (shuffle_) {
    at::Generator gen = stream_generator(seed_, "sampler", {epoch_->load()});
    torch::Tensor perm = torch::randperm(size_, gen, torch::kInt64);
    const int64_t* p = perm.data_ptr<int64_t>();
    for (int64_t i = 0; i < size_; ++i) order_[static_cast<size_t>(i)] = static_cast<size_t>(p[i]);
  } else {
    for (int64_t i = 0; i < size_; ++i) order_[static_cast<size_t>(i)] = static_cast<size_t>(i);
  }
  if (world_size_ > 1) {
    size_t share = order_.size() / static_cast<size_t>(world_size_);
    std::vector<size_t> mine(share);
    for (size_t k = 0; k < share; ++k)
      mine[k] = order_[static_cast<size_t>(rank_) + k * static_cast<size_t>(world_size_)];
    order_ = std::move(mine);
  }
  pos_ = 0;
}

torch::optional<std::vector<size_t>> SeededRandomSampler::next(size_t batch_size) {
  if (pos_ >= order_.size()) return torch::nullopt;
  size_t end = std::min(order_.size(), pos_ + batch_size);
  std::vector<size_t> out(order_.begin() + static_cast<std::ptrdiff_t>(pos_),
                          order_.begin() + static_cast<std::ptrdiff_t>(end));
  pos_ = end;
  return out;
}

void SeededRandomSampler::save(torch::serialize::OutputArchive& archive) const {
  archive.write("pos", torch::tensor(static_cast<int64_t>(pos_)), /*is_buffer=*/true);
}

void SeededRandomSampler::load(torch::serialize::InputArchive& archive) {
  torch::Tensor t;
  archive.read("pos", t, /*is_buffer=*/true);
  pos_ = static_cast<size_t>(t.item<int64_t>());
}

}  // namespace lockstep
