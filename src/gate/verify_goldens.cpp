#include "gate/verify_goldens.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <iterator>
#include <map>
#include <set>

#include "core/atomic_file.h"
#include "core/error.h"
#include "core/json_io.h"
#include "gate/bless.h"
#include "record/golden.h"
#include "record/platform_key.h"
#include "smoke/golden_store.h"
#include "smoke/smoke_config.h"

namespace lockstep {
namespace fs = std::filesystem;

namespace {

std::string field(const RunRecord& r, const std::string& name) {
  auto it = r.fingerprint.find(name);
  return it == r.fingerprint.end() ? "(missing)" : it->second.value;
}

// Why a file that is not a golden lies in the goldens folder, and what to
// do; "" for a goldens lock nobody holds (a killed bless left it: a note).
std::string not_a_golden(const std::string& path) {
  fs::path p(path);
  if (p.filename() == ".lockstep.lock") {
    // Held now (a bless or accept runs) or left by one that was killed.
    int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    bool held = fd >= 0 && ::flock(fd, LOCK_SH | LOCK_NB) != 0;
    if (fd >= 0) ::close(fd);
    if (held) return path + ": a bless or accept holds the goldens folder now; run verify-goldens again when it has finished";
    return "";
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

// The smoke a path under the goldens folder belongs to: its first folder
// (goldens/<smoke>/<platform>.json); "" for a file at the top.
std::string owning_smoke(const std::string& goldens_dir, const std::string& path) {
  fs::path rel = fs::path(path).lexically_relative(goldens_dir);
  auto it = rel.begin();
  if (it == rel.end() || std::next(it) == rel.end()) return "";
  return it->string();
}

// The config's value-determining fields against the golden's: "" when the
// golden still matches (the same config.values_xxh3, or only where an
// input lives moved: `note` says so), else the problem.
std::string value_change(const std::string& path, const RunRecord& r, const SmokeConfig& cfg, std::string& note) {
  auto it = r.fingerprint.find("config.values_xxh3");
  if (it == r.fingerprint.end()) {  // made before lockstep kept the value hash: the file's hash decides
    if (r.config_hash == cfg.config_hash) return "";
    return path + ": blessed from another version of " + cfg.file + " (config hash " + r.config_hash + ", now " +
           cfg.config_hash + "); re-bless";
  }
  if (it->second.value == cfg.values_hash) return "";
  if (!r.config.empty()) {
    std::vector<std::string> fields = differing_config_fields(r.config, cfg.values_fields);
    if (!fields.empty() && std::all_of(fields.begin(), fields.end(), is_location_field)) {
      note = path + ": " + fields.front() + " moved (" + input_excerpt(r.config.count(fields.front()) ? r.config.at(fields.front()) : "") +
             " → " + input_excerpt(cfg.values_fields.count(fields.front()) ? cfg.values_fields.at(fields.front()) : "") +
             "); check compares the file's content (data.file_xxh3)";
      return "";
    }
    std::string named;
    for (size_t i = 0; i < fields.size() && i < 4; ++i) named += (i ? ", " : "") + fields[i];
    if (fields.size() > 4) named += ", and " + std::to_string(fields.size() - 4) + " more";
    return path + ": " + cfg.file + " changed a field that determines the values since it was blessed (" + named +
           "); re-bless";
  }
  return path + ": " + cfg.file + " changed a field that determines the values since it was blessed "
                "(config.values_xxh3 " + it->second.value + ", now " + cfg.values_hash + "); re-bless";
}

namespace {

// The regular files under `goldens_dir` of this shard's smokes (`in_shard`
// of the owning smoke); what is not a plain file, a folder named like a
// golden and a folder where the lock belongs are `problems`.
std::vector<std::string> golden_files(const std::string& goldens_dir,
                                      const std::function<bool(const std::string&)>& in_shard,
                                      std::vector<std::string>& problems) {
  std::vector<std::string> files;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(goldens_dir, ec); it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    if (ec) break;
    if (!in_shard(owning_smoke(goldens_dir, it->path().string()))) continue;
    if (it->is_regular_file(ec)) {
      files.push_back(it->path().string());
    } else if (!it->is_directory(ec)) {  // a FIFO, device, socket or dangling link named like a golden
      problems.push_back(it->path().string() + ": not a regular file (a golden is a plain JSON file); remove it");
    } else if (it->path().extension() == ".json") {
      problems.push_back(it->path().string() + ": a folder named like a golden; remove it");
    } else if (it->path().filename() == ".lockstep.lock") {
      problems.push_back(it->path().string() + ": a folder where the goldens lock belongs: every bless and accept "
                         "would fail; remove it");
      it.disable_recursion_pending();
    }
  }
  return files;
}

// The stack a golden was made on: LibTorch's version and library hash, and
// a trainer's torch ("python.torch"), as far as the record has them.
std::string made_on(const RunRecord& r) {
  std::string out = "LibTorch " + field(r, "torch.version") + " (library " + field(r, "torch.library_xxh3") + ")";
  if (r.fingerprint.count("python.torch")) out += ", torch " + field(r, "python.torch");
  return out;
}

using GoldenList = std::vector<const std::pair<std::string, Golden>*>;

// The newest golden of `list` (by provenance time).
const std::pair<std::string, Golden>* newest_of(const GoldenList& list) {
  const auto* newest = list.front();
  for (const auto* g : list)
    if (g->second.provenance.created_utc > newest->second.provenance.created_utc) newest = g;
  return newest;
}

// Stale platforms: per smoke, device and stack label, every golden must
// share the stack (made_on) of the newest one; the others are `problems`.
// Across labels: a label on the unlabeled goldens' own stack is left over
// from a finished migration (a problem); one on another stack is a
// migration in progress (a note naming the stack the label leaves behind).
// An imported golden (another tool's curves) has no stack: neither newer
// nor stale.
void stale_stacks(const std::map<std::string, std::vector<std::pair<std::string, Golden>>>& by_smoke,
                  std::vector<std::string>& problems, std::vector<std::string>& notes) {
  for (const auto& [name, goldens] : by_smoke) {
    std::map<std::string, std::map<std::string, GoldenList>> by_device;  // device -> stack label -> goldens
    for (const auto& g : goldens)
      if (g.second.provenance.imported_from.empty())
        by_device[g.second.record.device][g.second.record.stack].push_back(&g);
    for (auto& [device, by_label] : by_device) {
      for (auto& [label, list] : by_label) {
        const auto* newest = newest_of(list);
        std::string stack = made_on(newest->second.record);
        for (const auto* g : list)
          if (made_on(g->second.record) != stack)
            problems.push_back(g->first + ": stale: made on " + made_on(g->second.record) + ", while " +
                               newest->first + " was re-blessed on " + stack + "; re-bless it on the new stack" +
                               (label.empty() ? "" : std::string(" (") + kStackVariable + "=" + label + ")"));
      }
      auto unlabeled = by_label.find("");
      if (unlabeled == by_label.end()) continue;
      const auto* base = newest_of(unlabeled->second);
      for (auto& [label, list] : by_label) {
        if (label.empty()) continue;
        const auto* labeled = newest_of(list);
        if (made_on(labeled->second.record) == made_on(base->second.record))
          problems.push_back(labeled->first + ": stack label " + label + " holds a golden made on the unlabeled " +
                             base->first + "'s own stack (" + made_on(base->second.record) +
                             "): the migration is over; remove the label's goldens (git rm " + labeled->first +
                             ") and " + kStackVariable + " from the CI job");
        else
          notes.push_back(labeled->first + ": migration in progress: stack label " + label + " on " +
                          made_on(labeled->second.record) + "; the unlabeled " + base->first +
                          " stays on the stack left behind, " + made_on(base->second.record));
      }
    }
  }
}

// One audit: this shard's smokes, and what the goldens folder holds for them.
struct Audit {
  std::string goldens_dir, smoke_dir;
  Shard shard;
  std::map<std::string, SmokeConfig> smokes;  ///< this shard's smokes
  std::vector<std::string> names;             ///< every smoke of the suite, sorted
  std::vector<std::string> problems, notes;
  std::map<std::string, std::vector<std::pair<std::string, Golden>>> by_smoke;  ///< smoke -> (path, golden)
  std::set<std::string> unreadable;  ///< smokes whose golden file could not be read (named once, as unreadable)

  // A file under the goldens folder: a golden that must read, be filed
  // where it belongs, match its smoke's steps and values and be one bless
  // would keep; or a lock file.
  void file(const std::string& path) {
    fs::path p(path);
    if (p.extension() != ".json") {
      std::string why = not_a_golden(path);
      if (why.empty())
        notes.push_back(path + ": a goldens lock nobody holds (a bless or accept was killed); it is stale and "
                        "harmless: the next bless or accept takes it over (or rm -- '" + path + "')");
      else
        problems.push_back(why);
      return;
    }
    Golden g;
    try {
      g = read_golden(path);
    } catch (const Error& e) {
      problems.push_back(e.what());
      unreadable.insert(p.parent_path().filename().string());  // its smoke is not "without a golden" too
      return;
    }
    // A day of clock skew between machines is allowed; a golden "made"
    // later than that sorts as the newest of its stack whatever it holds.
    if (g.provenance.created_utc > utc_now(86400))
      problems.push_back(path + ": provenance.created_utc: " + g.provenance.created_utc +
                         " is in the future (this machine's clock says " + utc_now() +
                         "): a hand-made or mis-clocked golden; re-bless it on a machine with the right time");
    if (g.provenance.action == "check")
      problems.push_back(path + ": provenance.action: a pending golden a failing check left, copied into the goldens "
                         "folder by hand; promote it with `lockstep accept DIR --reason ...` instead");
    const RunRecord& r = g.record;
    std::string dir_smoke = p.parent_path().filename().string();
    if (r.smoke != dir_smoke || golden_key(r.platform, r.stack) != p.stem().string())
      problems.push_back(path + ": filed as " + dir_smoke + "/" + p.stem().string() + " but holds smoke " + r.smoke +
                         " on platform " + r.platform + (r.stack.empty() ? "" : " under stack label " + r.stack));
    auto cfg = smokes.find(r.smoke);
    if (cfg == smokes.end()) {
      if (shard.count == 0 || !std::binary_search(names.begin(), names.end(), r.smoke))
        problems.push_back(path + ": no smoke config named \"" + r.smoke + "\" in " + smoke_dir);
      return;  // (or filed under this shard's smoke but holding another shard's: named above)
    }
    std::string note;
    if (r.seed != cfg->second.seed)
      problems.push_back(path + ": seed.base: " + std::to_string(r.seed) + ", but " + cfg->second.file +
                         " has seed " + std::to_string(cfg->second.seed) + " (a golden is made with its config's "
                         "seed); re-bless");
    if (r.steps != cfg->second.steps)
      problems.push_back(path + ": " + std::to_string(r.steps) + " steps, but " + cfg->second.file + " now has " +
                         std::to_string(cfg->second.steps) + "; re-bless");
    else if (std::string change = value_change(path, r, cfg->second, note); !change.empty())
      problems.push_back(change);
    if (!note.empty()) notes.push_back(note);
    if (r.config.empty())
      notes.push_back(path + ": made before records kept the config's value fields: an input change against it is "
                             "named by the config's hash only; a re-bless names the field (optimizer.lr 0.01 → 0.011)");
    try {  // what bless and accept refuse, a golden may not hold either
      validate_kept_golden(g, cfg->second, "keep " + path + " as a golden");
    } catch (const Error& e) {
      problems.push_back(e.what());
    }
    by_smoke[r.smoke].emplace_back(path, std::move(g));
  }

  // Every platform a smoke declares has its (unlabeled) golden; a smoke
  // that declares none has at least one.
  void declared_platforms() {
    std::error_code ec;
    for (const auto& [name, cfg] : smokes) {
      for (const auto& platform : cfg.platforms) {
        if (!fs::exists(golden_path(goldens_dir, name, platform), ec))
          problems.push_back(golden_path(goldens_dir, name, platform) + ": missing; " + cfg.file +
                             " declares platform " + platform);
      }
      if (cfg.platforms.empty() && !by_smoke.count(name) && !unreadable.count(name))
        problems.push_back(cfg.file + ": smoke " + name + " has no golden in " + goldens_dir);
    }
  }
};

}  // namespace

GoldensAudit audit_goldens(const std::string& goldens_dir, const std::string& smoke_dir_option, Shard shard) {
  std::error_code ec;
  if (!fs::is_directory(goldens_dir, ec)) throw BadUsage(goldens_dir + ": no such goldens folder");
  Audit a;
  a.goldens_dir = goldens_dir;
  a.smoke_dir = smoke_dir_option.empty()
                    ? (fs::absolute(goldens_dir).lexically_normal().parent_path() / "smoke").string()
                    : smoke_dir_option;
  if (smoke_dir_option.empty() && !fs::exists(a.smoke_dir, ec))
    throw BadUsage(goldens_dir + ": no smoke folder beside it (" + a.smoke_dir + "); name the folder of the smoke "
                   "configs these goldens belong to with --smoke DIR");
  a.shard = shard;
  a.smokes = load_smoke_folder(a.smoke_dir);
  // This shard's smokes (every smoke without --shard); files of no known
  // smoke are shard 1's.
  for (const auto& [name, _] : a.smokes) a.names.push_back(name);
  std::set<std::string> mine;
  for (size_t i : shard_members(a.names, shard)) mine.insert(a.names[i]);
  auto in_shard = [&](const std::string& smoke) {
    return shard.count == 0 || (a.smokes.count(smoke) ? mine.count(smoke) > 0 : shard.index == 1);
  };
  for (auto it = a.smokes.begin(); it != a.smokes.end();) it = mine.count(it->first) ? std::next(it) : a.smokes.erase(it);

  std::vector<std::string> files = golden_files(goldens_dir, in_shard, a.problems);
  std::sort(files.begin(), files.end());
  for (const auto& path : files) a.file(path);
  a.declared_platforms();
  stale_stacks(a.by_smoke, a.problems, a.notes);

  GoldensAudit audit;
  for (const auto& [_, g] : a.by_smoke) audit.goldens += g.size();
  audit.smokes = a.smokes.size();
  audit.problems = std::move(a.problems);
  audit.notes = std::move(a.notes);
  return audit;
}

}  // namespace lockstep
