// The checkpoint of a multi-rank run: one folder holding every rank's own
// checkpoint (train/checkpoint.h) and a manifest that ties them together,
// so `run --stop-after` / `--resume` and the resume check work on a
// multi-rank smoke as on a single process. Torch-free: the coordinator
// only names, hashes and moves the files; each rank writes and reads its own.
//
//   RankCheckpointWriter w("lockstep-out/ck", {"digits-cnn-2rank", 2, 5});
//   // ranks run with --checkpoint w.rank_file(r)
//   w.commit();                       // the manifest, then the folder swapped in
//   std::vector<std::string> files = open_rank_checkpoint("lockstep-out/ck", "digits-cnn-2rank", 2);
//   // ranks run with --resume files[r]
//
// Layout: DIR/checkpoint.json (the manifest) and DIR/rank-<r>.ckpt. The
// manifest holds the smoke, the world size, the step the run stopped
// after, and every rank file's XXH3-128:
//   {"format": "lockstep multi-rank checkpoint", "schema": 1, "smoke": "...",
//    "world_size": 2, "step": 5,
//    "ranks": [{"file": "rank-0.ckpt", "xxh3_128": "..."}, ...]}
// The ranks write into DIR.partial; only when every rank finished is the
// manifest written and the folder swapped in, so a kill at any moment
// leaves the previous checkpoint (or none), never a mix of two runs'.
// The manifest's step says what the checkpoint is of; the ranks check on
// resume that their files agree on it (train/trainer.h).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace lockstep {

class DirectoryLock;

/// What a multi-rank checkpoint is of.
struct RankCheckpointInfo {
  std::string smoke;   ///< the smoke's name
  int world_size = 1;  ///< ranks (one file each)
  int64_t step = 0;    ///< optimiser steps taken before it was written
};

/// Prepares DIR.partial for the ranks to write into, then commits it as
/// DIR, holding a lock (DIR.lock) so two runs never write one checkpoint.
/// "ck/" is "ck". Throws exit-2 Error when DIR (or DIR.partial) exists and
/// is not a folder lockstep made holding only its checkpoint files (a
/// link, a user's folder, a copy with notes added: never removed), and an
/// Error from io_error() when a folder cannot be made, moved or removed;
/// exit-3 Error when another run holds the lock.
class RankCheckpointWriter {
 public:
  RankCheckpointWriter(std::string dir, RankCheckpointInfo info);
  ~RankCheckpointWriter();
  RankCheckpointWriter(const RankCheckpointWriter&) = delete;
  RankCheckpointWriter& operator=(const RankCheckpointWriter&) = delete;

  /// The checkpoint folder, normalised ("ck/" is "ck").
  const std::string& dir() const { return dir_; }

  /// Where rank `rank` writes its checkpoint (inside DIR.partial).
  std::string rank_file(int rank) const;

  /// Hashes every rank's file, writes the manifest and swaps the folder in
  /// as DIR (an earlier checkpoint there is removed). Throws exit-1 Error
  /// naming the rank whose file is missing (it reported success without
  /// writing one).
  void commit();

 private:
  std::string dir_;
  std::string partial_;
  RankCheckpointInfo info_;
  std::unique_ptr<DirectoryLock> lock_;
};

/// The rank files of the multi-rank checkpoint DIR, in rank order, after
/// checking its manifest: a folder (a single-process checkpoint file is
/// refused), the smoke `smoke`, `world_size` ranks, every file present
/// with its recorded XXH3-128. Throws exit-2 Error naming the file and the
/// field otherwise.
std::vector<std::string> open_rank_checkpoint(const std::string& dir, const std::string& smoke, int world_size);

/// The manifest's name inside a multi-rank checkpoint folder.
inline constexpr const char* kRankCheckpointManifest = "checkpoint.json";

}  // namespace lockstep
