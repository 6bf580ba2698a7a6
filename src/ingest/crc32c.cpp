#include "ingest/crc32c.h"

#include <isa-l/crc.h>

#include <climits>

namespace lockstep {

uint32_t crc32c(const void* data, size_t size) {
  // ISA-L's crc32_iscsi neither inverts its initial value nor its result:
  // the standard CRC-32C starts from ~0 and inverts at the end (checked
  // against RFC 3720's vectors in tests/ingest/crc32c_test.cpp). Its
  // length is an int, so very large buffers go in pieces.
  auto* p = static_cast<unsigned char*>(const_cast<void*>(data));
  uint32_t crc = 0xffffffffu;
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
