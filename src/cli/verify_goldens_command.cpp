// `lockstep verify-goldens [DIR]`: is the golden set trustworthy?
//
// Fails (exit 2), listing every problem, when:
//   - a golden does not parse, has an unknown schema, or its content hash
//     does not match (edited by hand);
//   - a pending (*.golden.new) or temporary file lies in the goldens folder;
//   - a golden belongs to no smoke config, its config hash or step count no
//     longer matches the config, or it is filed under another name/platform;
//   - it holds NaN/Inf and the smoke does not allow it;
//   - a platform the smoke declares in "platforms" has no golden;
//   - after a stack upgrade one platform's golden was refreshed and another
//     of the same device left on the old stack (torch.version or the
//     LibTorch library hash differs; the older golden is named stale).
#include <cmath>
#include <filesystem>
#include <iostream>
#include <set>

#include "cli/commands.h"
#include "cli/golden_store.h"
#include "cli/smoke_config.h"
#include "core/error.h"
#include "record/golden.h"

namespace lockstep {
namespace fs = std::filesystem;

namespace {

std::string field(const RunRecord& r, const std::string& name) {
  auto it = r.fingerprint.find(name);
  return it == r.fingerprint.end() ? "(missing)" : it->second.value;
}

bool has_nonfinite(const RunRecord& r) {
  for (const auto& [_, s] : r.series)
    for (double v : s.values)
      if (!std::isfinite(v)) return true;
  for (const auto* list : {&r.probes, &r.train_probes})
    for (const auto& p : *list)
      for (const auto& stat : tensor_stat_names())
        if (!std::isfinite(tensor_stat(p.inputs, stat)) || !std::isfinite(tensor_stat(p.labels, stat))) return true;
  return false;
}

}  // namespace

int verify_goldens_command(const VerifyOptions& o) {
  std::error_code ec;
  if (!fs::is_directory(o.goldens_dir, ec)) throw BadUsage(o.goldens_dir + ": no such goldens folder");
  std::string smoke_dir = o.smoke_dir.empty()
                              ? (fs::absolute(o.goldens_dir).lexically_normal().parent_path() / "smoke").string()
                              : o.smoke_dir;
  std::map<std::string, SmokeConfig> smokes = load_smoke_folder(smoke_dir);

  std::vector<std::string> problems;
  std::map<std::string, std::vector<std::pair<std::string, Golden>>> by_smoke;  // smoke -> (path, golden)
  std::vector<std::string> files;
  for (auto it = fs::recursive_directory_iterator(o.goldens_dir, ec); it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    if (ec) break;
    if (it->is_regular_file(ec)) files.push_back(it->path().string());
  }
  std::sort(files.begin(), files.end());

  for (const auto& path : files) {
    fs::path p(path);
    if (p.extension() != ".json") {
      problems.push_back(path + ": not a golden (pending or temporary file in the goldens folder; "
                         "promote pending goldens with `lockstep accept`, never by copying)");
      continue;
    }
    Golden g;
    try {
      g = read_golden(path);
    } catch (const Error& e) {
      problems.push_back(e.what());
      continue;
    }
    const RunRecord& r = g.record;
    std::string dir_smoke = p.parent_path().filename().string();
    if (r.smoke != dir_smoke || r.platform != p.stem().string())
      problems.push_back(path + ": filed as " + dir_smoke + "/" + p.stem().string() + " but holds smoke " + r.smoke +
                         " on platform " + r.platform);
    auto cfg = smokes.find(r.smoke);
    if (cfg == smokes.end()) {
      problems.push_back(path + ": no smoke config named \"" + r.smoke + "\" in " + smoke_dir);
      continue;
    }
    if (r.steps != cfg->second.steps)
      problems.push_back(path + ": " + std::to_string(r.steps) + " steps, but " + cfg->second.file + " now has " +
                         std::to_string(cfg->second.steps) + "; re-bless");
    else if (r.config_hash != cfg->second.config_hash)
      problems.push_back(path + ": blessed from another version of " + cfg->second.file + " (config hash " +
                         r.config_hash + ", now " + cfg->second.config_hash + "); re-bless");
    if (!cfg->second.tolerance.allow_nonfinite_golden && has_nonfinite(r))
      problems.push_back(path + ": holds NaN/Inf, which " + cfg->second.file + " does not allow");
    by_smoke[r.smoke].emplace_back(path, std::move(g));
  }

  for (const auto& [name, cfg] : smokes) {
    for (const auto& platform : cfg.platforms) {
      if (!fs::exists(golden_path(o.goldens_dir, name, platform), ec))
        problems.push_back(golden_path(o.goldens_dir, name, platform) + ": missing; " + cfg.file +
                           " declares platform " + platform);
    }
    if (cfg.platforms.empty() && !by_smoke.count(name))
      problems.push_back(cfg.file + ": smoke " + name + " has no golden in " + o.goldens_dir);
  }

  // Stale platforms: per smoke and device, every golden must share the stack.
  for (auto& [name, goldens] : by_smoke) {
    std::map<std::string, std::vector<const std::pair<std::string, Golden>*>> by_device;
    for (const auto& g : goldens) by_device[g.second.record.device].push_back(&g);
    for (auto& [device, list] : by_device) {
      const auto* newest = list.front();
      for (const auto* g : list)
        if (g->second.provenance.created_utc > newest->second.provenance.created_utc) newest = g;
      std::string stack = field(newest->second.record, "torch.version") + " " +
                          field(newest->second.record, "torch.library_xxh3");
      for (const auto* g : list) {
        std::string other = field(g->second.record, "torch.version") + " " + field(g->second.record, "torch.library_xxh3");
        if (other != stack)
          problems.push_back(g->first + ": stale: made on LibTorch " + field(g->second.record, "torch.version") +
                             " (library " + field(g->second.record, "torch.library_xxh3") + "), while " +
                             newest->first + " was re-blessed on " + field(newest->second.record, "torch.version") +
                             " (library " + field(newest->second.record, "torch.library_xxh3") +
                             "); re-bless it on the new stack");
      }
    }
  }

  size_t count = 0;
  for (const auto& [_, g] : by_smoke) count += g.size();
  if (problems.empty()) {
    std::cout << "verify-goldens: " << count << " golden(s) for " << smokes.size() << " smoke(s) in "
              << o.goldens_dir << ": OK\n";
    return 0;
  }
  for (const auto& p : problems) std::cerr << "verify-goldens: " << p << "\n";
  std::cerr << "verify-goldens: " << problems.size() << " problem(s)\n";
  return to_int(ExitCode::kBadInput);
}

}  // namespace lockstep
