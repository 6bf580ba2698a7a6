#include "determinism/seed_streams.h"

#include <ATen/CPUGeneratorImpl.h>

#include "core/hash.h"

namespace lockstep {

uint64_t splitmix64_mix(uint64_t z) {
  z ^= z >> 30;
  z *= 0xbf58476d1ce4e5b9ULL;
  z ^= z >> 27;
  z *= 0x94d049bb133111ebULL;
  z ^= z >> 31;
  return z;
}

uint64_t derive_seed(uint64_t base, std::string_view stream,
                     std::initializer_list<uint64_t> indices) {
  uint64_t s = splitmix64_mix(base ^ splitmix64_mix(xxh3_64(stream)));
  for (uint64_t i : indices) s = splitmix64_mix(s + 0x9e3779b97f4a7c15ULL * (i + 1));
  return s;
}

at::Generator stream_generator(uint64_t base, std::string_view stream,
                               std::initializer_list<uint64_t> indices) {
  return at::make_generator<at::CPUGeneratorImpl>(derive_seed(base, stream, indices));
}

}  // namespace lockstep
