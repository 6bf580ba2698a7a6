// `lockstep bless SMOKE... --reason TEXT`: regenerate goldens. What a
// golden holds and every refusal is gate/bless.h (bless_smoke); this file
// checks the command line (a reason, not in CI unless --in-ci, --seeds),
// writes each golden atomically and prints what changed.
#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <set>
#include <memory>

#include "cli/commands.h"
#include "core/atomic_file.h"
#include "core/directory_lock.h"
#include "core/error.h"
#include "gate/bless.h"
#include "record/platform_key.h"
#include "cli/smoke_launcher.h"
#include "launch/launcher.h"
#include "smoke/golden_store.h"
#include "smoke/smoke_config.h"

namespace lockstep {
namespace fs = std::filesystem;

namespace {

// "42,43" -> {42, 43}: decimal unsigned 64-bit integers, no empty item, no
// sign, no duplicate.
std::vector<uint64_t> parse_seed_list(const std::string& text) {
  std::vector<uint64_t> out;
  size_t start = 0;
  while (true) {
    size_t comma = text.find(',', start);
    std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    uint64_t v = 0;
    auto res = std::from_chars(item.data(), item.data() + item.size(), v);
    if (item.empty() || res.ec != std::errc() || res.ptr != item.data() + item.size())
      throw BadUsage("--seeds " + text + ": expected comma-separated unsigned 64-bit integers, got \"" + input_excerpt(item) + "\"");
    if (std::find(out.begin(), out.end(), v) != out.end())
      throw BadUsage("--seeds " + text + ": seed " + item + " is listed twice");
    out.push_back(v);
    if (comma == std::string::npos) return out;
    start = comma + 1;
  }
}

}  // namespace

bool running_in_ci() {
  const char* ci = std::getenv("CI");
  return ci && *ci && std::string(ci) != "0" && std::string(ci) != "false";
}

int bless_command(const BlessOptions& o) {
  SmokeLauncher launcher;  // trainer smokes in this process, built-in ones in `lockstep run`
  return bless_command(o, launcher);
}

int bless_command(const BlessOptions& o, Launcher& launcher) {
  if (is_blank_text(o.bless.reason))
    throw BadUsage("bless needs --reason TEXT: say why the goldens change (it is recorded)");
  if (running_in_ci() && !o.in_ci)
    throw BadUsage("CI is set: bless does not write goldens in CI (a failing check leaves pending "
                   "files instead); pass --in-ci to bless here anyway");
  std::vector<std::string> files = expand_smoke_args(o.smokes);
  std::vector<std::string> names = suite_smoke_names(files);  // two configs of one name would bless one golden twice
  if (!o.kind.empty()) {
    if (std::string said = select_smoke_kind(o.kind, "bless", files, names); !said.empty()) std::cout << said << "\n";
    if (files.empty()) return 0;
  }
  launcher.require_runnable(files, "bless");
  BlessSmokeOptions options = o.bless;
  require_out_folder(options.out_dir, files, options.goldens_dir);
  if (!o.seeds.empty()) options.seeds = parse_seed_list(o.seeds);
  // One bless or accept at a time per goldens folder, held from before the
  // runs until the last golden is written (the change summary is then
  // against what the previous holder wrote).
  std::map<std::string, std::unique_ptr<DirectoryLock>> locks;
  for (const auto& file : files) {
    std::string root = fs::absolute(goldens_root(file, options.goldens_dir)).lexically_normal().string();
    if (!locks.count(root))
      locks[root] = std::make_unique<DirectoryLock>(root, !o.no_wait, [&](int pid) {
        std::cout << "bless: waiting for process " << pid << ", which holds " << root
                  << " (another bless or accept)\n" << std::flush;
      });
    BlessedGolden b = bless_smoke(file, options, launcher);
    for (const auto& t : remove_stale_temporaries(fs::path(b.path).parent_path().string()))
      std::cout << "removed " << t << " (a temporary of an interrupted write; its process has exited)\n";
    std::string hash = write_golden(b.path, b.golden);
    std::cout << "blessed " << b.path << " (" << options.runs << " bit-identical runs";
    if (b.seeds > 1) std::cout << " per seed, " << b.seeds << " seeds";
    std::cout << ", content " << hash << ")\n";
    if (std::string note = b.data_pass_note; !note.empty()) std::cout << "  note: " << note << "\n";
    if (!b.undeclared_note.empty()) std::cout << "  note: " << b.undeclared_note << "\n";
    if (!b.same_stack_label_note.empty()) std::cout << "  note: " << b.same_stack_label_note << "\n";
    const RunRecord& made = b.golden.record;
    if (!b.replaces && b.stand_in.empty())
      std::cout << "  new golden (none existed for platform " << golden_key(made.platform, made.stack) << ")\n";
    else if (!b.replaces)
      std::cout << "  new golden for platform " << golden_key(made.platform, made.stack) << "; until now check compared "
                << "such runs with " << b.stand_in << (b.changes.empty() ? ": no value changed against it\n"
                                                                          : "; changes against it:\n" + b.changes);
    else if (b.changes.empty())
      std::cout << "  no value changed against the golden it replaces\n";
    else
      std::cout << "changes against the golden it replaces:\n" << b.changes;
  }
  std::set<std::string> folders;  // the goldens folders written, as given (--goldens, or beside each smoke folder)
  for (const auto& file : files) {
    fs::path root = goldens_root(file, options.goldens_dir);
    fs::path here = fs::absolute(root).lexically_normal().lexically_relative(fs::current_path());
    std::string shown = !here.empty() && *here.begin() != ".." ? here.string() : root.string();  // relative when inside
    folders.insert(shown.empty() || shown.back() == '/' ? shown : shown + "/");
  }
  std::string named;
  for (const auto& f : folders) named += (named.empty() ? "" : ", ") + f;
  std::cout << "now review the change and commit " << named << " with the same reason\n";
  return 0;
}

}  // namespace lockstep
