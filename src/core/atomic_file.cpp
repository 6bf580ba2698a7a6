#include "core/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/error.h"

namespace lockstep {
namespace fs = std::filesystem;

namespace {

Error write_error(const std::string& path, const std::string& what) {
  return BadUsage(path + ": cannot write: " + what + ": " + std::strerror(errno));
}

}  // namespace

void write_file_atomically(const std::string& path, const std::string& content) {
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
  if (ec) throw BadUsage(path + ": cannot create directory " + dir.string() + ": " + ec.message());

  std::string tmpl = (dir / ("." + target.filename().string() + ".tmp.XXXXXX")).string();
  int fd = mkstemp(tmpl.data());
  if (fd < 0) throw write_error(path, "mkstemp");

  const char* p = content.data();
  size_t left = content.size();
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
  std::string out(static_cast<size_t>(in.tellg()), '\0');
  in.seekg(0);
  if (!in.read(out.data(), static_cast<std::streamsize>(out.size())))
    throw BadUsage(path + ": cannot read: " + std::strerror(errno));
  return out;
}

}  // namespace lockstep
