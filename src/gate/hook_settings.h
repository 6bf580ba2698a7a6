// What the pre-push hook checks, and which changes make it check: read
// from the committed `lockstep.json` at the repository root (optional),
// never from environment variables, so every clone gates the same way.
//
//   {"hook": {"smokes": ["smoke"],                 // default ["smoke"]
//             "paths": ["requirements.txt", "src/"]}}   // extra triggers
//
//   HookPlan plan = hook_plan("/repo");       // in the pushed commit's tree
//   plan.smokes;    // {"smoke"}
//   plan.triggers;  // {"lockstep.json", "smoke/", "goldens/", "smoke/data/val.csv", ...}
//   plan.notes;     // {"smoke/nanogpt.json: trainer.cwd is the repository root: every changed file ..."}
//
// A push triggers the check when a changed file equals a trigger, or lies
// under a trigger ending in "/". By default the triggers are what the
// smokes read: their configs, their goldens folders, the data and
// TorchScript files they name, a trainer smoke's whole working folder (its
// code) and its trainer.inputs (a glob by its fixed folder: "data/*.bin"
// triggers on "data/"), lockstep.json and the `paths` listed. Files outside
// the repository ({data} datasets) are the machine's, not the commit's; a
// trainer folder outside the repository is named in a note (its code never
// triggers), one around it makes every change a trigger.
#pragma once

#include <string>
#include <vector>

namespace lockstep {

/// The hook's settings for one tree.
struct HookPlan {
  std::vector<std::string> smokes;    ///< smoke files/folders to check, relative to the root
  std::vector<std::string> triggers;  ///< sorted, unique; folders end with "/"; "./" is every file
  /// What the user should know about the triggers, one line each: a
  /// trainer smoke whose working folder is the repository root (or a
  /// folder around it) makes every changed file a trigger ("./"); one
  /// outside the repository is never seen. The note names the smoke.
  std::vector<std::string> notes;
};

/// Reads `<root>/lockstep.json` (absent: the defaults) and the smoke
/// configs it names. Throws exit-2 Error naming lockstep.json and the field
/// for a malformed settings file, or the config file for a bad smoke.
HookPlan hook_plan(const std::string& root);

}  // namespace lockstep
