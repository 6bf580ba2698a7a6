#include "core/mapped_file.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>

#include "core/atomic_file.h"
#include "core/error.h"

namespace lockstep {

namespace {

// The SIGBUS guard: the mapped ranges alive now, and the handler that names
// the file a fault fell in. Slots are written under a mutex and read by the
// handler without one (atomics only: async-signal-safe).
constexpr int kSlots = 16;
struct Slot {
  std::atomic<uintptr_t> begin{0}, end{0};
  char path[512] = {};
};
Slot g_slots[kSlots];
std::mutex g_slots_mutex;
struct sigaction g_previous {};

void write_all(const char* text, size_t n) {
  while (n > 0) {
    ssize_t w = ::write(STDERR_FILENO, text, n);
    if (w <= 0) return;
    text += w;
    n -= static_cast<size_t>(w);
  }
}

void on_sigbus(int sig, siginfo_t* info, void* context) {
  auto at = reinterpret_cast<uintptr_t>(info->si_addr);
  for (Slot& s : g_slots) {
    uintptr_t begin = s.begin.load(std::memory_order_acquire), end = s.end.load(std::memory_order_acquire);
    if (begin == 0 || at < begin || at >= end) continue;
    const char lead[] = "lockstep: error: ";
    const char tail[] = ": changed while being read (another process shortened it: read it again once it is "
                        "written whole)\n";
    write_all(lead, sizeof lead - 1);
    write_all(s.path, std::strlen(s.path));
    write_all(tail, sizeof tail - 1);
    ::_exit(static_cast<int>(ExitCode::kBadInput));
  }
  // Not ours: what SIGBUS did before.
  if (g_previous.sa_flags & SA_SIGINFO) {
    if (g_previous.sa_sigaction) return g_previous.sa_sigaction(sig, info, context);
  } else if (g_previous.sa_handler != SIG_DFL && g_previous.sa_handler != SIG_IGN && g_previous.sa_handler) {
    return g_previous.sa_handler(sig);
  }
  ::signal(SIGBUS, SIG_DFL);
  ::raise(SIGBUS);
}

int guard(const std::string& path, const char* begin, size_t size) {
  std::lock_guard<std::mutex> lock(g_slots_mutex);
  static bool installed = [] {
    struct sigaction sa {};
    sa.sa_sigaction = on_sigbus;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    return ::sigaction(SIGBUS, &sa, &g_previous) == 0;
  }();
  if (!installed) return -1;
  for (int i = 0; i < kSlots; ++i) {
    if (g_slots[i].begin.load() != 0) continue;
    std::strncpy(g_slots[i].path, path.c_str(), sizeof g_slots[i].path - 1);
    g_slots[i].end.store(reinterpret_cast<uintptr_t>(begin) + size, std::memory_order_release);
    g_slots[i].begin.store(reinterpret_cast<uintptr_t>(begin), std::memory_order_release);
    return i;
  }
  return -1;
}

}  // namespace

MappedFile::MappedFile(const std::string& path) : path_(path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    int e = errno;
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) throw BadUsage(path + ": cannot read: is a directory");
    throw BadUsage(path + ": cannot read: " + std::strerror(e));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    int e = errno;
    ::close(fd);
    throw BadUsage(path + ": cannot read: " + std::strerror(e));
  }
  if (S_ISDIR(st.st_mode) || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw BadUsage(path + (S_ISDIR(st.st_mode) ? ": cannot read: is a directory" : ": cannot read: not a regular file"));
  }
  if (static_cast<uint64_t>(st.st_size) > kMaxReadBytes) {
    ::close(fd);
    throw BadUsage(path + ": cannot read: larger than " + std::to_string(kMaxReadBytes >> 20) + " MiB");
  }
  size_ = static_cast<size_t>(st.st_size);
  // The file's pages, then at least 64 bytes of zeros: an anonymous
  // mapping of the whole length with the file mapped over its start (the
  // tail of the file's last page reads as zeros too).
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  mapped_ = (size_ + 64 + page - 1) / page * page;
  void* base = ::mmap(nullptr, mapped_, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (base == MAP_FAILED) {
    int e = errno;
    ::close(fd);
    throw BadUsage(path + ": cannot read: " + std::strerror(e));
  }
  if (size_ > 0) {
    void* at = ::mmap(base, size_, PROT_READ, MAP_PRIVATE | MAP_FIXED | MAP_POPULATE, fd, 0);
    if (at == MAP_FAILED) {
      int e = errno;
      ::munmap(base, mapped_);
      ::close(fd);
      throw BadUsage(path + ": cannot read: " + std::strerror(e));
    }
    ::madvise(base, size_, MADV_SEQUENTIAL);
  }
  ::close(fd);
  data_ = static_cast<const char*>(base);
  guard_ = guard(path_, data_, mapped_);
}

MappedFile::~MappedFile() {
  if (guard_ >= 0) {
    std::lock_guard<std::mutex> lock(g_slots_mutex);
    g_slots[guard_].begin.store(0, std::memory_order_release);
    g_slots[guard_].end.store(0, std::memory_order_release);
  }
  if (data_) ::munmap(const_cast<char*>(data_), mapped_);
}

}  // namespace lockstep
