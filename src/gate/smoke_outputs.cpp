#include "gate/smoke_outputs.h"

#include <filesystem>
#include <regex>
#include <vector>

#include "core/atomic_file.h"
#include "core/error.h"
#include "smoke/golden_store.h"

namespace lockstep {
namespace fs = std::filesystem;

bool is_smoke_output_name(const std::string& name) {
  // The names gate/check.cpp, gate/bless.cpp, gate/calibrate.cpp and
  // launch/launcher.cpp give.
  static const std::regex kOutput(
      R"(((run|rerun|bless|bless-seed-[0-9]+|calibrate|detect)-[0-9]+\.json|resume-part\.json|resume-at-[0-9]+\.ckpt|resumed\.json|data-only\.json|variant-[A-Za-z0-9._-]+\.json)(\..+)?)"
      R"(|report\.(json|md|html))");
  if (std::string key = pending_platform_of(name); !key.empty()) return is_golden_key(key);
  return std::regex_match(name, kOutput);
}

void clear_smoke_outputs(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(fs::symlink_status(dir, ec))) return;
  std::vector<fs::path> doomed;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    if (is_smoke_output_name(it->path().filename().string())) doomed.push_back(it->path());
  if (ec) throw io_error(dir, "list the smoke's output folder", ec.value());
  // The temporaries of those outputs that a killed writer left (a check
  // stopped by a signal mid-write); never one being written now.
  for (const TemporaryFile& t : find_temporaries(dir)) {
    const std::string name = fs::path(t.path).filename().string();
    if (t.pid != 0 && !t.writer_alive && is_smoke_output_name(name.substr(1, name.rfind(".tmp.") - 1)))
      doomed.push_back(t.path);
  }
  for (const auto& p : doomed) {
    fs::remove_all(p, ec);
    if (ec) throw io_error(p.string(), "remove an earlier command's output", ec.value());
  }
}

}  // namespace lockstep
