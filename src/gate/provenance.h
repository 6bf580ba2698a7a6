// The provenance a golden carries: who wrote it, when, why, from which
// commit, with which tool. One stamp for every writer of goldens and
// pending goldens (bless, accept, a failing check).
//
//   Provenance p = stamp_provenance("LibTorch 1.13 -> 2.11", "smoke/", /*runs=*/2);
//   // p.git_commit, p.git_author from the repository holding smoke/,
//   // "(absent: <why>)" outside one; p.created_utc is now.
#pragma once

#include <string>

#include "machine/git_state.h"
#include "record/golden.h"

namespace lockstep {

/// A provenance stamped now by `action` ("bless", "accept", "check"):
/// `reason`, the UTC time, HEAD and user.name <user.email> of the git
/// repository that holds `repo_path` (each "(absent: <why>)" when there is
/// none), this lockstep's version, `runs`, and GitLab's $CI_JOB_URL and
/// $CI_RUNNER_DESCRIPTION when set. `replaces` is left to the writer, which
/// knows the golden it replaces. Never throws for a missing repository.
Provenance stamp_provenance(const std::string& action, const std::string& reason, const std::string& repo_path,
                            int runs);

/// One line saying who wrote a golden, how, when, from which commit and CI
/// job, and why: `blessed 2026-12-01T15:00:00Z by A <a@x> at commit
/// 1a2b3c4d5e6f (lockstep 0.1.0, 2 runs) in CI job <url> on runner <r>,
/// replacing 9f8e...: "reason"`.
std::string describe_provenance(const Provenance& provenance);

/// The same from a git state already read (bless reads it once for its
/// dirty-tree check and the stamp).
Provenance stamp_provenance(const std::string& action, const std::string& reason, const GitState& git, int runs);

}  // namespace lockstep
