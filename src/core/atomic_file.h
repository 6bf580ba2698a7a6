// Atomic file writes: a reader sees the old file or the new one, never a
// half-written one (goldens, records, reports).
//
//   write_file_atomically("goldens/digits-cnn/cpu-x86_64-avx2.json", text);
//
// The bytes go to a temporary file in the same directory, are fsync'ed, and
// the temporary is renamed over the target (rename(2) is atomic within one
// filesystem, POSIX.1-2017). The directory is fsync'ed afterwards so the
// rename survives a crash.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace lockstep {

/// Writes `content` to `path` atomically, creating parent directories.
/// Throws io_error() naming the path when any step fails (exit 3 for a full
/// disk or no permission, exit 2 for a wrong path), or exit 2 when `path`
/// exists and is not a regular file (a device, FIFO, folder or link is
/// never replaced); the target is then untouched and the temporary removed.
void write_file_atomically(const std::string& path, const std::string& content);

/// The same for content given as pieces written in order (no copy of a
/// long array into one string: a run record's series sidecar).
void write_file_atomically(const std::string& path, const std::vector<std::string_view>& parts);

/// Throws exit-2 BadUsage when an output file at `path` could never be
/// made because a part of its folder path exists as something other than
/// a folder ("notes.txt/r.json"): "<flag> <path>: notes.txt is not a
/// folder". Checked before a command's work, not when it writes.
void refuse_path_through_a_file(const std::string& path, const std::string& flag);

/// Throws exit-2 Error when `output` names the same file as one of
/// `inputs` (an output must never overwrite what the command reads).
void refuse_overwriting_inputs(const std::string& output, const std::vector<std::string>& inputs);

/// A temporary file of write_file_atomically's naming, ".<target>.tmp.<pid>."
/// followed by the six random characters mkstemp(3) chooses, that a killed
/// writer left behind (or one being written now). Older lockstep versions
/// named it ".<target>.tmp." and the six characters, without the pid.
struct TemporaryFile {
  std::string path;
  int pid = 0;                ///< the writer's pid; 0 for the older naming, -1 for a pid no process can have
  bool writer_alive = false;  ///< that process still runs (and is older than the file)
};

/// The temporaries of that naming directly in `dir`, sorted by path.
std::vector<TemporaryFile> find_temporaries(const std::string& dir);

/// Removes the temporaries in `dir` whose writer has exited (its pid is
/// gone, or now names a process that started after the file was written);
/// never one being written, nor one of the older naming (its writer is
/// unknown). Returns the removed paths.
std::vector<std::string> remove_stale_temporaries(const std::string& dir);

/// Largest file read_file accepts (configs, goldens, records, data files).
inline constexpr uint64_t kMaxReadBytes = uint64_t{2} << 30;  // 2 GiB

/// Reads a whole regular file of at most kMaxReadBytes. Throws
/// Error(kBadInput) "<path>: cannot read: <reason>" otherwise. The string's
/// capacity holds 64 bytes more than its size (simdjson's padding).
std::string read_file(const std::string& path);

/// The text of what an output about to be written would replace: the
/// regular file `path` resolves to (through links), when it is at most
/// `max_bytes`; nullopt when nothing is there, it is no regular file, it is
/// larger, or it cannot be read. For the refusals that keep an output off
/// a file it must not replace (a golden, a user's note).
std::optional<std::string> existing_text(const std::string& path, uint64_t max_bytes);

}  // namespace lockstep
