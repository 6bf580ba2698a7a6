#include "smoke/golden_store.h"

#include <algorithm>
#include <ctime>
#include <filesystem>
#include <vector>

#include "core/atomic_file.h"
#include "core/error.h"
#include "core/json_io.h"
#include "record/platform_key.h"

namespace lockstep {
namespace fs = std::filesystem;

std::string goldens_root(const std::string& config_file, const std::string& override_dir) {
  if (!override_dir.empty()) return override_dir;
  fs::path dir = fs::absolute(config_file).parent_path();
  return (dir.parent_path() / "goldens").lexically_normal().string();
}

void refuse_writing_into_folder_of_goldens(const std::string& path, const std::string& goldens_dir,
                                           const std::string& what, bool also_over_a_golden) {
  if (path.empty()) return;
  std::error_code ec;
  std::string goldens = fs::weakly_canonical(fs::absolute(goldens_dir), ec).string() + "/";
  if (fs::weakly_canonical(fs::absolute(path), ec).string().rfind(goldens, 0) == 0)
    throw BadUsage(path + ": refusing to write " + what + " into the goldens folder " + goldens +
                   " (goldens are written only by `lockstep bless` and `lockstep accept`)");
  if (also_over_a_golden) refuse_overwriting_a_golden(path, what);
}

void refuse_writing_into_goldens(const std::string& path, const std::string& config_file, const std::string& what) {
  refuse_writing_into_folder_of_goldens(path, goldens_root(config_file, ""), what);
}

void refuse_overwriting_a_golden(const std::string& path, const std::string& what) {
  if (path.empty()) return;
  std::optional<std::string> existing = existing_text(path, uint64_t{64} << 20);  // a golden is a few MB at most
  if (!existing) return;
  const std::string& text = *existing;
  // A record or report rewritten in place is the common case: no parse
  // unless the golden's key is there at all.
  if (text.find("\"content_hash\"") == std::string::npos) return;
  nlohmann::json j;
  try {
    j = parse_json_text(text, path);  // bounded depth
  } catch (const Error&) {
    return;  // not JSON: not a golden
  }
  if (j.is_object() && j.contains("provenance") && j.contains("content_hash"))
    throw BadUsage(path + ": refusing to write " + what + " over a golden (goldens are replaced only by "
                   "`lockstep bless` and `lockstep accept`)");
}

std::string golden_path(const std::string& root, const std::string& smoke, const std::string& platform) {
  return (fs::path(root) / smoke / (platform + ".json")).string();
}

std::string pending_platform_of(const std::string& file_name) {
  const size_t n = kPendingGoldenSuffix.size();
  if (file_name.size() <= n || file_name.compare(file_name.size() - n, n, kPendingGoldenSuffix) != 0) return "";
  return file_name.substr(0, file_name.size() - n);
}

std::string pending_path(const std::string& out_dir, const std::string& smoke, const std::string& platform) {
  return (fs::path(out_dir) / smoke / (platform + std::string(kPendingGoldenSuffix))).string();
}

std::vector<std::string> find_pending(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return out;
  for (auto it = fs::recursive_directory_iterator(dir, ec); it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (ec) break;
    const std::string name = it->path().filename().string();
    if (it->is_regular_file(ec) && !pending_platform_of(name).empty())
      out.push_back(it->path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string utc_now() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::optional<GoldenLookup> find_golden(const std::string& root, const std::string& smoke,
                                        const std::string& platform) {
  std::string exact = golden_path(root, smoke, platform);
  std::error_code ec;
  if (fs::exists(exact, ec)) return GoldenLookup{exact, true};

  std::string family = platform_family(platform);
  std::vector<std::string> candidates;
  for (const auto& e : fs::directory_iterator(fs::path(root) / smoke, ec)) {
    std::string name = e.path().filename().string();
    if (e.path().extension() != ".json") continue;
    std::string key = name.substr(0, name.size() - 5);
    if (platform_family(key) == family) candidates.push_back(e.path().string());
  }
  if (candidates.empty()) return std::nullopt;
  std::sort(candidates.begin(), candidates.end());
  return GoldenLookup{candidates.front(), false};
}

bool is_golden_name(const std::string& name) {
  return !name.empty() && name.front() != '.' && name.size() <= 100 &&
         name.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") ==
             std::string::npos;
}

Golden read_filed_golden(const GoldenLookup& found, const std::string& smoke) {
  Golden golden = read_golden(found.path);
  if (golden.provenance.action == "check")
    throw BadInput(found.path, "provenance.action",
                   "a golden written by bless or accept, got a pending golden a failing check left (copied into "
                   "the goldens folder by hand?); promote it with `lockstep accept DIR --reason ...`");
  if (golden.record.smoke != smoke)
    throw BadInput(found.path, "smoke", "\"" + smoke + "\" (the smoke this golden is filed under), got \"" +
                                            input_excerpt(golden.record.smoke) + "\"");
  // As verify-goldens holds it (gate/bless.h, validate_golden_candidate):
  // a golden lockstep made is two bit-identical runs or more.
  if (golden.provenance.imported_from.empty() && golden.provenance.runs < 2)
    throw BadInput(found.path, "provenance.runs",
                   "2 or more (a golden is made of bit-identical runs in fresh processes), got " +
                       std::to_string(golden.provenance.runs));
  std::string filed_as = std::filesystem::path(found.path).stem().string();
  if (golden.record.platform != filed_as)
    throw BadInput(found.path, "platform", "\"" + filed_as + "\" (the platform it is filed under), got \"" +
                                               input_excerpt(golden.record.platform) + "\"");
  return golden;
}

}  // namespace lockstep
