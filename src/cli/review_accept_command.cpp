// `lockstep review [DIR]` and `lockstep accept [DIR] --reason TEXT`: the
// pending-golden flow (as in snapshot tools such as insta, with numeric
// tolerances). A failing `check` in CI leaves <smoke>/<platform>.golden.new
// in its output folder; a person downloads the artifacts, reviews each
// pending golden against the current one, and accepts them with a reason.
#include <unistd.h>

#include <filesystem>
#include <iostream>
#include <map>

#include "cli/commands.h"
#include "compare/compare.h"
#include "compare/html_report.h"
#include "compare/text_report.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "gate/bless.h"
#include "gate/provenance.h"
#include "record/golden.h"
#include "smoke/golden_store.h"
#include "smoke/smoke_config.h"

namespace lockstep {
namespace fs = std::filesystem;

namespace {

std::string smoke_dir_for(const PendingOptions& o) {
  if (!o.smoke_dir.empty()) return o.smoke_dir;
  return (fs::absolute(o.goldens_dir).lexically_normal().parent_path() / "smoke").string();
}

std::vector<std::string> pending_or_fail(const PendingOptions& o) {
  std::vector<std::string> files = find_pending(o.dir);
  if (files.empty()) throw BadUsage(o.dir + ": no pending goldens (*.golden.new) to review");
  return files;
}

}  // namespace

int review_command(const PendingOptions& o) {
  std::map<std::string, SmokeConfig> smokes;
  std::error_code ec;
  if (fs::is_directory(smoke_dir_for(o), ec)) smokes = load_smoke_folder(smoke_dir_for(o));
  for (const auto& path : pending_or_fail(o)) {
    Golden pending = read_golden(path);
    const RunRecord& rec = pending.record;
    std::string current = golden_path(o.goldens_dir, rec.smoke, rec.platform);
    std::cout << "== " << path << "\n   " << pending.provenance.reason << "\n";
    if (!fs::exists(current, ec)) {
      std::cout << "   new golden: no " << current << " yet\n\n";
      continue;
    }
    TolerancePolicy policy;
    if (auto it = smokes.find(rec.smoke); it != smokes.end()) policy = it->second.tolerance;
    Golden golden = read_golden(current);
    Verdict v = compare_records(rec, golden.record, policy, {path, current});
    std::cout << render_text(v, isatty(STDOUT_FILENO));
    std::string html = path.substr(0, path.size() - 11) + ".review.html";
    write_file_atomically(html, render_html(v, rec, golden.record));
    std::cout << "   HTML: " << html << "\n\n";
  }
  std::cout << "review: the verdicts above are pending against current; if the change is approved: "
               "`lockstep accept " << o.dir << " --reason \"...\"`\n";
  return 0;
}

int accept_command(const PendingOptions& o) {
  if (o.reason.find_first_not_of(" \t\n") == std::string::npos)
    throw BadUsage("accept needs --reason TEXT: say why the goldens change (it is recorded)");
  if (running_in_ci() && !o.in_ci)
    throw BadUsage("CI is set: accept does not write goldens in CI; pass --in-ci to accept here anyway");
  GitState git = read_git_state(fs::absolute(o.goldens_dir).parent_path().string());
  std::map<std::string, SmokeConfig> smokes;
  std::error_code ec;
  if (fs::is_directory(smoke_dir_for(o), ec)) smokes = load_smoke_folder(smoke_dir_for(o));
  std::vector<std::pair<std::string, Golden>> accepted;
  for (const auto& path : pending_or_fail(o)) {
    Golden g = read_golden(path);  // content hash: the artifact was not edited
    auto cfg = smokes.find(g.record.smoke);
    if (cfg == smokes.end())
      throw BadInput(path, "smoke", "a smoke config named \"" + g.record.smoke + "\" in " + smoke_dir_for(o));
    if (cfg->second.config_hash != g.record.config_hash)
      throw BadInput(path, "config_hash",
                     cfg->second.config_hash + " (the current " + cfg->second.file + "): this pending golden was "
                     "made from another version of the config; run `lockstep check` again for a fresh one");
    validate_golden_candidate(g.record, cfg->second.tolerance.allow_nonfinite_golden, "accept " + path);
    accepted.emplace_back(path, std::move(g));
  }
  for (auto& [path, g] : accepted) {
    g.provenance = stamp_provenance(o.reason, git, g.provenance.runs);
    std::string target = golden_path(o.goldens_dir, g.record.smoke, g.record.platform);
    std::string hash = write_golden(target, g);
    fs::remove(path);
    std::cout << "accepted " << path << " -> " << target << " (content " << hash << ")\n";
  }
  std::cout << "now commit " << o.goldens_dir << "/ with the same reason\n";
  return 0;
}

}  // namespace lockstep
