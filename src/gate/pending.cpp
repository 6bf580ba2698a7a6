#include "gate/pending.h"

#include <filesystem>
#include <map>
#include <sstream>

#include "compare/compare.h"
#include "core/error.h"
#include "core/hash.h"
#include "gate/bless.h"
#include "gate/provenance.h"
#include "record/platform_key.h"
#include "smoke/golden_store.h"

namespace lockstep {
namespace fs = std::filesystem;

PendingSet load_pending(const std::string& dir, const std::string& goldens_dir, const std::string& smoke_dir) {
  PendingSet s;
  s.dir = dir;
  s.goldens_dir = goldens_dir;
  s.smoke_dir = !smoke_dir.empty() ? smoke_dir
                                   : (fs::absolute(goldens_dir).lexically_normal().parent_path() / "smoke").string();
  std::error_code dir_ec;
  if (!fs::is_directory(dir, dir_ec))
    throw BadUsage(dir + ": no such folder (give the --out folder of a `lockstep check`, or the artifacts "
                   "downloaded from its CI job)");
  s.files = find_pending(dir);
  if (s.files.empty()) throw BadUsage(dir + ": no pending goldens (*.golden.new) to review");
  // One that is no file would be skipped unseen (or block, a FIFO): refused.
  // A link, even to a golden file, is not what check wrote there: the file
  // it leads to is anyone's.
  for (const std::string& file : s.files) {
    std::error_code type_ec;
    fs::file_status st = fs::status(file, type_ec);
    const bool link = fs::is_symlink(fs::symlink_status(file, type_ec));
    if (link || !fs::is_regular_file(st))
      throw BadInput(file, "", std::string("a pending golden file as check writes it, got ") +
                                   (link && !fs::exists(st) ? "a dangling link"
                                        : link              ? "a symbolic link (to " +
                                                     fs::read_symlink(file, type_ec).string() + ")"
                                        : fs::is_directory(st) ? "a folder"
                                        : fs::is_fifo(st)      ? "a FIFO"
                                                               : "no regular file") +
                                   "; remove it or give the check's own --out folder");
  }
  std::error_code ec;
  if (!fs::is_directory(s.smoke_dir, ec))
    throw BadUsage(dir + ": its pending goldens are held to their smoke configs, and there is no smoke folder " +
                   s.smoke_dir + " (deleted or moved since the check?); give it with --smoke DIR");
  s.smokes = load_smoke_folder(s.smoke_dir);
  std::vector<std::string> kept;
  for (auto& file : s.files) {
    std::string smoke = fs::path(file).parent_path().filename().string();
    if (s.smokes.count(smoke)) kept.push_back(std::move(file));
    else
      s.orphans.push_back(file + ": left out: no smoke config named \"" + smoke + "\" in " + s.smoke_dir +
                          " (its goldens elsewhere? give them with --goldens DIR, its smokes with --smoke DIR; "
                          "deleted or renamed since the check? then remove it)");
  }
  s.files = std::move(kept);
  if (s.files.empty()) {
    std::string all;
    for (const auto& o : s.orphans) all += "\n  " + o;
    throw BadUsage(dir + ": no pending golden of a smoke in " + s.smoke_dir + ":" + all);
  }
  return s;
}

namespace {

// A pending golden, held to where check filed it:
// <smoke>/<platform>[@<stack>].golden.new. One moved into another smoke's folder
// (or renamed) would otherwise replace a golden it was not made for.
Golden read_pending(const std::string& path) {
  Golden g = read_golden(path);
  fs::path p(path);
  std::string file = p.filename().string();
  if (!is_golden_key(pending_platform_of(file)))
    throw BadInput(path, "", "a pending golden named <platform>[@<stack label>].golden.new as check files it, got \"" +
                                 printable_message(file, false) + "\" (a stack label is 1..40 letters, digits, '.', "
                                 "'_' and '-')");
  auto [platform, stack] = split_golden_key(pending_platform_of(file));
  std::string smoke = p.parent_path().filename().string();
  if (g.record.smoke != smoke)
    throw BadInput(path, "smoke", "\"" + smoke + "\" (the folder it is filed in), got \"" +
                                      input_excerpt(g.record.smoke) + "\"");
  if (g.record.platform != platform)
    throw BadInput(path, "platform", "\"" + platform + "\" (its file name), got \"" +
                                         input_excerpt(g.record.platform) + "\"");
  if (g.record.stack != stack)
    throw BadInput(path, "stack", (stack.empty() ? std::string("none (its file name has no stack label)")
                                                 : "\"" + stack + "\" (its file name)") +
                                      ", got " + (g.record.stack.empty() ? "none" : "\"" + input_excerpt(g.record.stack) + "\""));
  return g;
}

// "a, b and c".
std::string listed(const std::vector<std::string>& items) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) out += (i == 0 ? "" : i + 1 == items.size() ? " and " : ", ") + items[i];
  return out;
}

// "a, b and 3 more": six names at most.
std::string some_names(const std::vector<std::string>& names) {
  std::string out;
  for (size_t i = 0; i < names.size() && i < 6; ++i) out += (i ? ", " : "") + names[i];
  if (names.size() > 6) out += " and " + std::to_string(names.size() - 6) + " more";
  return out;
}

}  // namespace

std::vector<std::string> dropped_checks(const RunRecord& current, const RunRecord& pending) {
  std::vector<std::string> out, series, seeded;
  for (const auto& [name, s] : current.series) {
    auto it = pending.series.find(name);
    if (it == pending.series.end()) series.push_back(name);
    // A multi-seed golden's statistics are what its sigma rules hold runs to.
    else if (!s.mean.empty() && it->second.mean.empty()) seeded.push_back(name);
  }
  if (!series.empty()) out.push_back((series.size() == 1 ? "series " : "the series ") + some_names(series));
  if (!seeded.empty())
    out.push_back("the multi-seed mean and std of " + some_names(seeded) + " (the sigma rules' reference)");
  // A series logged at fewer steps is checked at those steps only.
  for (const auto& [name, s] : current.series)
    if (auto it = pending.series.find(name); it != pending.series.end() && it->second.values.size() < s.values.size())
      out.push_back(std::to_string(s.values.size() - it->second.values.size()) + " of series " + name + "'s " +
                    std::to_string(s.values.size()) + " steps");
  auto lost = [&](bool had, bool has, const char* what) {
    if (had && !has) out.push_back(what);
  };
  // A section kept with fewer entries checks less too: "11 of the 14 batch probes".
  auto fewer = [&](size_t had, size_t has, const char* what) {
    if (has > 0 && has < had)
      out.push_back(std::to_string(had - has) + " of the " + std::to_string(had) + " " + what);
  };
  fewer(current.probes.size(), pending.probes.size(), "batch probes");
  fewer(current.train_probes.size(), pending.train_probes.size(), "trained-batch probes");
  fewer(current.module_trace.entries.size(), pending.module_trace.entries.size(), "module trace entries");
  fewer(current.module_trace.ops.size(), pending.module_trace.ops.size(), "per-op hashes");
  fewer(current.hashes.size(), pending.hashes.size(), "parameter hashes");
  fewer(current.init.size(), pending.init.size(), "initialisation statistics");
  lost(!current.probes.empty(), !pending.probes.empty(), "batch probes");
  lost(!current.train_probes.empty(), !pending.train_probes.empty(), "trained-batch probes");
  lost(!current.module_trace.entries.empty(), !pending.module_trace.entries.empty(), "module trace");
  lost(!current.module_trace.ops.empty(), !pending.module_trace.ops.empty(), "per-op hashes (trace.ops)");
  lost(!current.hashes.empty(), !pending.hashes.empty(), "parameter hashes");
  fewer(current.digests.params.size(), pending.digests.params.size(), "per-step digests");
  lost(!current.digests.empty(), !pending.digests.empty(), "per-step digests");
  lost(!current.init.empty(), !pending.init.empty(), "initialisation statistics");
  lost(!current.contract.empty(), !pending.contract.empty(), "determinism contract");
  lost(!current.resources.empty(), !pending.resources.empty(), "resources (step time, peak RSS)");
  return out;
}

namespace {

// `pending` against the golden at `path` under its smoke's tolerances.
Verdict review_against(const PendingSet& set, const std::string& path, const Golden& pending,
                       const std::string& golden_path, const RunRecord& golden) {
  TolerancePolicy policy;
  if (auto it = set.smokes.find(pending.record.smoke); it != set.smokes.end()) policy = it->second.tolerance;
  // The pending golden is the subject: "pending golden" in the reports.
  return compare_records(pending.record, golden, policy, {path, golden_path, "golden", "pending golden"});
}

PendingReview review_one(const PendingSet& set, const std::string& path) {
  PendingReview r;
  r.path = path;
  Golden pending = read_pending(path);
  r.reason = pending.provenance.reason;
  r.provenance = pending.provenance;
  const RunRecord& p = pending.record;
  r.current = golden_path(set.goldens_dir, p.smoke, golden_key(p.platform, p.stack));
  std::error_code ec;
  r.is_new = !fs::exists(r.current, ec);
  if (!r.is_new) {
    Golden current = read_golden(r.current);
    r.current_provenance = current.provenance;
    r.current_hash = current.content_hash;
    r.golden = std::move(current.record);
    r.verdict = review_against(set, path, pending, r.current, r.golden);
    r.dropped = dropped_checks(r.golden, p);
  } else if (auto found = find_golden(set.goldens_dir, p.smoke, p.platform, p.stack)) {
    // What check compared such a run with: the family's, or the unlabeled
    // golden a stack label falls back to.
    Golden stand_in = read_filed_golden(*found, p.smoke);
    r.stand_in = found->path;
    r.stand_in_note = stand_in_note(*found, p.platform, p.stack);
    r.current_provenance = stand_in.provenance;
    r.current_hash = stand_in.content_hash;
    r.golden = std::move(stand_in.record);
    r.verdict = review_against(set, path, pending, r.stand_in, r.golden);
  }
  r.pending = std::move(pending.record);
  return r;
}

}  // namespace

std::vector<PendingReview> review_pending(const PendingSet& set) {
  std::vector<PendingReview> out;
  for (const auto& path : set.files) out.push_back(review_one(set, path));
  return out;
}

namespace {

// The work-tree files the runs behind a pending golden were made with that
// no commit holds: its record's git.dirty ("clean", or paths separated by
// spaces, "(+N more)" at the end), less the goldens and pending folders
// (relative to the current work tree, as the paths are). Empty when clean
// or not recorded.
std::vector<std::string> dirty_when_made(const RunRecord& record, const GitState& git,
                                         const std::vector<std::string>& own_folders) {
  auto it = record.fingerprint.find("git.dirty");
  if (it == record.fingerprint.end() || it->second.value == "clean" || it->second.value.rfind("(absent", 0) == 0)
    return {};
  std::vector<std::string> files;
  std::string tail;  // "(+N more)": the summary's last words
  std::istringstream words(it->second.value);
  for (std::string f; words >> f;) {
    if (f.rfind("(+", 0) == 0) {
      std::getline(words, tail);
      tail = f + tail;
      break;
    }
    files.push_back(f);
  }
  std::vector<std::string> out = git.in_repo ? outside_folders(git, files, own_folders) : files;
  if (!tail.empty()) out.push_back(tail);
  return out;
}

}  // namespace

std::vector<AcceptedGolden> accept_pending(const PendingSet& set, const std::string& reason, bool allow_dirty,
                                           bool allow_narrower) {
  GitState git = read_git_state(fs::absolute(set.goldens_dir).parent_path().string());
  std::vector<AcceptedGolden> out;
  std::map<std::string, std::string> source_of;  // target golden -> pending file
  for (const auto& path : set.files) {
    Golden g = read_pending(path);  // content hash: the artifact was not edited
    auto cfg = set.smokes.find(g.record.smoke);
    if (cfg == set.smokes.end())
      throw BadInput(path, "smoke", "a smoke config named \"" + g.record.smoke + "\" in " + set.smoke_dir);
    if (cfg->second.config_hash != g.record.config_hash)
      throw BadInput(path, "config_hash",
                     cfg->second.config_hash + " (the current " + cfg->second.file + "): this pending golden was "
                     "made from another version of the config; run `lockstep check` again for a fresh one");
    validate_kept_golden(g, cfg->second, "accept " + path);
    // Runs made from uncommitted code pin what no commit holds, even once
    // the tree is committed since (with other code): as bless, only with
    // --allow-dirty, which is recorded.
    if (std::vector<std::string> made_dirty = dirty_when_made(g.record, git, {set.goldens_dir, set.dir});
        !made_dirty.empty() && !allow_dirty)
      throw BadUsage(path + ": its runs were made from uncommitted files (git.dirty: " + listed(made_dirty) +
                     "), so no commit is known to reproduce it: commit them, run `lockstep check` again and accept "
                     "the pending golden that check leaves; or accept --allow-dirty, which is recorded");
    std::string imported_from = g.provenance.imported_from;
    g.provenance = stamp_provenance("accept", reason, git, g.provenance.runs);
    g.provenance.imported_from = imported_from;
    g.provenance.allow_dirty = allow_dirty;
    std::string target = golden_path(set.goldens_dir, g.record.smoke, golden_key(g.record.platform, g.record.stack));
    if (auto [it, fresh] = source_of.emplace(target, path); !fresh)
      throw BadInput(path, "", "one pending golden per smoke and platform; " + it->second +
                                   " is another for " + target + " (two downloaded artifacts?): remove one");
    std::error_code ec;
    std::vector<std::string> dropped;
    if (fs::exists(target, ec)) {
      Golden current = read_golden(target);
      g.provenance.replaces = current.content_hash;
      dropped = dropped_checks(current.record, g.record);
      // A golden that checks less weakens the gate without a failing check
      // to show it: only on request, and recorded.
      if (!dropped.empty() && !allow_narrower)
        throw BadInput(path, "", "a golden that checks what " + target + " checks; it drops " + listed(dropped) +
                                     " (an imported curve?): accept --allow-narrower to replace it anyway");
      g.provenance.narrower = listed(dropped);
    }
    std::string other_commit;
    if (auto made_at = g.record.fingerprint.find("git.commit");
        git.in_repo && made_at != g.record.fingerprint.end() && is_hex_digest(made_at->second.value, 40) &&
        made_at->second.value != git.commit)
      other_commit = "its runs were made at commit " + made_at->second.value.substr(0, 12) + ", this work tree is at " +
                     git.commit.substr(0, 12) + ": its data and code are that commit's; if the smoke's inputs "
                     "differ here, the next check fails (run `lockstep check` here to be sure)";
    out.push_back({path, target, std::move(g), std::move(dropped), std::move(other_commit)});
  }
  // After the pending goldens' own refusals, so one made from uncommitted
  // files is said first (committing alone would not make it acceptable).
  refuse_dirty_tree(git, {set.goldens_dir, set.dir}, allow_dirty, "accept");
  return out;
}

}  // namespace lockstep
