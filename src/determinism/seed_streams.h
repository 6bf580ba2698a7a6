// The seeding scheme: one base seed per smoke, and every consumer draws
// from a named stream derived from it (docs/seeding.md).
//
//   uint64_t s = derive_seed(base, "augment", {epoch, sample_index});
//   at::Generator g = stream_generator(base, "augment", {epoch, sample_index});
//
// Streams used by lockstep: "init" (per parameter: {xxh3_64(name)}),
// "sampler" ({epoch}), "augment" ({epoch, sample}), "dropout" ({}),
// "global" (the LibTorch default generator, seeded as a safety net).
//
// Mixing function (stable; changing it changes every golden):
//   m(z)  = SplitMix64 finaliser (Steele, Lea, Flood, "Fast splittable
//           pseudorandom number generators", OOPSLA 2014):
//           z ^= z >> 30; z *= 0xbf58476d1ce4e5b9;
//           z ^= z >> 27; z *= 0x94d049bb133111eb; z ^= z >> 31
//   s0    = m(base ^ m(XXH3_64(stream name)))
//   s_k+1 = m(s_k + 0x9e3779b97f4a7c15 * (index_k + 1))   (mod 2^64)
// m is a bijection on 64-bit integers, so for a fixed prefix, different
// indices always give different seeds.
#pragma once

#include <ATen/core/Generator.h>

#include <cstdint>
#include <initializer_list>
#include <string_view>

namespace lockstep {

/// SplitMix64's output finaliser (a bijection on uint64).
uint64_t splitmix64_mix(uint64_t z);

/// Seed of stream `stream` at `indices`, from `base` (any uint64,
/// including 0 and 2^64-1).
uint64_t derive_seed(uint64_t base, std::string_view stream,
                     std::initializer_list<uint64_t> indices = {});

/// A private CPU generator (mt19937) seeded with derive_seed(...). Drawing
/// from it never touches LibTorch's global generator.
at::Generator stream_generator(uint64_t base, std::string_view stream,
                               std::initializer_list<uint64_t> indices = {});

}  // namespace lockstep
