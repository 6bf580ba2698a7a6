#include "core/hash.h"

#include <gtest/gtest.h>

namespace lockstep {
namespace {

// Reference values: xxHash 0.8 test vectors for the empty input.
TEST(Xxh3, EmptyInputReferenceValues) {
  EXPECT_EQ(hex64(xxh3_64("", 0)), "2d06800538d394c2");
  EXPECT_EQ(xxh3_128_hex("", 0), "99aa06d3014798d86001c324468d497f");
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

}  // namespace
}  // namespace lockstep
