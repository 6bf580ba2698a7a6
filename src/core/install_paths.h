// Where lockstep finds the files it ships beside its binary: the Python
// helper, the CI template, the pre-push hook, the record schema. An
// installed lockstep (`cmake --install`, the Debian package) has them in
// <prefix>/share/lockstep/; a lockstep run from its build folder reads
// them from the source tree it was built from.
//
//   std::string t = shipped_path("ci/lockstep.gitlab-ci.yml", "ci/templates/lockstep.gitlab-ci.yml");
//   if (t.empty()) throw EnvironmentError("...");
#pragma once

#include <string>

namespace lockstep {

/// Path of the running executable (/proc/self/exe, links resolved: a
/// `lockstep` on PATH that links to /opt/lockstep/bin/lockstep gives the
/// latter). Throws EnvironmentError (exit 3) when it cannot be read.
std::string self_executable();

/// `name` in the folder of self_executable(): `lockstep-torch` beside
/// `lockstep`. The path, whether or not it exists. Same errors.
std::string sibling_executable(const std::string& name);

/// What to do when lockstep-torch is missing beside lockstep, as the
/// messages that need it end: "(install lockstep-torch beside lockstep:
/// ...)", naming what has it (the Debian package, the lockstep:cpu image)
/// and what has none (the relocatable bundle, a LOCKSTEP_WITH_TORCH=OFF
/// build; a trainer smoke needs it not).
std::string missing_torch_hint();

/// <prefix>/share/lockstep/<installed> when this executable is
/// <prefix>/bin/<name> and that exists, else <source tree>/<in_source> when
/// that exists, else "". Never throws.
std::string shipped_path(const std::string& installed, const std::string& in_source);

}  // namespace lockstep
