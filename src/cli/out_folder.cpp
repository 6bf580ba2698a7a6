// The --out folder of check and bless: checked once, before any run, and
// held by one command at a time.
#include <filesystem>
#include <fstream>
#include <iostream>

#include "cli/commands.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "core/install_paths.h"
#include "smoke/smoke_config.h"
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

void require_report_file(const std::string& flag, const std::string& path, const std::string& signature,
                         const std::vector<std::string>& inputs, const std::string& own_dir) {
  if (path.empty()) throw BadUsage(flag + ": a file path for the report, got an empty path");
  std::error_code ec;
  if (!own_dir.empty()) {
    std::string dir = fs::weakly_canonical(fs::absolute(own_dir), ec).string() + "/";
    std::string here = fs::weakly_canonical(fs::absolute(path), ec).string();
    if (here.rfind(dir, 0) == 0)
      throw BadUsage(flag + " " + path + ": inside " + own_dir + ", which this command clears and fills with its "
                     "records; name a file outside it");
  }
  if (path.back() == '/' || fs::is_directory(path, ec))
    throw BadUsage(flag + " " + path + ": a file path for the report, not a folder");
  refuse_path_through_a_file(path, flag);
  for (const auto& in : inputs)
    if (!in.empty() && fs::exists(in, ec) && fs::exists(path, ec) && fs::equivalent(path, in, ec))
      throw BadUsage(flag + " " + path + ": that is an input of this command (" + in + "); name a new file");
  if (!fs::exists(fs::symlink_status(path, ec))) return;
  if (!fs::is_regular_file(fs::symlink_status(path, ec)))
    throw BadUsage(flag + " " + path + ": refusing to write over something that is not a regular file");
  // An existing file is replaced only when this command wrote it before.
  std::string text = existing_text(path, kMaxReadBytes).value_or("");
  if (text.find(signature) == std::string::npos)
    throw BadUsage(flag + " " + path + ": refusing to overwrite a file that is not an earlier report of this command "
                   "(remove it, or name a new file)");
}

void require_torch_for_built_in(const std::vector<std::string>& smoke_files, const std::string& command) {
  std::error_code ec;
  if (std::filesystem::exists(sibling_executable("lockstep-torch"), ec)) return;
  std::string built_in;
  size_t n = 0;
  for (const auto& file : smoke_files) {
    try {
      if (load_smoke_config(file).has_trainer()) continue;
    } catch (const Error&) {
      continue;
    }
    if (n++ < 5) built_in += (built_in.empty() ? "" : ", ") + file;
  }
  if (n == 0) return;
  throw EnvironmentError(built_in + (n > 5 ? " and " + std::to_string(n - 5) + " more" : "") +
                         (n == 1 ? ": a built-in smoke" : ": built-in smokes") +
                         " (no trainer section), which run in lockstep-torch, and this lockstep has none beside it; `" +
                         command + " --kind trainer` takes your trainer smokes only " + missing_torch_hint());
}

}  // namespace lockstep
