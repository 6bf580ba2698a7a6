#include "core/file_hash_cache.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <vector>

#include "core/atomic_file.h"
#include "core/error.h"
#include "core/hash.h"

namespace lockstep {

std::string file_hash_cache_dir() {
  if (const char* d = std::getenv("LOCKSTEP_CACHE_DIR"); d && *d) return std::string(d) + "/file-hashes";
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::string(x) + "/lockstep/file-hashes";
  const char* home = std::getenv("HOME");
  return std::string(home && *home ? home : ".") + "/.cache/lockstep/file-hashes";
}

std::string file_xxh3(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw BadInput(path, "", "a readable file");
  Xxh3Stream h;
  std::vector<char> buf(1 << 20);
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    h.update(buf.data(), static_cast<size_t>(in.gcount()));
  }
  if (in.bad()) throw BadInput(path, "", "a readable file (read error)");
  return h.hex();
}

namespace {

bool cache_enabled() {
  const char* v = std::getenv("LOCKSTEP_HASH_CACHE");
  return !v || std::string(v) != "0";
}

int64_t nanoseconds(const timespec& t) { return static_cast<int64_t>(t.tv_sec) * 1000000000 + t.tv_nsec; }

}  // namespace

std::string cached_file_xxh3(const std::string& path) {
  timespec now{};
  clock_gettime(CLOCK_REALTIME, &now);
  return cached_file_xxh3(path, nanoseconds(now));
}

std::string cached_file_xxh3(const std::string& path, int64_t now_ns) {
  struct stat st {};
  if (!cache_enabled() || ::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return file_xxh3(path);
  // Everything that changes when the bytes could have changed, and the path.
  std::string key = "xxh3-128 v1 dev=" + std::to_string(st.st_dev) + " ino=" + std::to_string(st.st_ino) +
                    " size=" + std::to_string(st.st_size) + " mtime=" + std::to_string(nanoseconds(st.st_mtim)) +
                    " ctime=" + std::to_string(nanoseconds(st.st_ctim)) + " path=" + path;
  std::string entry = file_hash_cache_dir() + "/" + hex64(xxh3_64(key));
  {
    std::ifstream in(entry, std::ios::binary);
    std::string stored_key, hash;
    if (in && std::getline(in, stored_key) && std::getline(in, hash) && stored_key == key && is_hex_digest(hash, 32))
      return hash;
  }
  std::string hash = file_xxh3(path);
  int64_t newest = std::max(nanoseconds(st.st_mtim), nanoseconds(st.st_ctim));
  if (now_ns - newest < int64_t{2} * 1000000000) return hash;  // too new to trust its times
  try {
    std::error_code ec;
    std::filesystem::create_directories(file_hash_cache_dir(), ec);
    if (!ec) write_file_atomically(entry, key + "\n" + hash + "\n");
  } catch (const Error&) {
    // A cache that cannot be written only costs the next process the read.
  }
  return hash;
}

}  // namespace lockstep
