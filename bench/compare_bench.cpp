// Comparator throughput: two records of N steps x 8 float64 metrics that
// agree within tolerance (cross-stack lane, the expensive one), compared
// in memory. Goal: 1,000,000 steps under 1 s on one core.
//
//   build-bench/bench/compare_bench --benchmark_filter=Compare
#include <benchmark/benchmark.h>

#include <cmath>

#include "compare/compare.h"

namespace {

lockstep::RunRecord make(int64_t steps, double jitter) {
  lockstep::RunRecord r;
  r.smoke = "bench";
  r.seed = 1;
  r.steps = steps;
  r.fingerprint = {{"torch.version", {jitter == 0 ? "1.13.0" : "2.11.0", true}}};
  for (int m = 0; m < 8; ++m) {
    lockstep::Series s;
    s.values.resize(static_cast<size_t>(steps));
    for (int64_t i = 0; i < steps; ++i)
      s.values[static_cast<size_t>(i)] = std::exp(-1e-6 * static_cast<double>(i)) * (m + 1) * (1 + jitter);
    r.series["metric" + std::to_string(m)] = std::move(s);
  }
  return r;
}

void BM_CompareCrossStack(benchmark::State& state) {
  auto golden = make(state.range(0), 0);
  auto run = make(state.range(0), 1e-9);
  lockstep::TolerancePolicy policy;
  for (auto _ : state) {
    lockstep::Verdict v = lockstep::compare_records(run, golden, policy);
    benchmark::DoNotOptimize(v);
    if (!v.passed()) state.SkipWithError("unexpected failure");
  }
  state.SetItemsProcessed(state.iterations() * state.range(0) * 8);
}
BENCHMARK(BM_CompareCrossStack)->Arg(1000)->Arg(1000000)->Unit(benchmark::kMillisecond);

}  // namespace
