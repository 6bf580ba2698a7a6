#include "gate/hook_settings.h"

#include <algorithm>
#include <filesystem>
#include <set>

#include "core/error.h"
#include "core/json_io.h"
#include "smoke/golden_store.h"
#include "smoke/smoke_config.h"

namespace lockstep {
namespace fs = std::filesystem;

namespace {

// `path` relative to `root` when inside it ("" otherwise), with "/" after
// a folder; the root itself is "./" (every change).
std::string inside(const fs::path& root, const fs::path& path) {
  std::error_code ec;
  fs::path abs = fs::weakly_canonical(fs::absolute(path), ec);
  if (ec) return "";
  fs::path rel = abs.lexically_relative(root);
  if (rel.empty() || rel.native().rfind("..", 0) == 0) return "";
  if (rel == ".") return "./";
  std::string s = rel.generic_string();
  if (fs::is_directory(abs, ec)) s += "/";
  return s;
}

}  // namespace

HookPlan hook_plan(const std::string& root_dir) {
  fs::path root = fs::weakly_canonical(fs::absolute(root_dir));
  fs::path settings = root / "lockstep.json";
  HookPlan plan;
  plan.smokes = {"smoke"};
  std::set<std::string> triggers;
  std::error_code ec;
  if (fs::exists(settings, ec)) {
    triggers.insert("lockstep.json");
    nlohmann::json doc = parse_json_file(settings.string());
    JsonView v(doc, settings.string());
    v.allow_keys({"schema", "hook"});
    if (v.has("schema") && v.at("schema").as_int(1, 1) != 1) v.at("schema").fail("1");
    if (v.has("hook")) {
      JsonView h = v.at("hook");
      h.allow_keys({"smokes", "paths"});
      if (h.has("smokes")) {
        JsonView s = h.at("smokes");
        s.expect_array();
        if (s.size() == 0) s.fail("at least one smoke file or folder");
        plan.smokes.clear();
        for (size_t i = 0; i < s.size(); ++i) {
          std::string p = s.at(i).as_string();
          if (p.empty() || fs::path(p).is_absolute() || inside(root, root / p).empty())
            s.at(i).fail("a smoke file or folder inside the repository, relative to its root");
          plan.smokes.push_back(p);
        }
      }
      if (h.has("paths")) {
        JsonView ps = h.at("paths");
        ps.expect_array();
        for (size_t i = 0; i < ps.size(); ++i) {
          std::string p = ps.at(i).as_string();
          if (p.empty() || fs::path(p).is_absolute() || fs::path(p).lexically_normal().native().rfind("..", 0) == 0)
            ps.at(i).fail("a path relative to the repository root (a folder ends with \"/\")");
          triggers.insert(fs::path(p).lexically_normal().generic_string());
        }
      }
    }
  }
  std::vector<std::string> files;
  for (const std::string& s : plan.smokes) {
    fs::path p = root / s;
    if (std::string rel = inside(root, p); !rel.empty()) triggers.insert(rel);
    if (!fs::exists(p, ec)) continue;  // deleted in this commit: the trigger above still fires
    for (const std::string& f : expand_smoke_args({p.string()})) files.push_back(f);
  }
  for (const std::string& file : files) {
    SmokeConfig c = load_smoke_config(file);
    for (const std::string& read : {file, goldens_root(file, ""), c.data.resolved_path, c.model.path,
                                    c.has_trainer() ? c.trainer.resolved_cwd : std::string()}) {
      if (read.empty()) continue;
      std::string rel = inside(root, read);
      if (!rel.empty()) triggers.insert(rel);
      // A goldens folder not created yet: its first golden must still trigger.
      else if (read == goldens_root(file, "") && !fs::exists(read, ec))
        if (std::string parent = inside(root, fs::path(read).parent_path()); !parent.empty())
          triggers.insert(parent + fs::path(read).filename().string() + "/");
    }
  }
  // A path under a folder already listed adds nothing.
  for (const std::string& t : triggers) {
    bool covered = false;
    for (const std::string& folder : triggers)
      covered = covered || (folder != t && folder.back() == '/' && (folder == "./" || t.rfind(folder, 0) == 0));
    if (!covered) plan.triggers.push_back(t);
  }
  return plan;
}

}  // namespace lockstep
