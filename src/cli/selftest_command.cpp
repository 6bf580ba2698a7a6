// `lockstep selftest [SMOKE...]`: each smoke's negative control
// (gate/selftest.h) through the launcher every check uses, printed, and as
// JSON with --json.
#include <filesystem>
#include <iostream>

#include "cli/commands.h"
#include "cli/smoke_launcher.h"
#include "core/atomic_file.h"
#include "core/json_io.h"
#include "gate/selftest.h"

namespace lockstep {

int selftest_command(const SelftestCommandOptions& o) {
  SmokeLauncher launcher;  // trainer smokes in this process, built-in ones in `lockstep run`
  return selftest_command(o, launcher);
}

int selftest_command(const SelftestCommandOptions& o, Launcher& launcher) {
  std::vector<std::string> files = expand_smoke_args(o.smokes);
  suite_smoke_names(files);  // each smoke once, each name once: the records go to <out>/<name>/
  for (const auto& file : files) load_smoke_config(file);  // a bad config refused before the --out folder is made
  if (!o.json_out.empty()) require_report_file("--json", o.json_out, "\"selftest\"", files, o.out_dir);
  launcher.require_runnable(files, "selftest");
  require_out_folder(o.out_dir, files, "");
  SelftestOptions options;
  options.relaxed_runs = o.distinct_runs;
  nlohmann::json all = nlohmann::json::array();
  ExitCode worst = ExitCode::kPass;
  for (const auto& file : files) {
    SmokeConfig config = load_smoke_config(file);
    options.dir = o.out_dir + "/" + config.name;
    std::filesystem::create_directories(options.dir);
    SelftestResult r = selftest_smoke(config, file, options, launcher);
    std::cout << selftest_text(r) << std::flush;
    all.push_back(to_json(r));
    if (r.code() == ExitCode::kRegression || worst == ExitCode::kPass) worst = r.code();  // exit 1 before 4
  }
  if (!o.json_out.empty()) write_file_atomically(o.json_out, pretty_dump({{"selftest", all}}));
  size_t sensitive = 0, unrepeatable = 0;
  for (const auto& r : all) {
    sensitive += r["sensitive"].get<bool>() ? 1 : 0;
    unrepeatable += r["repeatable"].get<bool>() ? 0 : 1;
  }
  std::cout << "selftest: " << all.size() << (all.size() == 1 ? " smoke, " : " smokes, ") << sensitive
            << " sensitive, " << all.size() - sensitive - unrepeatable << " INSENSITIVE"
            << (unrepeatable ? ", " + std::to_string(unrepeatable) + " NOT REPEATABLE" : std::string()) << " (exit "
            << to_int(worst) << ")\n";
  return to_int(worst);
}

}  // namespace lockstep
