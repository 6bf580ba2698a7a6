// The smoke dataset over a numeric table (CSV source): each row is one
// sample, optionally reshaped to an image [C, H, W] and augmented.
//
//   TableDataset ds(table, {1, 8, 8}, augment, seed, epoch);
//   SmokeBatch b = ds.get_batch({4, 17, 9});   // inputs [3,1,8,8], labels [3]
//
// It is a torch::data BatchDataset so LibTorch's DataLoader can run it on
// worker threads. The DataLoader copies the dataset into every worker, so
// it holds no generator: each sample's augmentation generator is created
// from (augment stream, epoch, sample index) inside get_batch, which makes
// batches bit-identical for any number of workers. The epoch is shared
// through a pointer so the trainer can advance it.
#pragma once

#include <torch/data/datasets/base.h>
#include <torch/types.h>

#include <atomic>
#include <memory>
#include <vector>

#include "data/augment.h"
#include "data/csv_source.h"

namespace lockstep {

/// One batch as the loader delivers it.
struct SmokeBatch {
  torch::Tensor inputs;          ///< [B, ...sample_shape], float32
  torch::Tensor labels;          ///< [B], int64
  std::vector<int64_t> indices;  ///< dataset index of each sample, in batch order
};

/// A BatchDataset over a CsvTable.
class TableDataset : public torch::data::datasets::BatchDataset<TableDataset, SmokeBatch> {
 public:
  /// `sample_shape` must multiply to table.features (e.g. {1, 8, 8} for
  /// digits, {13} for wine). Augmentation needs a 3-d [C, H, W] shape.
  TableDataset(std::shared_ptr<const CsvTable> table, std::vector<int64_t> sample_shape,
               AugmentOptions augment, uint64_t seed, std::shared_ptr<std::atomic<uint64_t>> epoch);

  SmokeBatch get_batch(torch::ArrayRef<size_t> indices) override;
  torch::optional<size_t> size() const override;

  const std::vector<int64_t>& sample_shape() const { return sample_shape_; }

 private:
  std::shared_ptr<const CsvTable> table_;
  std::vector<int64_t> sample_shape_;
  AugmentOptions augment_;
  uint64_t seed_;
  std::shared_ptr<std::atomic<uint64_t>> epoch_;
};

}  // namespace lockstep
