#include "core/hash.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <utility>
#include <vector>

namespace lockstep {
namespace {

// Reference values: xxHash 0.8 test vectors for the empty input.
TEST(Xxh3, EmptyInputReferenceValues) {
  EXPECT_EQ(hex64(xxh3_64("", 0)), "2d06800538d394c2");
  EXPECT_EQ(xxh3_128_hex("", 0), "99aa06d3014798d86001c324468d497f");
}

// Inputs long enough for XXH3's vector loop (over 240 bytes), pinned from
// the header-only SSE2 build: the run-time dispatched AVX2/AVX-512 loop and
// the stream must give the same hashes (the bytes are (i * 31) % 251).
TEST(Xxh3, LongInputsGiveThePinnedHashesOnEverySimdPath) {
  std::vector<unsigned char> bytes(100003);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<unsigned char>((i * 31) % 251);
  const std::pair<size_t, const char*> pinned[] = {
      {240, "7cf77784002208a5423167d7599e74a5"},
      {241, "095d0994f2a5191d82d3ebf50a3e9c42"},
      {1024, "5f6ea7ec3ae785ebcbdff56b050f2c1c"},
      {100003, "a841a5a0a5cb1b2a8bc0f93d9c2e8533"},
  };
  for (auto [n, hex] : pinned) {
    EXPECT_EQ(xxh3_128_hex(bytes.data(), n), hex) << n;
    Xxh3Stream s;
    for (size_t at = 0; at < n; at += 1000) s.update(bytes.data() + at, std::min<size_t>(1000, n - at));
    EXPECT_EQ(s.hex(), hex) << n;
  }
  EXPECT_EQ(hex64(xxh3_64(bytes.data(), bytes.size())), "8bc0f93d9c2e8533");
}

TEST(Xxh3, StreamEqualsOneShot) {
  std::string data = "lockstep determinism";
  Xxh3Stream s;
  s.update(data.data(), 4);
  s.update(data.data() + 4, data.size() - 4);
  EXPECT_EQ(s.hex(), xxh3_128_hex(data.data(), data.size()));
}

TEST(Xxh3, LengthPrefixedStringsDoNotCollide) {
  Xxh3Stream a, b;
  a.update_string("ab");
  a.update_string("c");
  b.update_string("a");
  b.update_string("bc");
  EXPECT_NE(a.hex(), b.hex());
}

// Stored hashes are exactly N lowercase hex digits, as hex64 and
// xxh3_128_hex write them.
TEST(HexDigest, ExactlyTheDigitsTheHashesAreWrittenWith) {
  EXPECT_TRUE(is_hex_digest(hex64(0x0123456789abcdefULL), 16));
  EXPECT_TRUE(is_hex_digest(xxh3_128_hex("", 0), 32));
  EXPECT_FALSE(is_hex_digest("0123456789ABCDEF", 16));   // upper case
  EXPECT_FALSE(is_hex_digest("0123456789abcdeg", 16));   // not hex
  EXPECT_FALSE(is_hex_digest("0123456789abcde", 16));    // one short
  EXPECT_FALSE(is_hex_digest("0123456789abcdef0", 16));  // one long
  EXPECT_FALSE(is_hex_digest("", 16));
  EXPECT_TRUE(is_hex_digest("", 0));
}

}  // namespace
}  // namespace lockstep
