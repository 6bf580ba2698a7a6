#include "core/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <signal.h>

#include <algorithm>
#include <cerrno>
#include <iterator>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/error.h"

namespace lockstep {
namespace fs = std::filesystem;

namespace {

Error write_error(const std::string& path, const std::string& what) {
  return io_error(path, "write (" + what + ")", errno);
}

}  // namespace

void write_file_atomically(const std::string& path, const std::string& content) {
  write_file_atomically(path, std::vector<std::string_view>{content});
}

void write_file_atomically(const std::string& path, const std::vector<std::string_view>& parts) {
  fs::path target(path);
  fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  std::error_code ec;
  // The rename below would replace whatever is there: never a device, FIFO
  // or folder (as root, `--out /dev/null` would otherwise delete the node).
  fs::file_status st = fs::symlink_status(target, ec);
  if (!ec && fs::exists(st) && !fs::is_regular_file(st))
    throw BadUsage(path + ": refusing to write over something that is not a regular file");
  ec.clear();
  fs::create_directories(dir, ec);
  if (ec) throw io_error(path, "create directory " + dir.string(), ec.value());

  // The writer's pid in the name lets a later writer tell a temporary of a
  // killed process (removable) from one being written now. The six
  // trailing X are mkstemp(3)'s template, replaced by random characters.
  std::string tmpl =
      (dir / ("." + target.filename().string() + ".tmp." + std::to_string(::getpid()) + ".XXXXXX")).string();
  int fd = mkstemp(tmpl.data());
  if (fd < 0) throw write_error(path, "mkstemp");

  for (std::string_view part : parts) {
    const char* p = part.data();
    size_t left = part.size();
    while (left > 0) {
      ssize_t n = ::write(fd, p, left);
      if (n < 0) {
        if (errno == EINTR) continue;
        Error e = write_error(path, "write");
        ::close(fd);
        ::unlink(tmpl.c_str());
        throw e;
      }
      p += n;
      left -= static_cast<size_t>(n);
    }
  }
  // Temporary files are created 0600; a golden is an ordinary repo file.
  ::fchmod(fd, 0644);
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    Error e = write_error(path, "fsync");
    ::unlink(tmpl.c_str());
    throw e;
  }
  if (::rename(tmpl.c_str(), path.c_str()) != 0) {
    Error e = write_error(path, "rename");
    ::unlink(tmpl.c_str());
    throw e;
  }
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

void refuse_path_through_a_file(const std::string& path, const std::string& flag) {
  std::error_code ec;
  fs::path above = fs::path(path).parent_path();
  while (!above.empty() && !fs::exists(above, ec) && above != above.parent_path()) above = above.parent_path();
  if (!above.empty() && fs::exists(above, ec) && !fs::is_directory(above, ec))
    throw BadUsage(flag + " " + path + ": " + above.string() + " is not a folder");
}

void refuse_overwriting_inputs(const std::string& output, const std::vector<std::string>& inputs) {
  std::error_code ec;
  for (const auto& in : inputs) {
    if (in.empty() || output.empty()) continue;
    bool same = fs::equivalent(output, in, ec);
    if (ec) same = fs::weakly_canonical(output, ec) == fs::weakly_canonical(in, ec);
    if (same) throw BadUsage(output + ": refusing to write an output over an input of this command (" + in + ")");
  }
}

std::string read_file(const std::string& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) throw BadUsage(path + ": cannot read: is a directory");
  if (fs::exists(path, ec) && !fs::is_regular_file(path, ec))
    throw BadUsage(path + ": cannot read: not a regular file");
  if (fs::exists(path, ec) && fs::file_size(path, ec) > kMaxReadBytes)
    throw BadUsage(path + ": cannot read: larger than " + std::to_string(kMaxReadBytes >> 20) + " MiB");
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) throw BadUsage(path + ": cannot read: " + std::strerror(errno));
  // 64 bytes spare beyond the text: simdjson reads that far past the end
  // (core/json_io.cpp parses in place, without a copy).
  auto size = static_cast<size_t>(in.tellg());
  std::string out;
  out.reserve(size + 64);
  out.resize(size);
  in.seekg(0);
  if (!in.read(out.data(), static_cast<std::streamsize>(out.size())))
    throw BadUsage(path + ": cannot read: " + std::strerror(errno));
  return out;
}

std::optional<std::string> existing_text(const std::string& path, uint64_t max_bytes) {
  std::error_code ec;
  fs::path target = fs::weakly_canonical(fs::absolute(path), ec);
  if (ec || !fs::is_regular_file(target, ec)) return std::nullopt;
  uintmax_t size = fs::file_size(target, ec);
  if (ec || size > max_bytes) return std::nullopt;
  std::ifstream in(target, std::ios::binary);
  if (!in) return std::nullopt;
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

namespace {

// The start time (seconds since the epoch) of a live process from
// /proc/<pid>/stat; -1 when it cannot be read; -2 for a zombie or a dead
// process (state Z or X: exited, not yet reaped, so it writes nothing more;
// kill(pid, 0) still succeeds for it).
double process_start(int pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  size_t close = text.rfind(')');  // the command name may hold spaces
  if (close == std::string::npos || close + 2 >= text.size()) return -1;
  std::istringstream fields(text.substr(close + 2));
  std::string field;
  for (int i = 3; i <= 22 && fields >> field; ++i)
    if (i == 3 && (field == "Z" || field == "X")) return -2;
    else if (i == 22) {
      std::ifstream boot("/proc/stat");
      std::string key;
      double btime = -1;
      while (boot >> key)
        if (key == "btime") boot >> btime;
      if (btime < 0) return -1;
      return btime + std::stod(field) / static_cast<double>(::sysconf(_SC_CLK_TCK));
    }
  return -1;
}

}  // namespace

std::vector<TemporaryFile> find_temporaries(const std::string& dir) {
  std::vector<TemporaryFile> out;
  std::error_code ec;
  for (auto it = fs::directory_iterator(dir, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
    std::string name = it->path().filename().string();
    size_t tmp = name.rfind(".tmp.");
    if (name.empty() || name[0] != '.' || tmp == std::string::npos || tmp == 0) continue;
    // The pid, a dot and mkstemp's six characters; only the six (older lockstep).
    std::string tail = name.substr(tmp + 5);
    TemporaryFile t;
    t.path = it->path().string();
    size_t dot = tail.find('.');
    if (dot == std::string::npos) {
      if (tail.size() != 6) continue;
    } else {
      if (tail.size() - dot - 1 != 6 || dot == 0 || dot > 10 || tail.find_first_not_of("0123456789") != dot) continue;
      long long pid = std::stoll(tail.substr(0, dot));
      t.pid = pid > 0 && pid <= 4194304 ? static_cast<int>(pid) : -1;  // Linux's pid_max limit; -1: no such process
      struct stat st {};
      if (t.pid > 0 && ::stat(t.path.c_str(), &st) == 0 && (::kill(t.pid, 0) == 0 || errno == EPERM)) {
        // Alive, unless the pid was reused by a process younger than the file.
        double started = process_start(t.pid);
        t.writer_alive = started != -2 && (started < 0 || started <= static_cast<double>(st.st_mtime) + 1);
      }
    }
    out.push_back(t);
  }
  std::sort(out.begin(), out.end(), [](const TemporaryFile& a, const TemporaryFile& b) { return a.path < b.path; });
  return out;
}

std::vector<std::string> remove_stale_temporaries(const std::string& dir) {
  std::vector<std::string> removed;
  for (const auto& t : find_temporaries(dir))
    if ((t.pid > 0 || t.pid == -1) && !t.writer_alive && ::unlink(t.path.c_str()) == 0) removed.push_back(t.path);
  return removed;
}

}  // namespace lockstep
