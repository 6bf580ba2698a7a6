// The --out folder of check and bless: checked once, before any run, and
// held by one command at a time.
#include <filesystem>
#include <iostream>

#include "cli/commands.h"
#include "core/error.h"
#include "smoke/golden_store.h"

namespace lockstep {
namespace fs = std::filesystem;

void require_out_folder(const std::string& out, const std::vector<std::string>& smoke_files,
                        const std::string& goldens_dir) {
  if (out.empty()) throw BadUsage("--out must name a folder, got an empty path");
  std::error_code ec;
  if (fs::exists(out, ec) && !fs::is_directory(out, ec))
    throw BadUsage(out + ": --out must be a folder (records, reports, junit.xml), and this is a file");
  // Only bless and accept write into goldens/: not even a log goes there.
  std::string here = fs::weakly_canonical(fs::absolute(out), ec).string() + "/";
  for (const auto& file : smoke_files) {
    std::string goldens = fs::weakly_canonical(fs::absolute(goldens_root(file, goldens_dir)), ec).string() + "/";
    if (here.rfind(goldens, 0) == 0)
      throw BadUsage(out + ": --out must not be inside the goldens folder " + goldens +
                     " (goldens are written only by bless and accept)");
  }
  fs::create_directories(out, ec);
  if (ec) throw io_error(out, "create the --out folder", ec.value());
}

}  // namespace lockstep
