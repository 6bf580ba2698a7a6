// `lockstep calibrate SMOKE`: runs the smoke across stack axes through the
// smoke launcher (calibrate/calibrate.h), prints the report
// (calibrate/calibration_report.h), writes --json / --html, and with
// --write puts the recommended rules into the smoke config.
#include <filesystem>
#include <iostream>

#include "calibrate/calibrate.h"
#include "calibrate/calibration_report.h"
#include "cli/commands.h"
#include "cli/smoke_launcher.h"
#include "core/atomic_file.h"
#include "core/directory_lock.h"
#include "core/error.h"
#include "core/job_slots.h"
#include "smoke/golden_store.h"
#include "smoke/smoke_config.h"

namespace lockstep {

namespace {

namespace fs = std::filesystem;

// --seeds 7,8,9: the seed axis, named as bless --seeds names its seeds. One
// value was the old seed count (now --seed-count): refused, not guessed.
CalibrateAxis seed_axis(const CalibrateCliOptions& o) {
  const std::string& list = o.seed_list;
  if (list.find(',') == std::string::npos)
    throw BadUsage("calibrate --seeds " + input_excerpt(list) + ": a list of at least two seeds, as bless --seeds "
                   "takes (e.g. --seeds 7,8,9); for K seeds from the config's, --seed-count K");
  if (o.calibrate.seeds > 1) throw BadUsage("calibrate --seeds with --seed-count: give the seeds one way");
  for (const std::string& a : o.axes)
    if (a.rfind("seed=", 0) == 0) throw BadUsage("calibrate --seeds with --axis seed=...: give the seeds one way");
  // Said in --seeds' own words (parse_axis would speak of --axis seed=...).
  size_t at = 0;
  for (int n = 1;; ++n) {
    size_t comma = list.find(',', at);
    std::string entry = list.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
    if (entry.empty() || entry.find_first_not_of("0123456789") != std::string::npos)
      throw BadUsage("calibrate --seeds " + input_excerpt(list) + ": seed " + std::to_string(n) + " is " +
                     (entry.empty() ? std::string("empty") : "\"" + input_excerpt(entry) + "\"") +
                     "; expected unsigned integers separated by commas (e.g. --seeds 7,8,9)");
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  try {
    return parse_axis("seed=" + list);
  } catch (const Error& e) {
    throw BadUsage("calibrate --seeds " + input_excerpt(list) + ": " + e.what());
  }
}

}  // namespace

int calibrate_command(const CalibrateCliOptions& options) {
  SmokeLauncher launcher;
  return calibrate_command(options, launcher);
}

int calibrate_command(const CalibrateCliOptions& o, Launcher& launcher) {
  if (is_smoke_config_file(o.smoke) == false && fs::is_directory(o.smoke))
    throw BadUsage("calibrate " + o.smoke + ": a folder; calibrate takes one smoke config");
  CalibrateOptions options = o.calibrate;
  std::vector<std::string> inputs = options.records;
  inputs.push_back(o.smoke);
  // Its own records folder: the smoke's name is read from the config.
  std::string own = calibrate_records_dir(o.smoke, options.out_dir);
  if (!o.json_out.empty() || o.json_given) {
    require_report_file("--json", o.json_out, "\"lockstep_report\": \"calibrate\"", inputs, own);
    refuse_writing_into_goldens(o.json_out, o.smoke, "the --json report");
  }
  if (!o.html_out.empty() || o.html_given) {
    require_report_file("--html", o.html_out, "<title>lockstep calibrate ", inputs, own);
    refuse_writing_into_goldens(o.html_out, o.smoke, "the --html page");
  }
  if (o.write) require_writable_config(o.smoke);
  std::error_code ec;
  if (!o.json_out.empty() && o.json_out == o.html_out)
    throw BadUsage("--json and --html name the same file " + o.json_out);
  for (const auto& a : o.axes) options.axes.push_back(parse_axis(a));
  if (!o.seed_list.empty()) options.axes.push_back(seed_axis(o));
  require_out_folder(options.out_dir, {o.smoke}, "");
  options.detect = !o.no_detect;
  const int jobs = o.jobs > 0 ? o.jobs : available_cpus();
  JobSlots slots(jobs);
  if (jobs > 1) options.slots = &slots;
  DirectoryLock out_lock(options.out_dir, true, [&](int pid) {
    std::cout << "calibrate: waiting for process " << pid << ", which writes to " << options.out_dir << "\n" << std::flush;
  });
  Calibration c = calibrate_smoke(o.smoke, options, launcher);
  std::cout << render_calibration_text(c);
  if (!o.json_out.empty()) write_file_atomically(o.json_out, calibration_json(c).dump(2) + "\n");
  if (!o.html_out.empty()) write_file_atomically(o.html_out, render_calibration_html(c));
  if (o.write) {
    write_calibration_into_config(c);
    std::cout << "wrote the recommended rules and a calibration block into " << o.smoke
              << " (tolerances are not inputs: the goldens stay valid)\n";
  } else {
    std::cout << "the config is unchanged (--write puts these rules into " << o.smoke << ")\n";
  }
  return 0;
}

}  // namespace lockstep
