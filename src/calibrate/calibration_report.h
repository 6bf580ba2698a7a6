// What `lockstep calibrate` prints and writes: the text table (per
// tolerance key: spread, what drove it, the recommended rule beside the
// configured one), the false-alarm estimate and the detection limit; the
// same as JSON; a self-contained HTML page with one plot per metric (its
// spread per step against the recommended bound, log scale, no script);
// and `--write`, which puts the recommended rules and a "calibration"
// block (axes, runs, runners, date, multiplier, floors, false-alarm
// estimate, detection limit) into the smoke config.
//
//   Calibration c = calibrate_smoke(file, options, launcher);
//   std::cout << render_calibration_text(c);
//   write_file_atomically("cal.json", calibration_json(c).dump(2));
//   write_calibration_into_config(c);   // the config's value hash must not move
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "calibrate/calibrate.h"

namespace lockstep {

/// The report a person reads (ends with a newline).
std::string render_calibration_text(const Calibration& c);

/// The report as JSON: smoke, date, axes, runs (label, point, source),
/// runners, rules, per metric its spread and per key its recommendation
/// (rule as in a smoke config), false_alarm, detection, notes.
nlohmann::json calibration_json(const Calibration& c);

/// The HTML page: self-contained, readable without JavaScript.
std::string render_calibration_html(const Calibration& c);

/// The "calibration" block --write puts into the smoke config.
nlohmann::json calibration_block(const Calibration& c);

/// One rule as a smoke config spells it: {"exact": true}, {"atol": A,
/// "rtol": R}, {"ulp": N}, {"sigma": K}.
nlohmann::json tolerance_json(const Tolerance& t);

/// Refuses, before any run, a config `--write` could not update: not a
/// regular file (a symbolic link: exit 2), or one this user may not
/// write, or read-only by its mode (exit 3).
void require_writable_config(const std::string& file);

/// Writes the measured recommendations into c.file's "tolerance" section
/// (tolerance.series.<name>, tolerance.probes.<field>) and replaces its
/// "calibration" block, keeping every other key and its order. The config
/// is re-read before it lands: a value hash that moved (impossible unless
/// the tolerance section became an input) or a config that no longer
/// loads throws Error and leaves the file as it was. Atomic.
void write_calibration_into_config(const Calibration& c);

}  // namespace lockstep
