#include "core/hash.h"

// libxxhash built with its x86 dispatcher (Debian's and Ubuntu's are) picks
// the SSE2, AVX2 or AVX-512 loop at run time; xxh_x86dispatch.h maps the
// XXH3 entry points below onto it. Elsewhere the header-only build is used.
// Every variant returns the same hash (xxHash's own guarantee).
#ifdef LOCKSTEP_XXH3_DISPATCH
#define XXH_STATIC_LINKING_ONLY  // XXH3_state_t's definition
#include <xxh_x86dispatch.h>
#else
#define XXH_INLINE_ALL
#include <xxhash.h>
#endif

#include <cstdio>

namespace lockstep {

uint64_t xxh3_64(const void* data, size_t size) { return XXH3_64bits(data, size); }

uint64_t xxh3_64(std::string_view text) { return XXH3_64bits(text.data(), text.size()); }

namespace {
std::string canonical_hex(XXH128_hash_t h) {
  XXH128_canonical_t c;
  XXH128_canonicalFromHash(&c, h);
  static const char* digits = "0123456789abcdef";
  std::string out(32, '0');
  for (int i = 0; i < 16; ++i) {
    out[2 * i] = digits[c.digest[i] >> 4];
    out[2 * i + 1] = digits[c.digest[i] & 0xf];
  }
  return out;
}
}  // namespace

std::string xxh3_128_hex(const void* data, size_t size) {
  return canonical_hex(XXH3_128bits(data, size));
}

bool is_hex_digest(std::string_view text, size_t digits) {
  return text.size() == digits && text.find_first_not_of("0123456789abcdef") == std::string_view::npos;
}

std::string hex64(uint64_t value) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(value));
  return buf;
}

struct Xxh3Stream::State {
  XXH3_state_t s;
};

Xxh3Stream::Xxh3Stream() : state_(std::make_unique<State>()) { XXH3_128bits_reset(&state_->s); }
Xxh3Stream::~Xxh3Stream() = default;

void Xxh3Stream::update(const void* data, size_t size) {
  XXH3_128bits_update(&state_->s, data, size);
}

void Xxh3Stream::update_string(std::string_view text) {
  uint64_t n = text.size();
  update(&n, sizeof n);
  update(text.data(), text.size());
}

std::string Xxh3Stream::hex() const { return canonical_hex(XXH3_128bits_digest(&state_->s)); }

}  // namespace lockstep
