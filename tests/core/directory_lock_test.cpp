// The goldens folder's advisory lock and the temporaries of interrupted
// atomic writes.
#include "core/directory_lock.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <thread>

#include "core/atomic_file.h"
#include "core/error.h"

namespace lockstep {
namespace {
namespace fs = std::filesystem;

fs::path scratch(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("lockstep-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

TEST(DirectoryLock, ASecondHolderIsRefusedWithoutWaitNamingThePid) {
  fs::path d = scratch("lock");
  {
    DirectoryLock first(d.string(), true);
    EXPECT_TRUE(fs::exists(d / ".lockstep.lock"));
    try {
      DirectoryLock second(d.string(), false);
      FAIL() << "two holders";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ExitCode::kEnvironment);
      EXPECT_EQ(std::string(e.what()), d.string() + " is locked by process " + std::to_string(::getpid()) +
                                           " (another bless or accept writing goldens there); wait for it or run "
                                           "again without --no-wait");
    }
  }
  EXPECT_FALSE(fs::exists(d / ".lockstep.lock"));  // removed on release
  DirectoryLock again(d.string(), false);
  fs::remove_all(d);
}

TEST(DirectoryLock, AWaiterIsToldOnceAndGetsTheLockWhenItIsReleased) {
  fs::path d = scratch("lock-wait");
  auto first = std::make_unique<DirectoryLock>(d.string(), true);
  std::atomic<int> told{-1};
  std::atomic<bool> holding{false};
  std::thread waiter([&] {
    DirectoryLock second(d.string(), true, [&](int pid) { told = pid; });
    holding = true;
  });
  while (told.load() < 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(told.load(), ::getpid());
  EXPECT_FALSE(holding.load());
  first.reset();
  waiter.join();
  EXPECT_TRUE(holding.load());
  fs::remove_all(d);
}

TEST(Temporaries, OnlyThoseOfAnExitedWriterAreRemoved) {
  fs::path d = scratch("temporaries");
  pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  ::waitpid(child, nullptr, 0);  // its pid is gone now
  std::string dead = (d / (".a.json.tmp." + std::to_string(child) + ".Ab12Cd")).string();
  std::string alive = (d / (".b.json.tmp." + std::to_string(::getpid()) + ".Xy34Zw")).string();
  std::string older = (d / ".c.json.tmp.Qr56St").string();
  for (const auto& p : {dead, alive, older}) write_file_atomically(p, "partial");
  write_file_atomically((d / "a.json").string(), "{}");

  auto found = find_temporaries(d.string());
  ASSERT_EQ(found.size(), 3u);
  EXPECT_EQ(found[0].path, dead);
  EXPECT_EQ(found[0].pid, child);
  EXPECT_FALSE(found[0].writer_alive);
  EXPECT_EQ(found[1].path, alive);
  EXPECT_TRUE(found[1].writer_alive);
  EXPECT_EQ(found[2].path, older);
  EXPECT_EQ(found[2].pid, 0);

  EXPECT_EQ(remove_stale_temporaries(d.string()), std::vector<std::string>{dead});
  EXPECT_FALSE(fs::exists(dead));
  EXPECT_TRUE(fs::exists(alive));
  EXPECT_TRUE(fs::exists(older));
  fs::remove_all(d);
}

// A writer that exited but is not reaped yet (a zombie: kill(pid, 0)
// still succeeds) writes nothing more: its temporary is stale.
TEST(Temporaries, AZombieWritersTemporaryIsStale) {
  fs::path d = scratch("zombie");
  pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  // A zombie until waited for: wait for /proc to say so.
  for (int i = 0; i < 500; ++i) {
    std::ifstream stat("/proc/" + std::to_string(child) + "/stat");
    std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    if (text.find(") Z ") != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(::kill(child, 0), 0);
  std::string zombie = (d / (".a.json.tmp." + std::to_string(child) + ".Ab12Cd")).string();
  write_file_atomically(zombie, "partial");
  auto found = find_temporaries(d.string());
  ASSERT_EQ(found.size(), 1u);
  EXPECT_FALSE(found[0].writer_alive);
  EXPECT_EQ(remove_stale_temporaries(d.string()), std::vector<std::string>{zombie});
  ::waitpid(child, nullptr, 0);
  fs::remove_all(d);
}

TEST(IoError, TheMachineIsExit3AndAWrongPathExit2) {
  for (int e : {ENOSPC, EDQUOT, EACCES, EPERM, EROFS, EIO})
    EXPECT_EQ(io_error("out/x.json", "write", e).code(), ExitCode::kEnvironment) << e;
  for (int e : {ENOTDIR, EISDIR, EEXIST, ENOENT, ENAMETOOLONG})
    EXPECT_EQ(io_error("out/x.json", "write", e).code(), ExitCode::kBadInput) << e;
  EXPECT_EQ(std::string(io_error("out/x.json", "write (rename)", ENOSPC).what()),
            "out/x.json: cannot write (rename): No space left on device");
}

TEST(DirectoryLock, ALinkedLockFileIsRefusedAndItsTargetUntouched) {
  fs::path d = scratch("lock-link");
  write_file_atomically((d / "victim.txt").string(), "important\n");
  fs::create_symlink(d / "victim.txt", d / ".lockstep.lock");
  try {
    DirectoryLock lock(d.string(), false);
    FAIL() << "locked through a link";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kBadInput);
    EXPECT_EQ(std::string(e.what()), (d / ".lockstep.lock").string() +
                                         ": the lock file is a symbolic link; remove it (lockstep never writes through links)");
  }
  EXPECT_EQ(read_file((d / "victim.txt").string()), "important\n");
  fs::remove_all(d);
}

TEST(Error, MessagesArePrintable) {
  Error e = BadUsage(std::string("smoke 'a") + '\0' + "b\x1b[2J'\n  next line");
  EXPECT_EQ(std::string(e.what()), "smoke 'a\\x00b\\x1b[2J'\n  next line");
}

// A right-to-left override would show "loss_cod.exe" as "loss_exe.doc".
TEST(Error, BidiControlsAreShownNotObeyed) {
  Error e = BadUsage("series 'loss_\xe2\x80\xae" "cod.exe' \xe2\x81\xa6x\xe2\x81\xa9 \xd8\x9c \xe2\x80\x8f");
  EXPECT_EQ(std::string(e.what()), "series 'loss_\\u202ecod.exe' \\u2066x\\u2069 \\u061c \\u200f");
  // Other characters of those blocks stay: an en dash, a right arrow.
  EXPECT_EQ(printable_message("a \xe2\x80\x93 b \xe2\x86\x92 c"), "a \xe2\x80\x93 b \xe2\x86\x92 c");
  std::string esc;
  EXPECT_EQ(bidi_control_at("\xe2\x80\xae", 0, &esc), 3u);
  EXPECT_EQ(esc, "\\u202e");
  EXPECT_EQ(bidi_control_at("\xe2\x80", 0, &esc), 0u);  // cut short: not one
}

}  // namespace
}  // namespace lockstep
