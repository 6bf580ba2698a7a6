// The provenance a golden carries: who wrote it, when, why, from which
// commit, with which tool. One stamp for every writer of goldens and
// pending goldens (bless, accept, a failing check).
//
//   Provenance p = stamp_provenance("LibTorch 1.13 -> 2.11", "smoke/", /*runs=*/2);
//   // p.git_commit, p.git_author from the repository holding smoke/,
//   // "(absent: <why>)" outside one; p.created_utc is now.
#pragma once

#include <string>

#include "env/git_state.h"
#include "record/golden.h"

namespace lockstep {

/// A provenance stamped now: `reason`, the UTC time, HEAD and user.name
/// <user.email> of the git repository that holds `repo_path` (each
/// "(absent: <why>)" when there is none), this lockstep's version, `runs`.
/// Never throws for a missing repository.
Provenance stamp_provenance(const std::string& reason, const std::string& repo_path, int runs);

/// The same from a git state already read (bless reads it once for its
/// dirty-tree check and the stamp).
Provenance stamp_provenance(const std::string& reason, const GitState& git, int runs);

}  // namespace lockstep
