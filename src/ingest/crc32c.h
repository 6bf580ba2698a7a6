// CRC-32C (Castagnoli, RFC 3720 B.4) and the masked form TFRecord files
// store after each record's length and data. Computed by ISA-L
// (crc32_iscsi), which uses the CPU's CRC32 instructions or carry-less
// multiplication where it has them.
//
//   uint32_t c = crc32c(data, size);              // 32 bytes of 0x00 -> 0x8a9136aa
//   bool ok = masked_crc32c(data, size) == stored; // TFRecord framing
#pragma once

#include <cstddef>
#include <cstdint>

namespace lockstep {

/// CRC-32C of `size` bytes, with the standard initial value and final xor
/// (RFC 3720 B.4: 32 bytes of 0x00 -> 0x8a9136aa).
uint32_t crc32c(const void* data, size_t size);

/// TFRecord's mask of a CRC-32C: ((crc >> 15) | (crc << 17)) + 0xa282ead8.
uint32_t mask_crc32c(uint32_t crc);

/// mask_crc32c(crc32c(data, size)).
uint32_t masked_crc32c(const void* data, size_t size);

}  // namespace lockstep
