// Where goldens live: <goldens>/<smoke>/<platform>.json, or
// <goldens>/<smoke>/<platform>@<stack>.json for runs under a stack label
// (LOCKSTEP_STACK; docs/platforms.md, "Migrating to another stack";
// docs/architecture.md, "Records and goldens").
//
// The goldens folder defaults to `goldens/` beside the folder that holds
// the smoke config (smoke/digits-cnn.json -> goldens/), so commands work
// from any working directory; --goldens overrides it.
//
//   std::string root = goldens_root(config.file, options.goldens_dir);
//   auto found = find_golden(root, "digits-cnn", "cpu-x86_64-avx512");
//   // exact platform file, else another golden of the same family
//   // (cpu-x86_64-*), compared in the cross-stack lane
//   auto labeled = find_golden(root, "digits-cnn", "cpu-x86_64-avx2", "torch2");
//   // cpu-x86_64-avx2@torch2.json, else its family under torch2, else the
//   // unlabeled goldens as above (labeled->exact_stack == false)
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "record/golden.h"
#include "smoke/smoke_config.h"

namespace lockstep {

/// Whether `name` may name a golden's folder or file under the goldens
/// folder: 1..100 letters, digits, '.', '_' and '-', not starting with '.'
/// (no path parts, nothing hidden). A smoke's "name" must be one; `compare
/// RUN GOLDENS_DIR` holds a record's smoke and platform to it.
bool is_golden_name(const std::string& name);

/// Whether `key` may name a golden file: a golden name without '@', or
/// "<platform>@<stack>" with is_stack_label(stack) (record/platform_key.h).
bool is_golden_key(const std::string& key);

/// The name of the variable that sets the stack label.
inline constexpr const char* kStackVariable = "LOCKSTEP_STACK";

/// This process's stack label: $LOCKSTEP_STACK, "" when unset or empty.
/// Throws exit-2 BadUsage naming the variable when it is not a stack label
/// (record/platform_key.h, is_stack_label).
std::string stack_label();

/// The goldens folder for a smoke config, or `override_dir` when non-empty.
std::string goldens_root(const std::string& config_file, const std::string& override_dir);

/// Throws exit-2 Error when `path` (a record or checkpoint about to be
/// written; "" is fine) lies in the goldens folder of `config_file`: only
/// `lockstep bless` writes there. `what` names it ("a run record").
void refuse_writing_into_goldens(const std::string& path, const std::string& config_file, const std::string& what);

/// Throws exit-2 Error when `path` is an existing golden or pending golden
/// (a JSON object with "provenance" and "content_hash", wherever it lies):
/// only `bless` and `accept` replace one, never a report, a run record or
/// an import. `what` names the output ("the --json report").
void refuse_overwriting_a_golden(const std::string& path, const std::string& what);

/// Throws exit-2 Error when `path` (an output; "" is fine) lies inside the
/// folder `goldens_dir`. `what` names the output.
///
/// `also_over_a_golden`: also refuse_overwriting_a_golden(path) (false only
/// where an earlier pending golden of the same command is replaced).
void refuse_writing_into_folder_of_goldens(const std::string& path, const std::string& goldens_dir,
                                           const std::string& what, bool also_over_a_golden = true);

/// goldens/<smoke>/<key>.json, `key` a golden key ("<platform>[@<stack>]").
std::string golden_path(const std::string& root, const std::string& smoke, const std::string& key);

/// The ending of a pending golden's file name: <key>.golden.new.
inline constexpr std::string_view kPendingGoldenSuffix = ".golden.new";

/// The golden key a pending golden's file name gives, "cpu-x86_64-avx2"
/// for "cpu-x86_64-avx2.golden.new" ("cpu-x86_64-avx2@torch2" for
/// "cpu-x86_64-avx2@torch2.golden.new"); "" when `file_name` is not one.
std::string pending_platform_of(const std::string& file_name);

/// Pending golden written by a failing `check`: <out>/<smoke>/<key>.golden.new
std::string pending_path(const std::string& out_dir, const std::string& smoke, const std::string& key);

/// Every entry named *.golden.new under `dir` (recursively), sorted
/// byte-wise, whatever its type: a dangling link, FIFO or folder of that
/// name is listed too, for the caller to refuse (never skipped unseen).
std::vector<std::string> find_pending(const std::string& dir);


/// A golden found for a run.
struct GoldenLookup {
  std::string path;
  bool exact_platform = true;  ///< false: a same-family golden stands in
  bool exact_stack = true;     ///< false: an unlabeled golden stands in for the run's stack label
};

/// The golden for `platform` under stack label `stack` ("" for none), else
/// the first (by name) golden of the same platform family under that label;
/// for a label with neither, the unlabeled golden found the same way (a
/// migration's first run on the new stack). An unlabeled run never uses a
/// labeled golden. nullopt when the smoke has none usable.
std::optional<GoldenLookup> find_golden(const std::string& root, const std::string& smoke,
                                        const std::string& platform, const std::string& stack = "");

/// Every golden filed for `smoke` under `root`: the *.json entries of
/// <root>/<smoke>/ whose name is a golden key, sorted byte-wise (whatever
/// their type: reading one that is no file names it). Empty when the
/// folder does not exist.
std::vector<std::string> filed_goldens(const std::string& root, const std::string& smoke);

/// What a stand-in golden means for a run on `platform` under `stack`, said
/// as a check note ("no golden for platform ...; compared against ..."),
/// "" when `found` is the run's own. Throws nothing.
std::string stand_in_note(const GoldenLookup& found, const std::string& platform, const std::string& stack);

/// Reads the golden find_golden() found for `smoke` and holds it to where
/// it is filed: a golden (provenance and content hash, read_golden()), made
/// by bless or accept (not a pending one a failing check left) from 2 runs
/// or more unless imported, of `smoke`, for the platform and stack label
/// its file name says. Throws exit-2 BadInput naming the
/// file and the field otherwise. `check` and `compare RUN GOLDENS_DIR`
/// read goldens through it, so a record copied into the folder never
/// passes as one.
Golden read_filed_golden(const GoldenLookup& found, const std::string& smoke);

/// For a trainer smoke, the first series of `record` its config's
/// trainer.metrics.series does not name, said as "series NAME: not a
/// series <config> records (trainer.metrics.series: a, b)"; "" when there
/// is none, or for a built-in smoke (whose series the model decides). A
/// golden holding one was not made from this config: every reader refuses
/// it (exit 2).
std::string foreign_series(const RunRecord& record, const SmokeConfig& config);

}  // namespace lockstep
