// Data-pass throughput, Google Benchmark:
//   BM_Memcpy           memcpy of a 64 MiB float32 buffer (the yardstick)
//   BM_ProbeFloats      the batch probe (XXH3-128 + fixed-order float64
//                       statistics) over the same buffer; goal >= 0.5x memcpy
//   BM_ProbeFloatsPortable  the same on the portable (non-AVX2) kernel
//   BM_ImagePipeline    batches per second of the photos-cnn pipeline
//                       (decoded photos, shift/flip/noise/normalise, batch
//                       4) with 2 loader workers
// bench/probe_vs_memcpy.sh prints the ratio.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <cstring>
#include <vector>

#include "data/image_folder.h"
#include "data/loader.h"
#include "data/probe.h"
#include "data/tensor_stats.h"

namespace {

constexpr size_t kFloats = (64u << 20) / sizeof(float);

std::vector<float>& buffer() {
  static std::vector<float> b = [] {
    std::vector<float> v(kFloats);
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i % 1021) * 0.001f;
    return v;
  }();
  return b;
}

void BM_Memcpy(benchmark::State& state) {
  std::vector<float> dst(kFloats);
  for (auto _ : state) {
    std::memcpy(dst.data(), buffer().data(), kFloats * sizeof(float));
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kFloats * sizeof(float)));
}
BENCHMARK(BM_Memcpy)->Unit(benchmark::kMillisecond);

void BM_ProbeFloats(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(lockstep::probe_floats(buffer().data(), kFloats));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kFloats * sizeof(float)));
}
BENCHMARK(BM_ProbeFloats)->Unit(benchmark::kMillisecond);

// The same probe on the portable kernel (what CPUs without AVX2 run).
void BM_ProbeFloatsPortable(benchmark::State& state) {
  for (auto _ : state) {
    lockstep::TensorStats s;
    lockstep::Xxh3Stream hash;
    lockstep::accumulate_stats(buffer().data(), kFloats, s, &hash, lockstep::StatsKernel::kPortable);
    benchmark::DoNotOptimize(hash.hex());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kFloats * sizeof(float)));
}
BENCHMARK(BM_ProbeFloatsPortable)->Unit(benchmark::kMillisecond);

void BM_ImagePipeline(benchmark::State& state) {
  const char* dir = std::getenv("LOCKSTEP_PHOTOS");
  if (!dir) {
    state.SkipWithError("set LOCKSTEP_PHOTOS to the photos folder (ci/fetch-data.sh)");
    return;
  }
  auto folder = lockstep::read_image_folder({dir, {3, 32, 32}, "linear"});
  auto table = std::make_shared<lockstep::CsvTable>(std::move(folder.table));
  lockstep::LoaderSpec spec;
  spec.sample_shape = {3, 32, 32};
  spec.batch_size = 4;
  spec.workers = 2;
  spec.augment.max_shift = 2;
  spec.augment.flip = true;
  spec.augment.noise_std = 0.02;
  spec.augment.mean = {0.5, 0.5, 0.5};
  spec.augment.std = {0.25, 0.25, 0.25};
  lockstep::SmokeLoader loader(table, spec, 1);
  int64_t batches = 0;
  uint64_t epoch = 0;
  for (auto _ : state)
    loader.run_epoch(epoch++, [&](int64_t, lockstep::SmokeBatch& b) {
      benchmark::DoNotOptimize(b.inputs.data_ptr());
      ++batches;
      return true;
    });
  state.counters["batches_per_s"] = benchmark::Counter(static_cast<double>(batches), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_ImagePipeline)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
