// An advisory lock on a folder, for the commands that write goldens (bless,
// accept): two of them on one goldens folder take turns instead of
// interleaving their writes. A multi-rank run locks its rendezvous folder
// with it too (distributed/rank_launch.h).
//
//   DirectoryLock lock("goldens", /*wait=*/true, [](int pid) {
//     std::cerr << "waiting for process " << pid << "\n";
//   });
//   ... write goldens ...
//   // released (and its file removed) when `lock` goes out of scope
//
// flock(2) on `<dir>/.lockstep.lock`, which holds the owner's pid for the
// messages of those who wait. The file is removed on release; a waiter
// that wakes on a removed file takes the lock again on the new one (the
// usual check of the path's inode against the locked descriptor's), so two
// processes never both hold it. A holder that dies releases it (the kernel
// drops the flock with the descriptor).
#pragma once

#include <functional>
#include <string>

namespace lockstep {

/// Holds the lock on a folder for its lifetime. A folder it had to create
/// is removed again on release when nothing was written into it.
class DirectoryLock {
 public:
  /// Takes the lock on `dir` (created if missing). When another process
  /// holds it: with `wait`, calls `on_wait(holder_pid)` once (0 when the pid
  /// cannot be read; an exception it throws ends the wait and propagates)
  /// and blocks until it is free; without, throws exit-3
  /// Error naming the holder's pid. Throws exit-3 Error when the lock file
  /// cannot be created.
  DirectoryLock(const std::string& dir, bool wait, const std::function<void(int)>& on_wait = {});
  ~DirectoryLock();
  DirectoryLock(const DirectoryLock&) = delete;
  DirectoryLock& operator=(const DirectoryLock&) = delete;

  /// The lock file's path.
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  int fd_ = -1;
  bool created_ = false;  ///< the folder did not exist: removed on release if still empty
};

}  // namespace lockstep
