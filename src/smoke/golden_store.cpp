#include "smoke/golden_store.h"

#include <algorithm>
#include <cstdlib>
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

std::string golden_path(const std::string& root, const std::string& smoke, const std::string& key) {
  return (fs::path(root) / smoke / (key + ".json")).string();
}

std::string pending_platform_of(const std::string& file_name) {
  const size_t n = kPendingGoldenSuffix.size();
  if (file_name.size() <= n || file_name.compare(file_name.size() - n, n, kPendingGoldenSuffix) != 0) return "";
  return file_name.substr(0, file_name.size() - n);
}

std::string pending_path(const std::string& out_dir, const std::string& smoke, const std::string& key) {
  return (fs::path(out_dir) / smoke / (key + std::string(kPendingGoldenSuffix))).string();
}

std::vector<std::string> find_pending(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return out;
  for (auto it = fs::recursive_directory_iterator(dir, ec); it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (ec) break;
    const std::string name = it->path().filename().string();
    if (!pending_platform_of(name).empty())
      out.push_back(it->path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}


std::vector<std::string> filed_goldens(const std::string& root, const std::string& smoke) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(fs::path(root) / smoke, ec)) {
    std::string name = e.path().filename().string();
    if (e.path().extension() != ".json") continue;
    if (!is_golden_key(name.substr(0, name.size() - 5))) continue;  // "x@.json" is no golden name
    out.push_back(e.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

namespace {

// The golden of `platform` under exactly `stack`, else the first (by name)
// of its family under exactly `stack`.
std::optional<GoldenLookup> find_under_label(const std::string& root, const std::string& smoke,
                                             const std::string& platform, const std::string& stack) {
  std::string exact = golden_path(root, smoke, golden_key(platform, stack));
  std::error_code ec;
  if (fs::exists(exact, ec)) return GoldenLookup{exact, true, true};

  std::string family = platform_family(platform);
  for (const std::string& path : filed_goldens(root, smoke)) {  // sorted: the first by name
    auto [key_platform, key_stack] = split_golden_key(fs::path(path).stem().string());
    if (key_stack == stack && platform_family(key_platform) == family) return GoldenLookup{path, false, true};
  }
  return std::nullopt;
}

}  // namespace

std::optional<GoldenLookup> find_golden(const std::string& root, const std::string& smoke,
                                        const std::string& platform, const std::string& stack) {
  if (auto found = find_under_label(root, smoke, platform, stack)) return found;
  if (stack.empty()) return std::nullopt;
  auto unlabeled = find_under_label(root, smoke, platform, "");
  if (unlabeled) unlabeled->exact_stack = false;
  return unlabeled;
}

std::string stand_in_note(const GoldenLookup& found, const std::string& platform, const std::string& stack) {
  if (!found.exact_stack)
    return "no golden for stack " + stack + " (" + kStackVariable + ") on platform " + platform +
           (found.exact_platform ? "" : " or its family") + "; compared against the unlabeled " + found.path +
           "; when this stack's values are right, file its own golden: " + kStackVariable + "=" + stack +
           " lockstep bless ..., or accept the pending golden";
  if (!found.exact_platform)
    return "no golden for platform " + golden_key(platform, stack) + "; compared against " + found.path +
           " of the same family";
  return "";
}

bool is_golden_key(const std::string& key) {
  auto [platform, stack] = split_golden_key(key);
  return is_golden_name(platform) && (key.find('@') == std::string::npos || is_stack_label(stack));
}

std::string stack_label() {
  const char* v = std::getenv(kStackVariable);
  if (!v || !*v) return "";
  std::string label = v;
  if (!is_stack_label(label))
    throw BadUsage(std::string(kStackVariable) + "=" + input_excerpt(label) +
                   ": expected a stack label (1..40 letters, digits, '.', '_' and '-', starting with a letter or "
                   "digit, such as torch2 or lts); it names golden files <platform>@<label>.json");
  return label;
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
  auto [platform, stack] = split_golden_key(std::filesystem::path(found.path).stem().string());
  if (golden.record.platform != platform)
    throw BadInput(found.path, "platform", "\"" + platform + "\" (the platform it is filed under), got \"" +
                                               input_excerpt(golden.record.platform) + "\"");
  if (golden.record.stack != stack)
    throw BadInput(found.path, "stack",
                   (stack.empty() ? std::string("no stack label (the file name has none)")
                                  : "\"" + stack + "\" (the stack label it is filed under)") +
                       ", got " + (golden.record.stack.empty() ? "none" : "\"" + input_excerpt(golden.record.stack) + "\""));
  return golden;
}

std::string foreign_series(const RunRecord& record, const SmokeConfig& config) {
  if (!config.has_trainer()) return "";
  for (const auto& [name, series] : record.series)
    if (!config.trainer.series.count(name)) {
      std::string known;
      for (const auto& [k, tag] : config.trainer.series) known += (known.empty() ? "" : ", ") + k;
      return "series " + printable_message(name, false) + ": not a series " + config.file +
             " records (trainer.metrics.series: " + known + ")";
    }
  return "";
}

}  // namespace lockstep
