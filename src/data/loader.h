// The smoke data loader: LibTorch's DataLoader over a TableDataset with a
// SeededRandomSampler, on worker threads, batches delivered in order.
//
//   SmokeLoader loader(table, spec, seed);
//   loader.run_epoch(0, [&](int64_t k, SmokeBatch& b) { ...; return true; });
//
// Batches are bit-identical for 0, 1, 2 or 4 workers: the sampler is a
// function of (seed, epoch), every sample's augmentation of (seed, epoch,
// index), and enforce_ordering re-sequences worker results
// (docs/libtorch.md §3).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "data/augment.h"
#include "spec/loader_spec.h"
#include "data/csv_source.h"
#include "data/table_dataset.h"

namespace lockstep {

/// A reusable loader; one epoch at a time.
class SmokeLoader {
 public:
  SmokeLoader(std::shared_ptr<const CsvTable> table, const LoaderSpec& spec, uint64_t seed);
  ~SmokeLoader();

  /// Full batches per epoch (plus one short batch when !drop_last).
  int64_t batches_per_epoch() const;

  /// Delivers the batches of `epoch` in order to `visit(k, batch)`, k from
  /// 0; stops early when `visit` returns false.
  void run_epoch(uint64_t epoch, const std::function<bool(int64_t, SmokeBatch&)>& visit);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace lockstep
