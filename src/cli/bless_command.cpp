// `lockstep bless SMOKE... --reason TEXT`: regenerate goldens. What a
// golden holds and every refusal is gate/bless.h (bless_smoke); this file
// checks the command line (a reason, not in CI unless --in-ci, --seeds),
// writes each golden atomically and prints what changed.
#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <iostream>

#include "cli/commands.h"
#include "core/error.h"
#include "gate/bless.h"
#include "launch/launcher.h"
#include "smoke/smoke_config.h"

namespace lockstep {

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
      throw BadUsage("--seeds " + text + ": expected comma-separated unsigned 64-bit integers, got \"" + item + "\"");
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
  if (o.reason.find_first_not_of(" \t\n") == std::string::npos)
    throw BadUsage("bless needs --reason TEXT: say why the goldens change (it is recorded)");
  if (running_in_ci() && !o.in_ci)
    throw BadUsage("CI is set: bless does not write goldens in CI (a failing check leaves pending "
                   "files instead); pass --in-ci to bless here anyway");
  BlessSmokeOptions options;
  options.reason = o.reason;
  options.goldens_dir = o.goldens_dir;
  options.out_dir = o.out_dir;
  options.allow_dirty = o.allow_dirty;
  options.runs = o.runs;
  if (!o.seeds.empty()) options.seeds = parse_seed_list(o.seeds);
  ProcessLauncher launcher;
  for (const auto& file : expand_smoke_args(o.smokes)) {
    BlessedGolden b = bless_smoke(file, options, launcher);
    std::string hash = write_golden(b.path, b.golden);
    std::cout << "blessed " << b.path << " (" << o.runs << " bit-identical runs";
    if (b.seeds > 1) std::cout << " per seed, " << b.seeds << " seeds";
    std::cout << ", content " << hash << ")\n";
    if (!b.replaces)
      std::cout << "  new golden (none existed for platform " << b.golden.record.platform << ")\n";
    else if (b.changes.empty())
      std::cout << "  no value changed against the golden it replaces\n";
    else
      std::cout << "changes against the golden it replaces:\n" << b.changes;
  }
  std::cout << "now review the change and commit goldens/ with the same reason\n";
  return 0;
}

}  // namespace lockstep
