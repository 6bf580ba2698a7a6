// XXH3-128 of a large, rarely changing file (the LibTorch library, 120 MB
// and more), remembered between processes the way ccache remembers its
// "direct mode" hits: keyed by the file's device, inode, size and
// modification and status-change times (nanoseconds). Replacing or
// rewriting the file changes the inode or the ctime, which no user tool
// can set back, so a cached hash is never served for other bytes.
//
//   std::string h = cached_file_xxh3("/usr/lib/x86_64-linux-gnu/libtorch_cpu.so.1.13.0");
//   // 32 hex digits; the first call reads the file, later ones one small file
//
// The cache lives in $LOCKSTEP_CACHE_DIR, else
// ${XDG_CACHE_HOME:-$HOME/.cache}/lockstep, in file-hashes/ (one small
// file per entry, written atomically). A file changed within the last two
// seconds is hashed but not cached (its times may not have settled yet,
// as ccache's "file too new" rule). LOCKSTEP_HASH_CACHE=0 turns the cache
// off; an unwritable cache folder only costs the read.
#pragma once

#include <cstdint>
#include <string>

namespace lockstep {

/// XXH3-128 (32 hex digits) of the file at `path`, through the cache
/// described above. Throws exit-2 Error when the file cannot be read.
std::string cached_file_xxh3(const std::string& path);

/// The same at the wall-clock time `now_ns` (nanoseconds since the epoch),
/// which decides whether the file is too new to cache; tests pass a time
/// past the file's instead of waiting.
std::string cached_file_xxh3(const std::string& path, int64_t now_ns);

/// XXH3-128 of the file at `path`, read in 1 MiB pieces, no cache. Throws
/// exit-2 Error when the file cannot be read.
std::string file_xxh3(const std::string& path);

/// The folder cached_file_xxh3() keeps its entries in.
std::string file_hash_cache_dir();

}  // namespace lockstep
