#include "data/tensor_stats.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <type_traits>

// The AVX2 kernel is compiled for x86-64 with GCC or Clang through a
// function-level target attribute, so the rest of the binary keeps the
// baseline ISA and the kernel is chosen at run time.
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define LOCKSTEP_STATS_AVX2 1
#include <immintrin.h>
#endif

namespace lockstep {

namespace {

constexpr size_t kLanes = 8;
// The first pass hands the hash 1 KiB at a time, just after reading it: the
// bytes are then hashed from L1 instead of being fetched from memory a second
// time. 1 KiB is also XXH3's block for its default secret.
constexpr size_t kHashChunkBytes = 1024;

/// Per-lane partial results of the first pass.
struct Lanes {
  double sum[kLanes];
  double lo[kLanes];
  double hi[kLanes];
};

void reset(Lanes& a) {
  for (size_t j = 0; j < kLanes; ++j) {
    a.sum[j] = 0;
    a.lo[j] = std::numeric_limits<double>::infinity();
    a.hi[j] = -std::numeric_limits<double>::infinity();
  }
}

double combine_pairwise(const double (&l)[kLanes]) {
  return ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]));
}

// ---- block kernels: n is a multiple of 8, every element finite -------------

template <typename T>
void first_pass_portable(const T* p, size_t n, Lanes& a) {
  for (size_t i = 0; i < n; i += kLanes)
    for (size_t j = 0; j < kLanes; ++j) {
      double v = static_cast<double>(p[i + j]);
      a.sum[j] += v;
      a.lo[j] = v < a.lo[j] ? v : a.lo[j];
      a.hi[j] = v > a.hi[j] ? v : a.hi[j];
    }
}

template <typename T>
void second_pass_portable(const T* p, size_t n, double mean, double (&sq)[kLanes]) {
  for (size_t i = 0; i < n; i += kLanes)
    for (size_t j = 0; j < kLanes; ++j) {
      double d = static_cast<double>(p[i + j]) - mean;
      sq[j] += d * d;
    }
}

#ifdef LOCKSTEP_STATS_AVX2
// Lanes 0-3 and 4-7 live in two registers. _mm256_min_pd(v, lo) is
// `v < lo ? v : lo` and _mm256_max_pd(v, hi) is `v > hi ? v : hi` (Intel SDM,
// MINPD/MAXPD), the portable kernel's expressions; only "avx2" is enabled,
// not "fma", so d * d and the addition stay two roundings.
__attribute__((target("avx2"))) void first_pass_avx2(const float* p, size_t n, Lanes& a) {
  __m256d s0 = _mm256_loadu_pd(a.sum), s1 = _mm256_loadu_pd(a.sum + 4);
  __m256d l0 = _mm256_loadu_pd(a.lo), l1 = _mm256_loadu_pd(a.lo + 4);
  __m256d h0 = _mm256_loadu_pd(a.hi), h1 = _mm256_loadu_pd(a.hi + 4);
  for (size_t i = 0; i < n; i += kLanes) {
    __m256d v0 = _mm256_cvtps_pd(_mm_loadu_ps(p + i));
    __m256d v1 = _mm256_cvtps_pd(_mm_loadu_ps(p + i + 4));
    s0 = _mm256_add_pd(s0, v0);
    s1 = _mm256_add_pd(s1, v1);
    l0 = _mm256_min_pd(v0, l0);
    l1 = _mm256_min_pd(v1, l1);
    h0 = _mm256_max_pd(v0, h0);
    h1 = _mm256_max_pd(v1, h1);
  }
  _mm256_storeu_pd(a.sum, s0), _mm256_storeu_pd(a.sum + 4, s1);
  _mm256_storeu_pd(a.lo, l0), _mm256_storeu_pd(a.lo + 4, l1);
  _mm256_storeu_pd(a.hi, h0), _mm256_storeu_pd(a.hi + 4, h1);
}

__attribute__((target("avx2"))) void second_pass_avx2(const float* p, size_t n, double mean,
                                                       double (&sq)[kLanes]) {
  const __m256d m = _mm256_set1_pd(mean);
  __m256d q0 = _mm256_loadu_pd(sq), q1 = _mm256_loadu_pd(sq + 4);
  for (size_t i = 0; i < n; i += kLanes) {
    __m256d d0 = _mm256_sub_pd(_mm256_cvtps_pd(_mm_loadu_ps(p + i)), m);
    __m256d d1 = _mm256_sub_pd(_mm256_cvtps_pd(_mm_loadu_ps(p + i + 4)), m);
    q0 = _mm256_add_pd(q0, _mm256_mul_pd(d0, d0));
    q1 = _mm256_add_pd(q1, _mm256_mul_pd(d1, d1));
  }
  _mm256_storeu_pd(sq, q0);
  _mm256_storeu_pd(sq + 4, q1);
}
#endif

template <typename T>
struct Kernels {
  void (*first)(const T*, size_t, Lanes&) = first_pass_portable<T>;
  void (*second)(const T*, size_t, double, double (&)[kLanes]) = second_pass_portable<T>;
};

template <typename T>
Kernels<T> pick(StatsKernel kernel) {
  if (kernel == StatsKernel::kAvx2 && !avx2_stats_kernel_available())
    throw std::invalid_argument("accumulate_stats: the AVX2 kernel is not available on this CPU or build");
  Kernels<T> k;
#ifdef LOCKSTEP_STATS_AVX2
  if constexpr (std::is_same_v<T, float>) {
    if (kernel != StatsKernel::kPortable && avx2_stats_kernel_available()) {
      k.first = first_pass_avx2;
      k.second = second_pass_avx2;
    }
  }
#endif
  return k;
}

// ---- the definition, with the block kernels for the common case ------------

template <typename T>
void accumulate(const T* data, size_t n, TensorStats& s, Xxh3Stream* hash, StatsKernel kernel) {
  const Kernels<T> k = pick<T>(kernel);
  const size_t blocks_end = n - n % kLanes;
  constexpr size_t chunk = kHashChunkBytes / sizeof(T);
  static_assert(chunk % kLanes == 0, "a hash chunk holds whole blocks");

  Lanes a;
  reset(a);
  for (size_t i = 0; i < blocks_end; i += chunk) {
    size_t m = std::min(chunk, blocks_end - i);
    k.first(data + i, m, a);
    if (hash) hash->update(data + i, m * sizeof(T));
  }
  if (hash) hash->update(data + blocks_end, (n - blocks_end) * sizeof(T));

  // A NaN or an Inf leaves its lane's sum non-finite for good, so finite lane
  // sums prove the blocks held only finite values. Otherwise (or when a
  // float64 sum overflowed) the element-wise path starts over; it adds in the
  // same order, so which path ran never shows in the bits.
  bool clean = true;
  for (size_t j = 0; j < kLanes; ++j) clean &= std::isfinite(a.sum[j]);
  size_t from = blocks_end, finite = blocks_end;
  if (!clean) {
    reset(a);
    from = finite = 0;
  }
  for (size_t i = from; i < n; ++i) {
    double v = static_cast<double>(data[i]);
    if (!std::isfinite(v)) {
      if (std::isnan(v)) ++s.nan_count;
      else ++s.inf_count;
      continue;
    }
    size_t j = i % kLanes;
    a.sum[j] += v;
    a.lo[j] = v < a.lo[j] ? v : a.lo[j];
    a.hi[j] = v > a.hi[j] ? v : a.hi[j];
    ++finite;
  }

  s.sum = combine_pairwise(a.sum);
  if (finite == 0) {
    s.mean = s.std = s.min = s.max = 0;
    return;
  }
  s.mean = s.sum / static_cast<double>(finite);
  double lo = a.lo[0], hi = a.hi[0];
  for (size_t j = 1; j < kLanes; ++j) {
    lo = a.lo[j] < lo ? a.lo[j] : lo;
    hi = a.hi[j] > hi ? a.hi[j] : hi;
  }
  s.min = lo;
  s.max = hi;

  double sq[kLanes] = {0};
  if (clean) k.second(data, blocks_end, s.mean, sq);
  for (size_t i = from; i < n; ++i) {
    double v = static_cast<double>(data[i]);
    if (!std::isfinite(v)) continue;
    double d = v - s.mean;
    sq[i % kLanes] += d * d;
  }
  s.std = std::sqrt(combine_pairwise(sq) / static_cast<double>(finite));
}

}  // namespace

bool avx2_stats_kernel_available() {
#ifdef LOCKSTEP_STATS_AVX2
  static const bool available = __builtin_cpu_supports("avx2");
  return available;
#else
  return false;
#endif
}

void accumulate_stats(const float* data, size_t n, TensorStats& s, Xxh3Stream* hash, StatsKernel kernel) {
  accumulate(data, n, s, hash, kernel);
}

void accumulate_stats(const double* data, size_t n, TensorStats& s, Xxh3Stream* hash) {
  accumulate(data, n, s, hash, StatsKernel::kPortable);
}

void accumulate_stats(const int64_t* data, size_t n, TensorStats& s, Xxh3Stream* hash) {
  accumulate(data, n, s, hash, StatsKernel::kPortable);
}

}  // namespace lockstep
