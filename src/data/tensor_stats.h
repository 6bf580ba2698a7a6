// Fixed-order float64 statistics of a buffer: the numbers in a batch probe
// (sum, mean, population std, min, max, NaN/Inf counts), with no LibTorch.
//
//   TensorStats s;
//   Xxh3Stream hash;
//   accumulate_stats(data, n, s, &hash);   // statistics, and the hash of the bytes
//   s.xxh3_128 = hash.hex();
//
// The definition (docs/decisions.md, "Batch statistics have one fixed float64 order"), which every path below
// reproduces bit for bit:
//   - finite element i is added to lane i % 8 in index order (float64);
//   - sum = ((l0 + l1) + (l2 + l3)) + ((l4 + l5) + (l6 + l7));
//   - mean = sum / finite count; std = sqrt(sq / finite count), where sq is
//     the same 8-lane, pairwise-combined sum of (x - mean)^2, each term
//     rounded as d = x - mean, d * d, then added (no fused multiply-add);
//   - min/max over finite elements, taken per lane with `x < lo ? x : lo`
//     and then across lanes 0..7; NaN and ±Inf are counted and left out.
// One thread, one order: the value never depends on the intra-op thread
// count, the worker count or the CPU's vector width.
//
// Speed: the common case (no NaN/Inf) runs two passes over blocks of 8
// elements, with an AVX2 kernel for float32 where the CPU has it (chosen at
// run time), and the first pass feeds the hash 1 KiB at a time while those
// bytes are still in L1 cache; a buffer with NaN/Inf restarts on the
// element-wise path. bench/probe_vs_memcpy.sh measures it against memcpy.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/hash.h"
#include "record/batch_probe.h"

namespace lockstep {

/// Which block kernel runs the common case. kAuto picks the fastest this CPU
/// supports; the others exist so tests can pin every kernel to the definition.
enum class StatsKernel { kAuto, kPortable, kAvx2 };

/// True when the AVX2 kernel is compiled in and this CPU supports AVX2.
bool avx2_stats_kernel_available();

/// Fills s.sum, mean, std, min, max, nan_count and inf_count from `n`
/// elements at `data` (C order), by the definition above; all five
/// statistics are 0 when no element is finite. When `hash` is given it is fed
/// the same n * sizeof(element) bytes, in order. Leaves s.shape, s.dtype
/// and s.xxh3_128 alone.
/// Throws std::invalid_argument when `kernel` is kAvx2 and
/// avx2_stats_kernel_available() is false.
void accumulate_stats(const float* data, size_t n, TensorStats& s, Xxh3Stream* hash = nullptr,
                      StatsKernel kernel = StatsKernel::kAuto);
/// The same for float64 elements (portable kernel only).
void accumulate_stats(const double* data, size_t n, TensorStats& s, Xxh3Stream* hash = nullptr);
/// The same for int64 elements, each converted to the nearest float64
/// (portable kernel only).
void accumulate_stats(const int64_t* data, size_t n, TensorStats& s, Xxh3Stream* hash = nullptr);

}  // namespace lockstep
