#include "gate/verify_goldens.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>

#include "core/atomic_file.h"
#include "core/error.h"
#include "gate/bless.h"
#include "record/golden.h"
#include "smoke/golden_store.h"
#include "smoke/smoke_config.h"

namespace lockstep {
namespace fs = std::filesystem;

namespace {

std::string field(const RunRecord& r, const std::string& name) {
  auto it = r.fingerprint.find(name);
  return it == r.fingerprint.end() ? "(missing)" : it->second.value;
}

// Why a file that is not a golden lies in the goldens folder, and what to do.
std::string not_a_golden(const std::string& path) {
  fs::path p(path);
  if (p.filename() == ".lockstep.lock") {
    // Held now (a bless or accept runs) or left by one that was killed.
    int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    bool held = fd >= 0 && ::flock(fd, LOCK_SH | LOCK_NB) != 0;
    if (fd >= 0) ::close(fd);
    if (held) return path + ": a bless or accept holds the goldens folder now; run verify-goldens again when it has finished";
    return path + ": the lock file of a bless or accept that was killed (nobody holds it); remove it: rm -- '" +
           path + "'";
  }
  for (const auto& t : find_temporaries(p.parent_path().string())) {
    if (t.path != path) continue;
    if (t.writer_alive)
      return path + ": being written by process " + std::to_string(t.pid) +
             " (a bless or accept running now); run verify-goldens again when it has finished";
    return path + ": a temporary file of an interrupted write (" +
           (t.pid > 0    ? "process " + std::to_string(t.pid) + " has exited"
            : t.pid < 0  ? "its pid is beyond any process's"
                         : "an older lockstep") +
           "; the next bless or accept removes its own), remove it: rm -- '" + path + "'";
  }
  return path + ": not a golden (pending or temporary file in the goldens folder; promote pending goldens "
                "with `lockstep accept`, never by copying)";
}

}  // namespace

GoldensAudit audit_goldens(const std::string& goldens_dir, const std::string& smoke_dir_option) {
  std::error_code ec;
  if (!fs::is_directory(goldens_dir, ec)) throw BadUsage(goldens_dir + ": no such goldens folder");
  std::string smoke_dir = smoke_dir_option.empty()
                              ? (fs::absolute(goldens_dir).lexically_normal().parent_path() / "smoke").string()
                              : smoke_dir_option;
  std::map<std::string, SmokeConfig> smokes = load_smoke_folder(smoke_dir);

  std::vector<std::string> problems;
  std::map<std::string, std::vector<std::pair<std::string, Golden>>> by_smoke;  // smoke -> (path, golden)
  std::vector<std::string> files;
  for (auto it = fs::recursive_directory_iterator(goldens_dir, ec); it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    if (ec) break;
    if (it->is_regular_file(ec)) {
      files.push_back(it->path().string());
    } else if (!it->is_directory(ec)) {  // a FIFO, device, socket or dangling link named like a golden
      problems.push_back(it->path().string() + ": not a regular file (a golden is a plain JSON file); remove it");
    } else if (it->path().extension() == ".json") {
      problems.push_back(it->path().string() + ": a folder named like a golden; remove it");
    }
  }
  std::sort(files.begin(), files.end());

  for (const auto& path : files) {
    fs::path p(path);
    if (p.extension() != ".json") {
      problems.push_back(not_a_golden(path));
      continue;
    }
    Golden g;
    try {
      g = read_golden(path);
    } catch (const Error& e) {
      problems.push_back(e.what());
      continue;
    }
    if (g.provenance.action == "check")
      problems.push_back(path + ": provenance.action: a pending golden a failing check left, copied into the goldens "
                         "folder by hand; promote it with `lockstep accept DIR --reason ...` instead");
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
    try {  // what bless and accept refuse, a golden may not hold either
      validate_contract(r, cfg->second, "keep " + path + " as a golden");
      validate_golden_candidate(r, g.provenance.runs, cfg->second.tolerance.allow_nonfinite_golden,
                                "keep " + path + " as a golden");
    } catch (const Error& e) {
      problems.push_back(e.what());
    }
    by_smoke[r.smoke].emplace_back(path, std::move(g));
  }

  for (const auto& [name, cfg] : smokes) {
    for (const auto& platform : cfg.platforms) {
      if (!fs::exists(golden_path(goldens_dir, name, platform), ec))
        problems.push_back(golden_path(goldens_dir, name, platform) + ": missing; " + cfg.file +
                           " declares platform " + platform);
    }
    if (cfg.platforms.empty() && !by_smoke.count(name))
      problems.push_back(cfg.file + ": smoke " + name + " has no golden in " + goldens_dir);
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

  GoldensAudit audit;
  for (const auto& [_, g] : by_smoke) audit.goldens += g.size();
  audit.smokes = smokes.size();
  audit.problems = std::move(problems);
  return audit;
}

}  // namespace lockstep
