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

bool has_control(const std::string& s) {
  return std::any_of(s.begin(), s.end(), [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; });
}

// True when `rel` (a relative path) climbs out of where it is relative to:
// its first component is ".." ("..data" is a name like any other).
bool climbs_out(const fs::path& rel) { return !rel.empty() && *rel.begin() == ".."; }

// `path` relative to `root` when inside it ("" otherwise), links resolved;
// a folder ends with "/" (`folder` says so for a path that does not exist,
// e.g. a goldens folder deleted by the pushed commit); the root itself is
// "./" (every change).
std::string inside(const fs::path& root, const fs::path& path, bool folder = false) {
  std::error_code ec;
  fs::path abs = fs::weakly_canonical(fs::absolute(path), ec);
  if (ec) return "";
  fs::path rel = abs.lexically_relative(root);
  if (rel.empty() || climbs_out(rel)) return "";
  if (rel == ".") return "./";
  std::string s = rel.generic_string();
  if (!s.empty() && s.back() == '/') s.pop_back();
  if (folder || fs::is_directory(abs, ec)) s += "/";
  return s;
}

// Adds `path` as a trigger (inside()), and, where it reaches its target
// through symbolic links inside the repository, each link as a file
// trigger: git records a link as a file, so retargeting
// data/train.bin -> ../store/v2.bin changes "data/train.bin" only.
void add_trigger(const fs::path& root, const fs::path& path, bool folder, std::set<std::string>& triggers) {
  if (std::string rel = inside(root, path, folder); !rel.empty()) triggers.insert(rel);
  std::error_code ec;
  fs::path lexical = fs::absolute(path).lexically_normal().lexically_relative(root);
  if (lexical.empty() || climbs_out(lexical)) return;
  fs::path prefix;
  for (const fs::path& part : lexical) {
    prefix /= part;
    if (fs::is_symlink(fs::symlink_status(root / prefix, ec))) triggers.insert(prefix.generic_string());
  }
}

// The fixed part of a trainer.inputs pattern, as a path to trigger on: the
// path up to the first component holding a glob character ("data/*.bin" →
// "data/", "data/train.bin" → itself), relative to trainer.cwd, with
// {config_dir} replaced. "" for a pattern under {data} (the machine's data
// cache, not the commit's).
std::string input_trigger_path(const SmokeConfig& c, const std::string& pattern) {
  if (pattern.find("{data}") != std::string::npos) return "";
  std::string p = pattern;
  const std::string dir = fs::absolute(c.file).parent_path().lexically_normal().string();
  for (size_t at = p.find("{config_dir}"); at != std::string::npos; at = p.find("{config_dir}", at + dir.size()))
    p.replace(at, 12, dir);
  fs::path fixed;
  bool glob = false;
  for (const fs::path& part : fs::path(p)) {
    if ((glob = part.string().find_first_of("*?[") != std::string::npos)) break;
    fixed /= part;
  }
  if (!fixed.is_absolute()) fixed = fs::path(c.trainer.resolved_cwd) / fixed;
  return glob ? (fixed / "").string() : fixed.string();
}


// hook.smokes: smoke files or folders inside the repository, each once
// (one config under two spellings, or a file inside a listed folder, is
// refused: the check the hook runs would refuse it).
void read_hook_smokes(const JsonView& s, const fs::path& root, HookPlan& plan) {
  std::error_code ec;
  s.expect_array();
  if (s.size() == 0) s.fail("at least one smoke file or folder");
  plan.smokes.clear();
  std::vector<std::string> normal;  // each entry as inside() spells it: folders end with "/"
  for (size_t i = 0; i < s.size(); ++i) {
    std::string p = s.at(i).as_string();
    if (p.empty() || has_control(p) || fs::path(p).is_absolute() || inside(root, root / p).empty() ||
        inside(root, root / p) == "./")
      s.at(i).fail("a smoke file or folder inside the repository, relative to its root (not the root itself)");
    if (!fs::exists(root / p, ec)) s.at(i).fail("an existing smoke file or folder; " + (root / p).string() +
                                                 " does not exist");
    // "smoke", "./smoke/" and "smoke/unit.json" name one config twice:
    // the check the hook runs would refuse them.
    std::string q = inside(root, root / p, fs::is_directory(root / p, ec));
    for (size_t k = 0; k < normal.size(); ++k) {
      const std::string& r = normal[k];
      bool overlap = q == r || (r.back() == '/' && q.rfind(r, 0) == 0) || (q.back() == '/' && r.rfind(q, 0) == 0);
      if (overlap)
        s.at(i).fail("each smoke file or folder once; \"" + p + "\" names what \"" + plan.smokes[k] +
                     "\" (hook.smokes[" + std::to_string(k) + "]) names, or lies in it or around it");
    }
    normal.push_back(q);
    plan.smokes.push_back(p);
  }
}

// hook.paths: extra triggers relative to the repository root.
void read_hook_paths(const JsonView& ps, const fs::path& root, std::set<std::string>& triggers) {
  std::error_code ec;
  ps.expect_array();
  for (size_t i = 0; i < ps.size(); ++i) {
    std::string p = ps.at(i).as_string();
    std::string norm = fs::path(p).lexically_normal().generic_string();
    if (p.empty() || has_control(p) || fs::path(p).is_absolute() || climbs_out(fs::path(norm)))
      ps.at(i).fail("a path relative to the repository root (a folder ends with \"/\")");
    // A glob triggers on its fixed folder, as trainer.inputs does
    // ("src/*.py" → "src/"): the hook matches paths, not patterns.
    bool glob = false;
    fs::path fixed;
    for (const fs::path& part : fs::path(norm)) {
      if ((glob = part.string().find_first_of("*?[") != std::string::npos)) break;
      fixed /= part;
    }
    if (glob) norm = fixed.empty() ? "." : fixed.generic_string();
    // "." is every file; a folder named without its "/" still means the folder.
    bool folder = glob || p.back() == '/' || norm == "." || fs::is_directory(root / p, ec);
    if (norm == "." || norm == "./") norm = "./";
    else if (folder && norm.back() != '/') norm += "/";
    triggers.insert(norm);
  }
}

// A trainer smoke's triggers beyond its folder: the files trainer.inputs
// names (a deleted one still triggers: the pattern's fixed part is the
// trigger), and a note when trainer.cwd makes the triggers every file (the
// root or a folder around it) or none of its code (outside the repository).
void add_trainer_triggers(const fs::path& root, const std::string& file, const SmokeConfig& c, HookPlan& plan,
                          std::set<std::string>& triggers) {
  for (size_t i = 0; i < c.trainer.inputs.size(); ++i) {
    std::string path = input_trigger_path(c, c.trainer.inputs[i]);
    if (has_control(path))
      throw BadInput(file, "trainer.inputs[" + std::to_string(i) + "]",
                     "a path without control characters (the pre-push hook reads its triggers line by line), got \"" +
                         input_excerpt(c.trainer.inputs[i]) + "\"");
    if (!path.empty()) add_trigger(root, path, path.back() == '/', triggers);
  }
  // Notes quote paths from the config: escaped, one line each.
  const std::string name = printable_message(inside(root, file, false), false);
  const fs::path cwd = fs::weakly_canonical(fs::absolute(c.trainer.resolved_cwd));
  const std::string where = inside(root, cwd, true);
  // A trainer run from the repository root, or from a folder around it,
  // may import any file in it: every change triggers the check, and the
  // user is told why once.
  if (where == "./" || (where.empty() && !climbs_out(root.lexically_relative(cwd)))) {
    triggers.insert("./");
    std::string what = where == "./" ? "the repository root"
                                     : "a folder around the repository (" + printable_message(cwd.string(), false) + ")";
    plan.notes.push_back(name + ": trainer.cwd is " + what + ", so every changed file triggers the check "
                         "(its code may be anywhere there); a trainer in a folder of its own triggers on that folder");
  } else if (where.empty()) {
    plan.notes.push_back(name + ": trainer.cwd " + printable_message(cwd.string(), false) +
                         " is outside the repository, so a change to the trainer's code there never triggers the "
                         "check; only the smoke's config, goldens and inputs inside the repository do");
  }
}

// What the smokes read, as triggers: their configs and goldens folders, the
// data and model files, a trainer's folder; a note for a trainer run from
// the repository root.
void add_smoke_triggers(const fs::path& root, HookPlan& plan, std::set<std::string>& triggers) {
  std::error_code ec;
  std::vector<std::string> files;
  for (const std::string& s : plan.smokes) {
    fs::path p = root / s;
    bool is_file = fs::path(s).extension() == ".json";
    add_trigger(root, p, !is_file, triggers);
    if (!fs::exists(p, ec)) continue;  // the default smoke/ deleted in this commit: the trigger above fires
    for (const std::string& f : expand_smoke_args({p.string()})) files.push_back(f);
  }
  for (const std::string& file : files) {
    SmokeConfig c = load_smoke_config(file);
    std::string goldens = goldens_root(file, "");
    // The goldens folder is a folder even when the pushed commit deleted it.
    struct Read {
      std::string path;
      bool folder;
      const char* field;
    };
    for (const Read& read : {Read{file, false, "(its own path)"}, Read{goldens, true, "(its goldens folder)"},
                             Read{c.data.resolved_path, false, "data.path"}, Read{c.model.path, false, "model.path"},
                             Read{c.has_trainer() ? c.trainer.resolved_cwd : std::string(), true, "trainer.cwd"}}) {
      if (read.path.empty()) continue;
      if (has_control(read.path))
        throw BadInput(file, read.field, "a path without control characters (the pre-push hook reads its "
                                         "triggers line by line), got \"" + input_excerpt(read.path) + "\"");
      add_trigger(root, read.path, read.folder, triggers);
    }
    if (c.has_trainer()) add_trainer_triggers(root, file, c, plan, triggers);
  }
}

}  // namespace

HookPlan hook_plan(const std::string& root_dir) {
  std::error_code ec;
  if (!fs::is_directory(root_dir, ec))
    throw BadUsage("hook plan " + root_dir + ": expected the repository's root folder");
  fs::path root = fs::weakly_canonical(fs::absolute(root_dir));
  fs::path settings = root / "lockstep.json";
  HookPlan plan;
  plan.smokes = {"smoke"};
  std::set<std::string> triggers;
  bool has_settings = fs::exists(fs::symlink_status(settings, ec));
  if (has_settings && !fs::is_regular_file(settings, ec))
    throw BadInput(settings.string(), "", "a JSON file (it is a dangling link, a folder or not a regular file)");
  if (has_settings) {
    triggers.insert("lockstep.json");
    nlohmann::json doc = parse_json_file(settings.string());
    JsonView v(doc, settings.string());
    v.allow_keys({"schema", "hook"});
    if (v.has("schema") && v.at("schema").as_int(1, 1) != 1) v.at("schema").fail("1");
    if (v.has("hook")) {
      JsonView h = v.at("hook");
      h.allow_keys({"smokes", "paths"});
      if (h.has("smokes")) read_hook_smokes(h.at("smokes"), root, plan);
      if (h.has("paths")) read_hook_paths(h.at("paths"), root, triggers);
    }
  }
  add_smoke_triggers(root, plan, triggers);
  for (const std::string& t : triggers)
    if (has_control(t)) throw BadInput(settings.string(), "", "paths without control characters, got a trigger \"" +
                                                                  printable_message(t, false) + "\"");
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
