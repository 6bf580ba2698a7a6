#include "ingest/crc32c.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ingest/tfrecord.h"

namespace lockstep {
namespace {

// RFC 3720, B.4 "CRC Examples".
TEST(Crc32c, Rfc3720CheckValues) {
  std::vector<unsigned char> zeros(32, 0x00), ones(32, 0xff), ascending(32), descending(32);
  for (int i = 0; i < 32; ++i) {
    ascending[static_cast<size_t>(i)] = static_cast<unsigned char>(i);
    descending[static_cast<size_t>(i)] = static_cast<unsigned char>(31 - i);
  }
  EXPECT_EQ(crc32c(zeros.data(), zeros.size()), 0x8a9136aau);
  EXPECT_EQ(crc32c(ones.data(), ones.size()), 0x62a8ab43u);
  EXPECT_EQ(crc32c(ascending.data(), ascending.size()), 0x46dd794eu);
  EXPECT_EQ(crc32c(descending.data(), descending.size()), 0x113fdb5cu);
}

TEST(Crc32c, CheckStringAndEmpty) {
  EXPECT_EQ(crc32c("123456789", 9), 0xe3069283u);  // the CRC catalogue's check value
  EXPECT_EQ(crc32c("", 0), 0u);
}

// The bit-at-a-time definition (reflected polynomial 0x82f63b78, start ~0,
// final inversion), against which every length agrees: the short records'
// path and the long buffers' path alike.
uint32_t crc32c_bitwise(const unsigned char* p, size_t n) {
  uint32_t crc = 0xffffffffu;
  for (size_t i = 0; i < n; ++i) {
    crc ^= p[i];
    for (int b = 0; b < 8; ++b) crc = (crc >> 1) ^ (0x82f63b78u & (0u - (crc & 1u)));
  }
  return ~crc;
}

TEST(Crc32c, EveryLengthMatchesTheBitwiseDefinition) {
  std::vector<unsigned char> data(1300);
  uint32_t x = 7;
  for (auto& c : data) c = static_cast<unsigned char>((x = x * 1664525u + 1013904223u) >> 24);
  for (size_t n = 0; n <= data.size(); ++n)
    for (size_t start : {size_t{0}, size_t{3}})
      if (start + n <= data.size())
        ASSERT_EQ(crc32c(data.data() + start, n), crc32c_bitwise(data.data() + start, n)) << n << " bytes from " << start;
}

TEST(Crc32c, MaskIsTfRecords) {
  // ((crc >> 15) | (crc << 17)) + 0xa282ead8, wrapping.
  EXPECT_EQ(mask_crc32c(0), 0xa282ead8u);
  EXPECT_EQ(mask_crc32c(0x8a9136aau), ((0x8a9136aau >> 15) | (0x8a9136aau << 17)) + 0xa282ead8u);
  EXPECT_EQ(masked_crc32c("123456789", 9), mask_crc32c(0xe3069283u));
}

TEST(TfRecord, FramingLayout) {
  std::string out;
  append_tfrecord(out, "abc");
  ASSERT_EQ(out.size(), 12u + 3 + 4);
  EXPECT_EQ(out.substr(0, 8), std::string("\x03\0\0\0\0\0\0\0", 8));  // uint64 little-endian length
  uint32_t length_crc = 0, data_crc = 0;
  for (int i = 3; i >= 0; --i) length_crc = (length_crc << 8) | static_cast<unsigned char>(out[8 + static_cast<size_t>(i)]);
  for (int i = 3; i >= 0; --i) data_crc = (data_crc << 8) | static_cast<unsigned char>(out[15 + static_cast<size_t>(i)]);
  EXPECT_EQ(length_crc, masked_crc32c(out.data(), 8));
  EXPECT_EQ(data_crc, masked_crc32c("abc", 3));
  EXPECT_EQ(out.substr(12, 3), "abc");
}

}  // namespace
}  // namespace lockstep
