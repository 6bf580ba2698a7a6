#include "data/loader.h"

#include <torch/torch.h>

#include "data/seeded_sampler.h"

namespace lockstep {

struct SmokeLoader::Impl {
  LoaderSpec spec;
  int64_t rows = 0;
  std::shared_ptr<std::atomic<uint64_t>> epoch = std::make_shared<std::atomic<uint64_t>>(0);
  using Loader = torch::data::StatelessDataLoader<TableDataset, SeededRandomSampler>;
  std::unique_ptr<Loader> loader;
};

SmokeLoader::SmokeLoader(std::shared_ptr<const CsvTable> table, const LoaderSpec& spec, uint64_t seed)
    : impl_(std::make_unique<Impl>()) {
  impl_->spec = spec;
  impl_->rows = table->rows / std::max(1, spec.world_size);  // this rank's share
  TableDataset dataset(table, spec.sample_shape, spec.augment, seed, impl_->epoch);
  SeededRandomSampler sampler(table->rows, seed, impl_->epoch, spec.shuffle, spec.rank, spec.world_size);
  auto options = torch::data::DataLoaderOptions()
                     .batch_size(static_cast<size_t>(spec.batch_size))
                     .workers(static_cast<size_t>(spec.workers))
                     .enforce_ordering(true)
                     .drop_last(spec.drop_last);
  impl_->loader = std::make_unique<Impl::Loader>(std::move(dataset), std::move(sampler), options);
}

SmokeLoader::~SmokeLoader() = default;

int64_t SmokeLoader::batches_per_epoch() const {
  int64_t full = impl_->rows / impl_->spec.batch_size;
  bool partial = impl_->rows % impl_->spec.batch_size != 0;
  return full + (partial && !impl_->spec.drop_last ? 1 : 0);
}

void SmokeLoader::run_epoch(uint64_t epoch,
                            const std::function<bool(int64_t, SmokeBatch&)>& visit) {
  impl_->epoch->store(epoch);
  int64_t k = 0;
  for (auto it = impl_->loader->begin(); it != impl_->loader->end(); ++it) {
    if (!visit(k++, *it)) break;
  }
}

}  // namespace lockstep
