// XXH3 hashing (xxHash 0.8, https://xxhash.com): 64-bit for identifiers,
// 128-bit for content (batch bytes, parameters, goldens).
//
//   std::string h = xxh3_128_hex(data, size);       // 32 lowercase hex digits
//   Xxh3Stream s; s.update(a, n); s.update(b, m); s.hex();
//
// Hex strings are big-endian canonical (XXH128_canonicalFromHash), so the
// same bytes give the same string on every platform.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace lockstep {

/// XXH3-64 of `size` bytes (seed 0).
uint64_t xxh3_64(const void* data, size_t size);

/// XXH3-64 of the bytes of `text`.
uint64_t xxh3_64(std::string_view text);

/// XXH3-128 of `size` bytes as 32 lowercase hex digits.
std::string xxh3_128_hex(const void* data, size_t size);

/// 16 lowercase hex digits of `value`.
std::string hex64(uint64_t value);

/// Whether `text` is exactly `digits` lowercase hex digits, as xxh3_128_hex
/// (32) and hex64 (16) write them: how every stored hash is validated.
bool is_hex_digest(std::string_view text, size_t digits);

/// Incremental XXH3-128: feeding pieces gives the hash of their concatenation.
class Xxh3Stream {
 public:
  Xxh3Stream();
  ~Xxh3Stream();
  Xxh3Stream(const Xxh3Stream&) = delete;
  Xxh3Stream& operator=(const Xxh3Stream&) = delete;

  /// Appends `size` bytes.
  void update(const void* data, size_t size);
  /// Appends the bytes of `text` preceded by its length (so "ab","c" != "a","bc").
  void update_string(std::string_view text);
  /// The hash of everything appended so far, 32 hex digits.
  std::string hex() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace lockstep
