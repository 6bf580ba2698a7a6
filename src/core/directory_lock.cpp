#include "core/directory_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "core/error.h"

namespace lockstep {

namespace {

int read_pid_once(int fd) {
  char buf[32] = {0};
  ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
  if (n <= 0) return 0;
  return std::atoi(buf);
}

// The holder writes its pid right after it takes the lock: a waiter that
// comes in between reads an empty file, so it looks again for up to 0.2 s.
int read_pid(int fd) {
  for (int i = 0; i < 40; ++i) {
    if (int pid = read_pid_once(fd); pid > 0) return pid;
    ::usleep(5000);
  }
  return 0;
}

}  // namespace

DirectoryLock::DirectoryLock(const std::string& dir, bool wait, const std::function<void(int)>& on_wait)
    : path_((std::filesystem::path(dir) / ".lockstep.lock").string()) {
  std::error_code ec;
  created_ = !std::filesystem::exists(dir, ec);
  std::filesystem::create_directories(dir, ec);
  bool told = false;
  while (true) {
    // Never through a link: a committed symlink would make us write our pid
    // into whatever it points at.
    int fd = ::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0 && errno == ELOOP)
      throw BadUsage(path_ + ": the lock file is a symbolic link; remove it (lockstep never writes through links)");
    if (fd < 0) throw EnvironmentError(path_ + ": cannot create the lock file: " + std::strerror(errno));
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      if (errno != EWOULDBLOCK) {
        int err = errno;
        ::close(fd);
        throw EnvironmentError(path_ + ": cannot lock: " + std::strerror(err));
      }
      int holder = read_pid(fd);
      if (!wait) {
        ::close(fd);
        throw EnvironmentError(dir + " is locked by process " + std::to_string(holder) +
                               " (another bless or accept writing goldens there); wait for it or run again "
                               "without --no-wait");
      }
      if (!told && on_wait) {
        try {
          on_wait(holder);  // may throw: a caller that would rather not wait
        } catch (...) {
          ::close(fd);
          throw;
        }
      }
      told = true;
      while (::flock(fd, LOCK_EX) != 0)
        if (errno != EINTR) {
          int err = errno;
          ::close(fd);
          throw EnvironmentError(path_ + ": cannot lock: " + std::strerror(err));
        }
    }
    // The holder before us may have removed the file: then we hold a lock
    // on an orphan inode and must take the one at the path instead.
    struct stat by_fd {}, by_path {};
    if (::fstat(fd, &by_fd) == 0 && ::stat(path_.c_str(), &by_path) == 0 && by_fd.st_ino == by_path.st_ino &&
        by_fd.st_dev == by_path.st_dev) {
      fd_ = fd;
      break;
    }
    ::close(fd);
  }
  std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd_, 0) == 0) {
    ssize_t ignored = ::pwrite(fd_, pid.data(), pid.size(), 0);
    (void)ignored;
  }
}

DirectoryLock::~DirectoryLock() {
  if (fd_ < 0) return;
  ::unlink(path_.c_str());  // still holding the lock: nobody else can have it
  ::close(fd_);
  // A folder made only to hold the lock goes too (rmdir leaves a non-empty one).
  if (created_) ::rmdir(std::filesystem::path(path_).parent_path().c_str());
}

}  // namespace lockstep
