#include "gate/provenance.h"

#include "smoke/golden_store.h"

namespace lockstep {

Provenance stamp_provenance(const std::string& reason, const std::string& repo_path, int runs) {
  return stamp_provenance(reason, read_git_state(repo_path), runs);
}

Provenance stamp_provenance(const std::string& reason, const GitState& git, int runs) {
  Provenance p;
  p.reason = reason;
  p.created_utc = utc_now();
  p.git_commit = git.in_repo ? git.commit : "(absent: " + git.error + ")";
  p.git_author = git.in_repo ? git.author : "(absent: " + git.error + ")";
  p.tool_version = LOCKSTEP_VERSION;
  p.runs = runs;
  return p;
}

}  // namespace lockstep
