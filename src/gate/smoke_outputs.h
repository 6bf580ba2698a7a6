// What `check` and `bless` leave in <out>/<smoke>/, and how each starts
// that folder afresh: the records, logs, checkpoints, reports and pending
// golden of an earlier command go before the new runs start, so
// `review`/`accept` never see a pending golden that the latest check did
// not write, and a report never sits beside another run's records.
//
//   clear_smoke_outputs("lockstep-out/digits-cnn");
//   // run-1.json, run-1.json.log, resume-at-5.ckpt, report.html,
//   // cpu-x86_64-avx2.golden.new, ... are gone; notes.txt stays.
#pragma once

#include <string>

namespace lockstep {

/// True when `name` (a file or folder name, no path) is one lockstep
/// writes into a smoke's output folder: run-N.json, bless-N.json and
/// bless-seed-S-N.json, resume-part.json, resume-at-K.ckpt, resumed.json
/// (each with what sits beside it: .log, .ranks, .trainer, ...),
/// report.json/md/html and <platform>.golden.new.
bool is_smoke_output_name(const std::string& name);

/// Removes from `dir` every entry is_smoke_output_name() accepts (a
/// folder with its contents, a link as a link) and the temporaries of such
/// entries a killed writer left (core/atomic_file.h's find_temporaries;
/// never one whose writer still runs); anything else is left.
/// Nothing happens when `dir` does not exist.
/// Throws: io_error() when the folder cannot be listed or an entry
/// removed (exit 3 for the machine: permissions, read-only disk).
void clear_smoke_outputs(const std::string& dir);

}  // namespace lockstep
