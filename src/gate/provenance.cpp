#include "gate/provenance.h"

#include <cstdlib>

#include "core/json_io.h"
#include "smoke/golden_store.h"

namespace lockstep {

Provenance stamp_provenance(const std::string& action, const std::string& reason, const std::string& repo_path,
                            int runs) {
  return stamp_provenance(action, reason, read_git_state(repo_path), runs);
}

Provenance stamp_provenance(const std::string& action, const std::string& reason, const GitState& git, int runs) {
  Provenance p;
  p.action = action;
  if (const char* url = std::getenv("CI_JOB_URL"); url && *url) p.ci_job_url = url;
  if (const char* runner = std::getenv("CI_RUNNER_DESCRIPTION"); runner && *runner) p.ci_runner = runner;
  p.reason = reason;
  p.created_utc = utc_now();
  p.git_commit = git.in_repo ? git.commit : "(absent: " + git.error + ")";
  p.git_author = git.in_repo ? git.author : "(absent: " + git.error + ")";
  // A CI runner rarely has a git identity; GitLab says who started the job.
  const char* gl_name = std::getenv("GITLAB_USER_NAME");
  if (gl_name && *gl_name && (!git.in_repo || git.author.rfind("(no user.name)", 0) == 0)) {
    const char* gl_email = std::getenv("GITLAB_USER_EMAIL");
    p.git_author = std::string(gl_name) + " <" + (gl_email ? gl_email : "") + "> (GitLab user of the job)";
  }
  p.tool_version = LOCKSTEP_VERSION;
  p.runs = runs;
  return p;
}

std::string describe_provenance(const Provenance& p) {
  std::string verb = p.action == "bless"    ? "blessed"
                     : p.action == "accept" ? "accepted"
                     : p.action == "check"  ? "left pending by check"
                     : p.action == "import" ? "imported"
                                            : "written";
  std::string commit = p.git_commit.rfind("(absent", 0) == 0 ? p.git_commit : p.git_commit.substr(0, 12);
  std::string out = verb + " " + p.created_utc + " by " + p.git_author + " at commit " + commit + " (lockstep " +
                    p.tool_version + ", " + std::to_string(p.runs) + " run" + (p.runs == 1 ? "" : "s") +
                    (p.allow_dirty ? ", from a dirty work tree" : "") + ")";
  if (!p.ci_job_url.empty()) out += " in CI job " + p.ci_job_url;
  if (!p.ci_runner.empty()) out += " on runner " + p.ci_runner;
  if (!p.replaces.empty()) out += ", replacing " + p.replaces;
  if (!p.imported_from.empty()) out += ", curves imported from " + p.imported_from;
  if (!p.narrower.empty()) out += ", narrower than the golden it replaced (no longer checked: " + p.narrower + ")";
  return out + ": \"" + p.reason + "\"";
}

}  // namespace lockstep
