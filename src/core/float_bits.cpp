#include "core/float_bits.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>

namespace lockstep {

std::string format_double(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, value);
  return std::string(buf, res.ptr);
}

std::string float_bits_hex(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", bits);
  return buf;
}

std::optional<float> parse_float_bits(const std::string& text) {
  if (text.size() < 3 || text.size() > 10 || text[0] != '0' || (text[1] != 'x' && text[1] != 'X'))
    return std::nullopt;
  uint32_t bits = 0;
  auto res = std::from_chars(text.data() + 2, text.data() + text.size(), bits, 16);
  if (res.ec != std::errc() || res.ptr != text.data() + text.size()) return std::nullopt;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

namespace {

// Maps the sign-magnitude bit pattern onto a two's-complement line where
// integer order equals numeric order and -0 == +0 (Dawson, "Comparing
// Floating Point Numbers", 2012).
template <typename Int, typename Float>
Int ordered(Float x) {
  Int i;
  std::memcpy(&i, &x, sizeof i);
  return i < 0 ? std::numeric_limits<Int>::min() - i : i;
}

template <typename Int, typename UInt, typename Float>
uint64_t ulps(Float a, Float b) {
  if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<uint64_t>::max();
  Int ia = ordered<Int>(a), ib = ordered<Int>(b);
  // Subtract in unsigned arithmetic: the difference of two Int values can
  // overflow Int but always fits UInt.
  UInt d = ia > ib ? static_cast<UInt>(ia) - static_cast<UInt>(ib)
                   : static_cast<UInt>(ib) - static_cast<UInt>(ia);
  return static_cast<uint64_t>(d);
}

}  // namespace

uint64_t ulp_distance(double a, double b) { return ulps<int64_t, uint64_t>(a, b); }

uint64_t ulp_distance_f32(float a, float b) { return ulps<int32_t, uint32_t>(a, b); }

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

}  // namespace lockstep
