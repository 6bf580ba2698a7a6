#include "ingest/crc32c.h"

#include <isa-l/crc.h>

#include <climits>
#include <cstring>

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

namespace lockstep {

namespace {

#if defined(__x86_64__)
// SSE4.2's crc32 instruction computes CRC-32C (Castagnoli, reflected, no
// inversion: the same as ISA-L's crc32_iscsi). For the short records of an
// event file (an Event with one scalar is about 40 bytes) it beats ISA-L's
// folding kernel, whose set-up costs more than the record.
__attribute__((target("sse4.2"))) uint32_t crc32c_short(const unsigned char* p, size_t n, uint32_t crc) {
  uint64_t c = crc;
  for (; n >= 8; p += 8, n -= 8) {
    uint64_t v;
    std::memcpy(&v, p, sizeof v);
    c = _mm_crc32_u64(c, v);
  }
  auto c32 = static_cast<uint32_t>(c);
  for (; n > 0; ++p, --n) c32 = _mm_crc32_u8(c32, *p);
  return c32;
}

const bool kHaveSse42 = __builtin_cpu_supports("sse4.2");
constexpr size_t kShort = 512;  // bytes; longer buffers go to ISA-L
#endif

}  // namespace

uint32_t crc32c(const void* data, size_t size) {
  // ISA-L's crc32_iscsi neither inverts its initial value nor its result:
  // the standard CRC-32C starts from ~0 and inverts at the end (checked
  // against RFC 3720's vectors in tests/ingest/crc32c_test.cpp). Its
  // length is an int, so very large buffers go in pieces.
  auto* p = static_cast<unsigned char*>(const_cast<void*>(data));
  uint32_t crc = 0xffffffffu;
#if defined(__x86_64__)
  if (size <= kShort && kHaveSse42) return crc32c_short(p, size, crc) ^ 0xffffffffu;
#endif
  while (size > 0) {
    size_t n = size < (size_t{1} << 30) ? size : (size_t{1} << 30);
    crc = crc32_iscsi(p, static_cast<int>(n), crc);
    p += n;
    size -= n;
  }
  return crc ^ 0xffffffffu;
}

uint32_t mask_crc32c(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + 0xa282ead8u; }

uint32_t masked_crc32c(const void* data, size_t size) { return mask_crc32c(crc32c(data, size)); }

}  // namespace lockstep
