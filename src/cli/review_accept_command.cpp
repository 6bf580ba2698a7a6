// `lockstep review [DIR]` and `lockstep accept [DIR] --reason TEXT`: print
// and write what gate/pending.h finds. A failing `check` in CI leaves
// <smoke>/<platform>.golden.new in its output folder; a person downloads the
// artifacts, reviews each pending golden against the current one, and
// accepts them with a reason.
#include <unistd.h>

#include <filesystem>
#include <iostream>

#include "cli/commands.h"
#include "compare/html_report.h"
#include "compare/text_report.h"
#include "core/atomic_file.h"
#include "core/directory_lock.h"
#include "core/error.h"
#include "gate/pending.h"
#include "gate/provenance.h"
#include "smoke/golden_store.h"

namespace lockstep {

int review_command(const PendingOptions& o) {
  PendingSet set = load_pending(o.dir, o.goldens_dir, o.smoke_dir);
  for (const auto& orphan : set.orphans) std::cout << "review: " << orphan << "\n";
  for (const auto& r : review_pending(set)) {
    std::cout << "== " << r.path << "\n   pending: " << printable_message(describe_provenance(r.provenance), false)
              << "\n";
    if (r.is_new && r.stand_in.empty()) {
      std::cout << "   new golden: no " << r.current << " yet\n\n";
      continue;
    }
    if (r.is_new)
      std::cout << "   new golden: no " << r.current << " yet; compared with the golden check uses until then: "
                << r.stand_in << " (content " << r.current_hash << "), "
                << printable_message(describe_provenance(r.current_provenance), false) << "\n   note: "
                << printable_message(r.stand_in_note, false) << "\n";
    else
      std::cout << "   current: " << r.current << " (content " << r.current_hash
                << "), " << printable_message(describe_provenance(r.current_provenance), false) << "\n";
    if (!r.dropped.empty()) {
      std::cout << "   NARROWER: the pending golden drops";
      for (size_t i = 0; i < r.dropped.size(); ++i) std::cout << (i ? ", " : " ") << r.dropped[i];
      std::cout << ": once accepted (--allow-narrower), checks stop comparing them\n";
    }
    std::cout << render_text(*r.verdict, isatty(STDOUT_FILENO));
    std::string html = r.path.substr(0, r.path.size() - kPendingGoldenSuffix.size()) + ".review.html";
    write_file_atomically(html, render_html(*r.verdict, r.pending, r.golden,
                                            {"pending golden: " + describe_provenance(r.provenance),
                                             "golden: " + describe_provenance(r.current_provenance)}));
    std::cout << "   HTML: " << html << "\n\n";
  }
  std::cout << "review: the verdicts above are pending against current; if the change is approved: "
               "`lockstep accept " << o.dir << " --reason \"...\"`\n";
  return 0;
}

int accept_command(const PendingOptions& o) {
  if (is_blank_text(o.reason))
    throw BadUsage("accept needs --reason TEXT: say why the goldens change (it is recorded)");
  if (running_in_ci() && !o.in_ci)
    throw BadUsage("CI is set: accept does not write goldens in CI; pass --in-ci to accept here anyway");
  DirectoryLock lock(o.goldens_dir, !o.no_wait, [&](int pid) {
    std::cout << "accept: waiting for process " << pid << ", which holds " << o.goldens_dir
              << " (another bless or accept)\n" << std::flush;
  });
  PendingSet set = load_pending(o.dir, o.goldens_dir, o.smoke_dir);
  for (const auto& orphan : set.orphans) std::cout << "accept: " << orphan << "\n";
  for (const auto& a : accept_pending(set, o.reason, o.allow_dirty, o.allow_narrower)) {
    for (const auto& t : remove_stale_temporaries(std::filesystem::path(a.target).parent_path().string()))
      std::cout << "removed " << t << " (a temporary of an interrupted write; its process has exited)\n";
    std::string hash = write_golden(a.target, a.golden);
    std::filesystem::remove(a.path);
    std::cout << "accepted " << a.path << " -> " << a.target << " (content " << hash
              << (a.golden.provenance.replaces.empty() ? ", new" : ", replacing " + a.golden.provenance.replaces)
              << ")\n";
    if (!a.dropped.empty()) {
      std::cout << "  narrower than the golden it replaces: no longer checked:";
      for (size_t i = 0; i < a.dropped.size(); ++i) std::cout << (i ? ", " : " ") << a.dropped[i];
      std::cout << "\n";
    }
    if (!a.other_commit.empty()) std::cout << "  note: " << a.other_commit << "\n";
  }
  std::cout << "now commit " << o.goldens_dir << "/ with the same reason\n";
  return 0;
}

}  // namespace lockstep
