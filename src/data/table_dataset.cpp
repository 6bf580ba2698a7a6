#include "data/table_dataset.h"

#include <torch/torch.h>

#include <optional>

#include "determinism/seed_streams.h"

namespace lockstep {

TableDataset::TableDataset(std::shared_ptr<const CsvTable> table, std::vector<int64_t> sample_shape,
                           AugmentOptions augment, uint64_t seed,
                           std::shared_ptr<std::atomic<uint64_t>> epoch)
    : table_(std::move(table)),
      sample_shape_(std::move(sample_shape)),
      augment_(augment),
      seed_(seed),
      epoch_(std::move(epoch)) {}

SmokeBatch TableDataset::get_batch(torch::ArrayRef<size_t> indices) {
  const int64_t f = table_->features;
  std::vector<int64_t> batch_shape = {static_cast<int64_t>(indices.size())};
  batch_shape.insert(batch_shape.end(), sample_shape_.begin(), sample_shape_.end());

  SmokeBatch b;
  b.labels = torch::empty({static_cast<int64_t>(indices.size())}, torch::kInt64);
  int64_t* lab = b.labels.data_ptr<int64_t>();
  if (table_->integer_features) {  // token ids: int64, never augmented
    b.inputs = torch::empty(batch_shape, torch::kInt64);
    int64_t* ids = b.inputs.data_ptr<int64_t>();
    for (size_t k = 0; k < indices.size(); ++k) {
      const float* row = table_->values.data() + static_cast<int64_t>(indices[k]) * f;
      for (int64_t j = 0; j < f; ++j) ids[static_cast<int64_t>(k) * f + j] = static_cast<int64_t>(row[j]);
      b.indices.push_back(static_cast<int64_t>(indices[k]));
      lab[k] = table_->labels[indices[k]];
    }
    return b;
  }
  b.inputs = torch::empty(batch_shape, torch::kFloat32);
  float* dst = b.inputs.data_ptr<float>();
  const uint64_t epoch = epoch_->load();

  for (size_t k = 0; k < indices.size(); ++k) {
    const size_t i = indices[k];
    const float* row = table_->values.data() + static_cast<int64_t>(i) * f;
    b.indices.push_back(static_cast<int64_t>(i));
    lab[k] = table_->labels[i];
    if (!augment_.enabled()) {
      std::copy(row, row + f, dst + static_cast<int64_t>(k) * f);
      continue;
    }
    torch::Tensor sample =
        torch::from_blob(const_cast<float*>(row), sample_shape_, torch::kFloat32);
    at::Generator gen = augment_.rank < 0 ? stream_generator(seed_, "augment", {epoch, static_cast<uint64_t>(i)})
                                          : stream_generator(seed_, "augment", {epoch, static_cast<uint64_t>(i),
                                                                                static_cast<uint64_t>(augment_.rank)});
    if (augment_.worker_seeded) {
      // The classic bug, kept as a self-test: one generator per worker
      // thread, seeded with a constant, so a sample's draws depend on which
      // worker built it and what that worker built before.
      thread_local std::optional<at::Generator> per_worker;
      if (!per_worker) per_worker = stream_generator(seed_, "augment");
      gen = *per_worker;
    }
    torch::Tensor out = augment_sample(sample, augment_, gen);
    std::copy(out.data_ptr<float>(), out.data_ptr<float>() + f, dst + static_cast<int64_t>(k) * f);
  }
  return b;
}

torch::optional<size_t> TableDataset::size() const { return static_cast<size_t>(table_->rows); }

}  // namespace lockstep
