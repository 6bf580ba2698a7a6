// The lockstep subcommands (README.md, "Commands"). main.cpp parses the
// command line with CLI11 into these option structs and calls one
// function; each returns the process exit code or throws lockstep::Error.
// The functions only check arguments, call the library (gate/, run/,
// smoke/, compare/), print and write: no verdict is made in cli/.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bisect/bisect.h"
#include "bisect/bisect_env.h"
#include "calibrate/calibrate.h"
#include "external/import_run.h"
#include "gate/bless.h"
#include "gate/check.h"
#include "plan/run_plan.h"
#include "record/batch_sweep.h"
#include "record/fingerprint.h"
#include "smoke/smoke_config.h"

namespace lockstep {

/// `lockstep run SMOKE` and `lockstep probe SMOKE`: the options are the
/// run's request (plan/run_plan.h), decided by plan_run() and produced by
/// the producer of its site (cli/record_producers.h); writes a run record.
using RunOptions = RunRequest;
int run_command(const RunOptions& options);
/// run_command with `run --repeat`'s fresh runs made by `launcher` (the
/// in-process tests'); a single run is made here, as ever.
int run_command(const RunOptions& options, Launcher& repeats);


/// Keeps main()'s argv, so a front `lockstep` can hand the same command
/// line to `lockstep-torch`. Called once, first thing in main().
void remember_command_line(int argc, char** argv);


/// The command line given to remember_command_line(), argv[0] included.
const std::vector<std::string>& remembered_command_line();

/// Replaces the deprecated flag `old` in the remembered command line by
/// `now` ("--out" → {"--record"}, "--json" → {"--format", "json"}; "--out=F"
/// → "--record=F" when `now` is one word), so the command handed on
/// (cli/torch_commands_exec.cpp) speaks the current vocabulary.
void respell_remembered_flag(const std::string& old, const std::vector<std::string>& now);

/// `lockstep probe SMOKE`: data-only pass, writes a record with probes only.
int probe_command(const RunOptions& options);

/// `lockstep probe SMOKE --batch-sweep [--json FILE]`: the batch-invariance
/// sweep of a built-in smoke (run/batch_sweep.h), printed, and with
/// `json_out` written as JSON. Exit 0 when every module is batch-invariant,
/// 1 when one is not, 2 for a trainer smoke or a `--record` (the sweep
/// writes no record). Needs LibTorch: the torch-free front execs
/// lockstep-torch with the same command line.
struct BatchSweepOptions {
  bool on = false;        ///< --batch-sweep given
  std::string json_out;   ///< --json FILE
  bool timing = false;    ///< hidden --batch-sweep-timing: each size's plain forwards timed first (bench)
};
int batch_sweep_command(const RunOptions& options, const BatchSweepOptions& sweep);

/// The smoke config a batch sweep of `options` is made of (its lane and
/// overrides applied); throws BadUsage (exit 2) for a folder, a flag the
/// sweep has no use for (--record, --rank, --nnodes, --world-size; the
/// hidden --batch-sweep-timing with a trainer smoke), or a --json over one
/// of its inputs or into the goldens.
SmokeConfig refuse_batch_sweep_of(const RunOptions& options, const BatchSweepOptions& sweep);

/// `sweep` written (--json) and printed (unless --quiet and invariant);
/// returns 0 when batch-invariant, 1 when not.
int report_batch_sweep(const RunOptions& options, const BatchSweepOptions& sweep, const BatchSweep& result);

/// The sweep of a trainer smoke's model (external/trainer_batch_sweep.h),
/// in a temporary folder removed afterwards, reported. Torch-free: both
/// executables run it in their own process.
int trainer_batch_sweep_command(const RunOptions& options, const BatchSweepOptions& sweep, const SmokeConfig& config);

/// `lockstep selftest [SMOKE...]`: each smoke's negative control
/// (gate/selftest.h), printed, and with `json_out` written as JSON. Exit 0
/// when every smoke is sensitive, 1 when a planted change went unseen.
struct SelftestCommandOptions {
  std::vector<std::string> smokes = {"smoke"};
  std::string out_dir = "lockstep-out";  ///< --out: records under <out>/<smoke>/selftest-*.json
  std::string json_out;                  ///< --json FILE
  int distinct_runs = 3;                 ///< --distinct-runs: runs with the contract relaxed
};
int selftest_command(const SelftestCommandOptions& options);
/// selftest_command with the runs made by `launcher` (the in-process tests').
int selftest_command(const SelftestCommandOptions& options, Launcher& launcher);

/// `lockstep import FORMAT PATH --series ...`: the request is the library's
/// (external/import_run.h); this writes the record or the pending golden
/// and prints what was read. No LibTorch needed.
int import_command(const ImportRequest& request);

/// `lockstep compare RUN GOLDEN [--config SMOKE]`. No LibTorch needed.
struct CompareOptions {
  std::string run;
  std::string golden;
  std::string config;     ///< smoke config for tolerances; defaults otherwise
  std::string json_out;      ///< also write the JSON report here
  std::string junit_out;     ///< also write JUnit XML here
  std::string markdown_out;  ///< also write the Markdown report here
  std::string html_out;      ///< also write the HTML report here
};
int compare_command(const CompareOptions& options);

/// `lockstep check [SMOKE...]`: `repeat` fresh runs per smoke, bit-compared
/// (exit 4 if they differ), then compared against the golden.
struct CheckOptions {
  std::vector<std::string> smokes = {"smoke"};
  /// What shapes each smoke's check (--goldens, --out, --repeat, the run
  /// overrides, --rerun-failing, --distinct-runs), declared once in
  /// gate/check.h; its `slots` are set by check_command.
  CheckSmokeOptions smoke;
  std::string shard;        ///< "I/N": only this shard of the suite (gate/shard.h)
  bool shard_given = false; ///< --shard was given (an empty value is an error, not "no sharding")
  int jobs = 0;             ///< -j: child runs at once; 0: the CPUs this process may use
  std::string history_dir;  ///< --history DIR: one ledger entry per smoke (history/ledger.h); "" none
  std::string kind;         ///< --kind trainer|built-in: only the smokes of that kind; "" all
  bool quiet = false;       ///< --quiet: a passing smoke in its headline line alone
};
int check_command(const CheckOptions& options);
/// check_command with the runs made by `launcher` (thread-safe with -j >
/// 1): the in-process tests' fake one (tests/cli/check_command_test.cpp).
int check_command(const CheckOptions& options, Launcher& launcher);

/// `lockstep history DIR [SMOKE]`: the ledgers read back (history/history.h):
/// the text report, --json / --html files.
struct HistoryOptions {
  std::string dir;
  std::string smoke;       ///< "" = every ledger in dir
  std::string json_out, html_out;
  bool skip_bad = false;   ///< leave out malformed lines, naming them
};
int history_command(const HistoryOptions& options);

/// `lockstep history add RECORD... --to DIR`: records made elsewhere
/// (`lockstep run`, `import`) entered as not compared.
struct HistoryAddOptions {
  std::vector<std::string> records;
  std::string to;
};
int history_add_command(const HistoryAddOptions& options);

/// `lockstep history push|pull DIR [--branch B] [--remote R]`: the ledgers
/// kept on a git branch (machine/git_branch_store.h), merged with the
/// remote's.
struct HistorySyncOptions {
  std::string dir;
  std::string branch = "lockstep-history";
  std::string remote = "origin";
  std::string repo = ".";  ///< a path inside the repository
};
int history_push_command(const HistorySyncOptions& options);
int history_pull_command(const HistorySyncOptions& options);

/// `lockstep calibrate SMOKE`: tolerances from runs across stack axes
/// (calibrate/calibrate.h); prints the report, --json/--html write it,
/// --write puts the rules into the config.
struct CalibrateCliOptions {
  std::string smoke;
  /// Bound by the command line itself: --seed-count (seeds), --repeat,
  /// --records, --multiplier, --rtol-floor, --atol-floor (rules), --out.
  CalibrateOptions calibrate;
  std::vector<std::string> axes;     ///< "threads=1,2", parsed by parse_axis into calibrate.axes
  std::string seed_list;             ///< --seeds "7,8,9": the seed axis, as bless --seeds names seeds
  bool no_detect = false;            ///< --no-detect: calibrate.detect false
  std::string json_out, html_out;
  bool json_given = false, html_given = false;  ///< given, even as '' (refused)
  bool write = false;
  int jobs = 0;                      ///< 0: the CPUs this process may use
};
int calibrate_command(const CalibrateCliOptions& options);
/// calibrate_command with the runs made by `launcher` (the in-process tests').
int calibrate_command(const CalibrateCliOptions& options, Launcher& launcher);

/// `lockstep bisect --good REV --bad REV [SMOKE...]`: the first commit
/// whose smokes fail against the good end's records (bisect/bisect.h).
struct BisectCliOptions {
  /// Bound by the command line itself: --good, --bad, SMOKE, --build,
  /// --repeat, --repo, --out.
  BisectOptions bisect;
  std::string json_out;
  bool json_given = false;
  int jobs = 0;
};
int bisect_command(const BisectCliOptions& options);
/// bisect_command with the runs made by `launcher` (the in-process tests').
int bisect_command(const BisectCliOptions& options, Launcher& launcher);

/// `lockstep bisect-env --good-env FILE --bad-env FILE SMOKE...`: the
/// smallest set of stack differences that moves the curve
/// (bisect/bisect_env.h).
struct BisectEnvCliOptions {
  /// Bound by the command line itself: --good-env, --bad-env, SMOKE,
  /// --repeat, --out.
  EnvBisectOptions bisect;
  std::string json_out;
  bool json_given = false;
  int jobs = 0;
};
int bisect_env_command(const BisectEnvCliOptions& options);
/// bisect_env_command with the runs made by `launcher` (the in-process tests').
int bisect_env_command(const BisectEnvCliOptions& options, Launcher& launcher);

/// `lockstep bless SMOKE... --reason TEXT`: regenerate goldens.
struct BlessOptions {
  std::vector<std::string> smokes;
  /// Bound by the command line itself: --reason, --goldens, --out,
  /// --allow-dirty, --repeat (runs).
  BlessSmokeOptions bless;
  bool in_ci = false;  ///< allow writing goldens although CI is set
  std::string seeds;  ///< --seeds "42,43": extra seeds for a multi-seed golden (parsed strictly into bless.seeds)
  bool no_wait = false;  ///< exit 3 instead of waiting when another bless/accept holds the goldens folder
  std::string kind;      ///< --kind trainer|built-in: only the smokes of that kind; "" all
};
int bless_command(const BlessOptions& options);
/// bless_command with the runs made by `launcher` (the in-process tests').
int bless_command(const BlessOptions& options, Launcher& launcher);

/// `lockstep review [DIR]` and `lockstep accept [DIR] --reason TEXT`:
/// pending goldens (*.golden.new) left by a failing check.
struct PendingOptions {
  std::string dir = "lockstep-out";  ///< where the pending files are
  std::string goldens_dir = "goldens";
  std::string smoke_dir;             ///< default: smoke/ beside the goldens folder
  std::string reason;                ///< accept only
  bool in_ci = false;                ///< accept only: write although CI is set
  bool no_wait = false;              ///< accept only: exit 3 instead of waiting for the goldens folder's lock
  bool allow_dirty = false;          ///< accept only: accept from a dirty work tree (recorded)
  bool allow_narrower = false;       ///< accept only: replace a golden by one that checks less (gate/pending.h)
};
int review_command(const PendingOptions& options);
int accept_command(const PendingOptions& options);

/// `lockstep verify-goldens [DIR]`: integrity, provenance and completeness.
struct VerifyOptions {
  std::string goldens_dir = "goldens";
  std::string smoke_dir;  ///< default: smoke/ beside the goldens folder
  std::string shard;      ///< "I/N": only the goldens of check --shard I/N's smokes
  bool shard_given = false;  ///< --shard was on the command line (an empty value is refused)
};
int verify_goldens_command(const VerifyOptions& options);

/// `lockstep hook install`: the pre-push hook, never over an existing one.
/// `lockstep hook install`: the pre-push hook of the repository holding
/// `dir` (cli/hook_command.cpp). Throws exit 2 outside a work tree or over
/// a hook that is not lockstep's, exit 3 for a broken install.
int hook_install_command(const std::string& dir = ".");

/// `lockstep hook uninstall`: removes the pre-push shim `hook install`
/// wrote (exit 2 for a hook lockstep did not write; 0 when there is none).
int hook_uninstall_command(const std::string& dir = ".");

/// `lockstep hook plan [ROOT]`: prints what the pre-push hook checks and
/// what triggers it (gate/hook_settings.h), "smokes\t<path>" and
/// "trigger\t<path>" lines. Throws exit 2 for a malformed lockstep.json
/// or smoke config.
struct HookPlanOptions {
  std::string root = ".";
};
int hook_plan_command(const HookPlanOptions& options);

/// `lockstep init [DIR]`: scaffolds smoke/ (one example that runs as is),
/// goldens/, .gitignore entries, ci/templates/lockstep.gitlab-ci.yml, a
/// .gitlab-ci.yml including it, and the pre-push hook in a git work tree. Never overwrites; idempotent; prints what
/// it did. Throws exit 2 when DIR is a file, exit 3 when the template is
/// missing (a broken install) or a file cannot be written.
struct InitOptions {
  std::string dir = ".";
  /// --kind: the smokes the repository will have, "built-in", "trainer" or
  /// "both" (which example and CI jobs init writes); "": both where
  /// lockstep-torch is beside lockstep, else trainer.
  std::string kind;
};
int init_command(const InitOptions& options);

/// Checks the --out folder of check or bless before any run: a non-empty
/// path, a folder (or nothing yet), not inside the goldens folder of any of
/// `smoke_files` (`goldens_dir` when given); creates it. Throws exit 2 for
/// a wrong path, exit 3 when the machine cannot create it.
void require_out_folder(const std::string& out, const std::vector<std::string>& smoke_files,
                        const std::string& goldens_dir);

/// Before any run of `command` (check, bless): a built-in smoke among
/// `smoke_files` (no trainer section) runs in lockstep-torch; when none is
/// beside this lockstep (the bundle, the wheel), throws exit-3
/// EnvironmentError naming those smokes and --kind trainer, rather than
/// failing each of their runs. A config that does not load is left to the
/// command.
void require_torch_for_built_in(const std::vector<std::string>& smoke_files, const std::string& command);

/// Refuses (BadUsage, exit 2, naming `flag`) a report path that is empty,
/// a folder, one of `inputs`, inside `own_dir` (the folder the command
/// clears and fills with its records; "": none), not a regular file, or an
/// existing file that does not hold `signature` (a report this command
/// wrote before): a report never replaces what the user did not ask for.
void require_report_file(const std::string& flag, const std::string& path, const std::string& signature,
                         const std::vector<std::string>& inputs, const std::string& own_dir = "");

/// True when the CI variable is set to anything but "", "0" or "false".
bool running_in_ci();

/// `lockstep env [--json] [--diff RECORD]`.
struct EnvOptions {
  std::string format = "text";  ///< --format: "text" or "json"
  bool json = false;            ///< format == "json": stdout holds the JSON only
  std::string json_out;         ///< --json FILE: also write the JSON there
  std::string device = "cpu";  ///< whose platform key and relevance: "cpu" or "cuda"
  bool device_given = false;   ///< --device was on the command line
  std::string diff_record;
  /// With a team trainer's record: the smoke config (its interpreter,
  /// trainer.env and trainer.packages); "": the config of the record's
  /// smoke in the smoke/ folder beside its goldens folder.
  std::string config;
  std::string python;  ///< the interpreter to ask instead of trainer.command[0]
  /// --write-envs RECORD_FILE HERE_FILE: with --diff, the settable
  /// differences as two environment files for `lockstep bisect-env`.
  std::vector<std::string> write_envs;
};
int env_command(const EnvOptions& options);

/// What main returns once a command returned `code`. In `lockstep-torch`
/// it does not return: with the command's files written (atomically, so
/// closed) and its streams flushed, the process leaves with _exit(code),
/// skipping LibTorch's static destructors (~50 ms of CPU per run, a tenth
/// of a built-in run). In the front and the LibTorch-free build it returns
/// `code`, and the process ends as usual (sanitizer leak checks run then).
int finish_command(int code);

/// --write-envs of `env --diff`: writes the record's and this machine's
/// settable differences (bisect/bisect_env.h) and says what it wrote.
/// Throws BadUsage for a path that is an existing file other than an
/// environment file.
void write_env_pair(const EnvOptions& options, const std::vector<FieldDiff>& differences);

/// Whether `path` is a readable run record or golden of a team trainer.
bool is_trainer_record_file(const std::string& path);


/// `lockstep env --diff RECORD` for a team trainer's RECORD, torch-free
/// (external/trainer_environment.h): this machine and the trainer's
/// interpreter against the record. Exit 2 for --device (the record's is
/// used) or a bad record; 3 when the interpreter cannot be asked.
int env_trainer_diff_command(const EnvOptions& options);

}  // namespace lockstep
