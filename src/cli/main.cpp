// The lockstep executable: parses the command line and runs one
// subcommand. Every failure ends with the exit code of README.md ("Exit codes"):
// 0 pass, 1 regression, 2 bad input, 3 environment, 4 nondeterministic.
#include <CLI/CLI.hpp>

#include <cstdlib>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>
#include <iostream>

#include "cli/commands.h"
#include "cli/flags.h"
#include "core/error.h"
#include "core/process.h"
#include "smoke/golden_store.h"

namespace {

using lockstep::add_deprecated;
using lockstep::decimal_number;
using lockstep::decimal_range;
using lockstep::empty_assignment;
using lockstep::kHiddenGroup;
using lockstep::misspelling_hint;
using lockstep::signed_decimal_range;
using lockstep::usage_error_said;

// `run` and `probe` take the same arguments: the rows of plan/run_flags.h.
CLI::App* add_run_command(CLI::App& app, const char* name, const char* help, lockstep::RunOptions& o,
                          lockstep::RunFlagSet flags) {
  auto* cmd = app.add_subcommand(name, help);
  cmd->add_option("SMOKE", o.smoke, "Smoke config file")->required();
  lockstep::add_run_flags(cmd, o, flags);
  return cmd;
}

// `calibrate`: the axes, the rule's multiplier and floors, the outputs.
CLI::App* add_calibrate_command(CLI::App& app, lockstep::CalibrateCliOptions& o) {
  auto* cmd = app.add_subcommand(
      "calibrate", "Tolerances from evidence: run a smoke across stack axes, measure the spread, recommend rules, "
                   "estimate the false-alarm rate and the smallest lr change caught (docs/comparison.md)");
  cmd->add_option("SMOKE", o.smoke, "Smoke config file")->required();
  cmd->add_option("--axis", o.axes,
                  "NAME=V1,V2,...: threads (intra-op), capability (ATEN_CPU_CAPABILITY: default, avx2, avx512), "
                  "workers or seed; repeatable (default: threads=n,2n x every capability this CPU runs)");
  cmd->add_option("--seeds", o.seed_list,
                  "Also vary the seed over these seeds (comma-separated, as bless --seeds; sigma rules)");
  cmd->add_option("--seed-count", o.calibrate.seeds, "Also vary the seed over K seeds from the config's (sigma rules)")
      ->transform(decimal_range(1, 100));
  cmd->add_option("--repeat", o.calibrate.repeats, "Fresh runs at each point")->capture_default_str()->transform(decimal_range(1, 100));
  add_deprecated(cmd, "--repeats", o.calibrate.repeats, "--repeat N")->transform(decimal_range(1, 100));
  cmd->add_option("--records", o.calibrate.records, "Run records (or folders of them) from other runners, e.g. CI artifacts");
  cmd->add_option("--multiplier", o.calibrate.rules.multiplier, "m: rules allow m times the measured spread")
      ->capture_default_str()
      ->check(decimal_number(1.0, 1000.0));
  cmd->add_option("--rtol-floor", o.calibrate.rules.rtol_floor, "The smallest rtol recommended (Megatron-LM's 1e-3)")
      ->capture_default_str()
      ->check(decimal_number(0.0, 1.0));
  cmd->add_option("--atol-floor", o.calibrate.rules.atol_floor, "The smallest atol recommended (Megatron-LM's 1e-6)")
      ->capture_default_str()
      ->check(decimal_number(0.0, 1e6));
  cmd->add_flag("--no-detect", o.no_detect, "Skip the detection-limit search (its planted-lr runs)");
  cmd->add_option("--json", o.json_out, "Also write the report as JSON to this file")
      ->each([&o](const std::string&) { o.json_given = true; });
  cmd->add_option("--html", o.html_out, "Also write a self-contained HTML page (spread per step against the rule)")
      ->each([&o](const std::string&) { o.html_given = true; });
  cmd->add_flag("--write", o.write, "Put the recommended rules and a calibration block into the smoke config");
  cmd->add_option("--out", o.calibrate.out_dir, "Folder for the runs' records (<out>/<smoke>/calibrate/)")->capture_default_str();
  cmd->add_option("-j,--jobs", o.jobs, "Runs at once (default: the CPUs this process may use)")
      ->transform(decimal_range(1, 256));
  return cmd;
}

// `bisect`: the two ends, the smokes, how a commit is built and run.
CLI::App* add_bisect_command(CLI::App& app, lockstep::BisectCliOptions& o) {
  auto* cmd = app.add_subcommand(
      "bisect", "The first commit between --good and --bad whose smokes fail against the good end's records "
                "(a temporary copy of each commit; your work tree, index and git bisect are untouched)");
  cmd->add_option("--good", o.bisect.good, "A revision whose smokes pass")->required();
  cmd->add_option("--bad", o.bisect.bad, "A later revision, on --good's first-parent line, whose smokes fail")->required();
  cmd->add_option("SMOKE", o.bisect.smokes, "Smoke configs or folders, relative to the repository's root (default: smoke)");
  cmd->add_option("--build", o.bisect.build, "Shell command run in each commit's folder before its runs (a failure skips it)");
  cmd->add_option("--repeat", o.bisect.repeats,
                  "Runs per commit, held bit for bit; a step whose runs differ is rerun this many times, then skipped")
      ->capture_default_str()
      ->transform(decimal_range(1, 20));
  add_deprecated(cmd, "--repeats", o.bisect.repeats, "--repeat N")->transform(decimal_range(1, 20));
  cmd->add_option("--repo", o.bisect.repo, "A folder of the repository (default: the current one)");
  cmd->add_option("--json", o.json_out, "Also write the steps and the conclusion as JSON to this file")
      ->each([&o](const std::string&) { o.json_given = true; });
  cmd->add_option("--out", o.bisect.out_dir, "Folder for the records (<out>/bisect/<commit>/)")->capture_default_str();
  cmd->add_option("-j,--jobs", o.jobs, "Runs at once (default: the CPUs this process may use)")
      ->transform(decimal_range(1, 256));
  return cmd;
}

// `bisect-env`: the two environment files and the smokes.
CLI::App* add_bisect_env_command(CLI::App& app, lockstep::BisectEnvCliOptions& o) {
  auto* cmd = app.add_subcommand(
      "bisect-env", "The smallest set of differences between two stacks' environment files (variables, library and "
                    "Python folders, interpreter) that moves the curve: delta debugging over real runs (docs/bisect.md)");
  cmd->add_option("--good-env", o.bisect.good_env, "Environment file of the stack whose smokes pass")->required();
  cmd->add_option("--bad-env", o.bisect.bad_env, "Environment file of the stack whose smokes fail")->required();
  cmd->add_option("SMOKE", o.bisect.smokes, "Smoke configs or folders")->required();
  cmd->add_option("--repeat", o.bisect.repeats, "Runs per tested set, held bit for bit")
      ->capture_default_str()
      ->transform(decimal_range(1, 20));
  add_deprecated(cmd, "--repeats", o.bisect.repeats, "--repeat N")->transform(decimal_range(1, 20));
  cmd->add_option("--json", o.json_out, "Also write the sets tested and the conclusion as JSON to this file")
      ->each([&o](const std::string&) { o.json_given = true; });
  cmd->add_option("--out", o.bisect.out_dir, "Folder for the records (<out>/bisect-env/)")->capture_default_str();
  cmd->add_option("-j,--jobs", o.jobs, "Runs at once (default: the CPUs this process may use)")
      ->transform(decimal_range(1, 256));
  return cmd;
}

// `review` and `accept` find pending goldens and the current ones alike.
CLI::App* add_pending_command(CLI::App& app, const char* name, const char* help, lockstep::PendingOptions& o) {
  auto* cmd = app.add_subcommand(name, help);
  cmd->add_option("DIR", o.dir, "Folder with pending goldens")->capture_default_str();
  cmd->add_option("--goldens", o.goldens_dir, "Goldens folder")->capture_default_str();
  cmd->add_option("--smoke", o.smoke_dir, "Smoke folder (default: smoke/ beside the goldens)");
  return cmd;
}

// A subcommand and what runs it, with its options bound (one row each).
struct Command {
  CLI::App* app;
  std::function<int()> action;
};

// `run` and `probe`.
void add_run_and_probe(CLI::App& app, std::vector<Command>& out) {
  using namespace lockstep;
  auto run_opts = std::make_shared<RunOptions>();
  auto* run = add_run_command(app, "run", "Smoke training (and data-only pass) only; writes a run record", *run_opts,
                              RunFlagSet::kRun);
  run->add_option_function<std::string>(
      "--vary",
      [run_opts](const std::string& spec) {
        try {
          run_opts->overrides.vary = parse_variation(spec, allowed_cpus_mask());
        } catch (const Error& e) {
          throw CLI::ValidationError(e.what());  // a usage error: exit 2, said as CLI11 says the others
        }
      },
      "Vary what must not move the values, for this run: allocator[=BYTES] (a heap hole before the run), "
      "malloc-perturb[=N] (MALLOC_PERTURB_), affinity[=CPU+CPU], env-order, thread-warmup; joined by ','; a kind "
      "without a value takes a random one; recorded as fingerprint fields vary.* (check varies its second repeat "
      "so: docs/equivalence.md)");
  out.push_back({run, [run_opts] { return run_command(*run_opts); }});
  auto probe_opts = std::make_shared<RunOptions>();
  auto* probe = add_run_command(app, "probe", "Data-only pass; writes batch probes", *probe_opts, RunFlagSet::kProbe);
  auto sweep = std::make_shared<BatchSweepOptions>();
  auto* sweep_flag =
      probe->add_flag("--batch-sweep", sweep->on,
                      "Instead of the data-only pass: the batch-invariance sweep of the smoke's model (a trainer's: "
                      "through the helper's ModuleTracer at step 0; the first batch forwarded whole and in halves, quarters, ... down to single samples; each "
                      "module's output held bit for bit to the whole batch's; exit 1 naming the first module that "
                      "is not batch-invariant)");
  probe->add_option("--json", sweep->json_out, "With --batch-sweep: also write the sweep as JSON to this file")
      ->check([](const std::string& v) { return v.empty() ? std::string("a file path for the JSON, not empty") : ""; })
      ->needs(sweep_flag);
  probe->add_flag("--batch-sweep-timing", sweep->timing, "With --batch-sweep: time each size's plain forwards first")
      ->needs(sweep_flag)
      ->group(kHiddenGroup);  // bench/batch_sweep.sh's baseline, hidden from --help
  out.push_back({probe, [probe_opts, sweep] {
                   return sweep->on ? batch_sweep_command(*probe_opts, *sweep) : probe_command(*probe_opts);
                 }});
}

// `compare` and `import`: records without LibTorch.
void add_compare_and_import(CLI::App& app, std::vector<Command>& out) {
  using namespace lockstep;
  auto cmp_opts = std::make_shared<CompareOptions>();
  auto* cmp = app.add_subcommand("compare", "Compare a run record against a golden (no LibTorch needed)");
  cmp->add_option("RUN", cmp_opts->run, "Run record")->required();
  cmp->add_option("GOLDEN", cmp_opts->golden,
                  "Golden or run record used as the reference, or a goldens folder (the run's smoke and platform "
                  "pick the golden)")
      ->required();
  cmp->add_option("--config", cmp_opts->config, "Smoke config whose tolerances apply");
  cmp->add_option("--json", cmp_opts->json_out, "Also write the JSON report to this file");
  cmp->add_option("--junit", cmp_opts->junit_out, "Also write a JUnit XML report to this file");
  cmp->add_option("--markdown", cmp_opts->markdown_out, "Also write a Markdown report to this file");
  cmp->add_option("--html", cmp_opts->html_out, "Also write a self-contained HTML report to this file");
  out.push_back({cmp, [cmp_opts] { return compare_command(*cmp_opts); }});

  auto o = std::make_shared<ImportRequest>();
  auto* import = app.add_subcommand(
      "import", "Read a trainer's own metrics (TensorBoard, JSONL, MLLOG, CSV), or another tool's goldens (Megatron-LM, "
                "torchtitan, Hugging Face Trainer, MLflow), into a run record or a pending golden (no LibTorch needed)");
  import->add_option("FORMAT", o->format,
                     "tensorboard, jsonl, mllog, csv, megatron (golden_values_*.json), torchtitan (a loss file), "
                     "hf-trainer (trainer_state.json), mlflow (mlflow.db, or a run folder of the file store)")
      ->required()
      ->check(CLI::IsMember({"tensorboard", "jsonl", "mllog", "csv", "megatron", "torchtitan", "hf-trainer", "mlflow"}));
  import->add_option("PATH", o->path, "Metrics file, or a folder of events.out.tfevents.* files")->required();
  import->add_option("--series", o->series, "NAME=TAG: record the tag (key, column) TAG as series NAME")->required();
  import->add_option("--record", o->record, "Record path (without --golden)");
  auto* import_out = import->add_option(
      "--out", o->out, "With --golden: the folder for the pending golden (default lockstep-import)");
  import->add_option("--golden", o->golden,
                     "Smoke config: write a pending golden of this smoke (then `lockstep review`, `accept --reason`)");
  import->add_option("--platform", o->platform,
                     "With --golden: the platform key to file it under (default: the smoke's one declared platform, "
                     "else this machine's)");
  import->add_option("--step-offset", o->step_offset,
                     "With --golden: added to every step (-1 for a log that counts from 1: Hugging Face, Megatron-LM)")
      ->transform(signed_decimal_range(-1000000, 1000000));
  import->add_option("--name", o->name, "Smoke name in the record")->capture_default_str();
  auto* step_key = import->add_option("--step-key", o->step_key, "jsonl/csv: the step field")->capture_default_str();
  auto* mllog_step = import->add_option("--mllog-step", o->mllog_step, "mllog: metadata field giving the step")
                         ->check(CLI::IsMember({"epoch_num", "samples_count", "step"}))
                         ->capture_default_str();
  auto* run = import->add_option("--run", o->run, "mlflow: the run's run_uuid or name (needed when the store holds several)");
  import->add_option("--probes", o->probes, "Batch probes JSONL of the batches trained on (python/lockstep)");
  import->add_option("--trainer-report", o->trainer_report,
                     "lockstep-trainer.json the trainer wrote (python/lockstep): its stack and contract");
  import->add_option("--device", o->device, "Device the trainer ran on")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();
  auto* seed = import->add_option("--seed", o->seed, "Seed the trainer ran with (recorded)")
                   ->transform(decimal_range(0, UINT64_MAX));
  out.push_back({import, [o, step_key, mllog_step, run, seed, import_out] {
                   // `import --out FILE` without --golden was the record: its old spelling.
                   if (import_out->count() > 0 && o->golden.empty()) {
                     if (!o->record.empty())
                       throw BadUsage("import --out " + o->out + ": a folder for --golden's pending golden; the "
                                      "record goes to --record " + o->record);
                     std::cerr << "lockstep: note: import --out FILE is deprecated for the record; use --record FILE "
                                  "(--out names the pending golden's folder, with --golden)\n";
                     o->record = o->out;
                   }
                   o->step_key_given = step_key->count() > 0;
                   o->mllog_step_given = mllog_step->count() > 0;
                   o->run_given = run->count() > 0;
                   o->seed_given = seed->count() > 0;
                   return import_command(*o);
                 }});
}

// --kind of check and bless (smoke/smoke_config.h's select_smoke_kind).
void add_kind_option(CLI::App* cmd, std::string& kind) {
  cmd->add_option("--kind", kind,
                  "trainer or built-in: only the smokes of that kind (a trainer smoke runs in your trainer's image "
                  "with the wheel; a built-in one needs lockstep-torch); none of it: exit 0, saying so")
      ->check(CLI::IsMember({"trainer", "built-in"}));
}

// `check`, the CI stage, and what runs smokes many times: `calibrate`,
// `bisect`, `bisect-env`.
void add_check_family(CLI::App& app, std::vector<Command>& out) {
  using namespace lockstep;
  auto o = std::make_shared<CheckOptions>();
  auto* check = app.add_subcommand("check", "Probe + train + compare against goldens (the CI stage)");
  check->add_option("SMOKE", o->smokes, "Smoke configs or folders (default: smoke)");
  check->add_option("--goldens", o->smoke.goldens_dir, "Goldens folder (default: goldens/ beside the smoke folder)");
  check->add_option("--out", o->smoke.out_dir, "Folder for run records and reports")->capture_default_str();
  auto* shard = check->add_option("--shard", o->shard,
                                  "I/N: check only shard I of N of the suite (smokes dealt by a stable hash of their "
                                  "names; GitLab: $CI_NODE_INDEX/$CI_NODE_TOTAL)");
  check->add_option("--repeat", o->smoke.repeat, "Fresh runs compared bit for bit (default: config, 2)")
      ->transform(decimal_range(1, 100));
  check->add_option("-j,--jobs", o->jobs,
                    "Child runs at once: smokes, and each smoke's repeats and stopped run, in fresh processes "
                    "(a run takes one per process it keeps busy: a rank, a trainer's pass); output and verdicts as with -j 1 "
                    "(default: the CPUs this process may use)")
      ->transform(decimal_range(1, 256));
  auto overrides = std::make_shared<RunRequest>();  // check's runs take run's override flags
  add_run_flags(check, *overrides, RunFlagSet::kOverrides);
  check->add_option("--history", o->history_dir,
                    "DIR: append each smoke's night to DIR/<smoke>.jsonl, the nightly ledger (`lockstep history DIR`)");
  check->add_option("--rerun-failing", o->smoke.rerun_failing,
                    "K: run a smoke that fails against its golden K more times here; reruns that differ from the "
                    "failing run make it exit 4 (nondeterministic on this runner), else exit 1 stands "
                    "\"(reproduced K of K)\"")
      ->transform(decimal_range(1, 20));
  add_kind_option(check, o->kind);
  check->add_flag("-q,--quiet", o->quiet,
                  "A passing smoke in one line, its verdict; a smoke that does not pass in full");
  check->add_option("--distinct-runs", o->smoke.distinct_runs,
                    "K: when the repeats differ (exit 4), run the smoke until K runs in all and say how many distinct "
                    "results they gave and where each first differs (default 5; at most --repeat: no extra run)")
      ->transform(decimal_range(1, 50));
  // check runs on one machine; these only say what to do instead
  // (docs/distributed.md, "Gating a multi-node run in CI"). Hidden from --help.
  auto several_machines = std::make_shared<std::string>();
  for (auto* flag : {"--nnodes", "--node-rank", "--master"}) check->add_option(flag, *several_machines, "")->group(kHiddenGroup);
  out.push_back({check, [o, shard, several_machines, overrides] {
                   if (!several_machines->empty())
                     throw BadUsage("check runs on one machine (its repeat and resume runs follow each result, which "
                                    "only node 0 sees); on several machines run `lockstep run SMOKE --nnodes N "
                                    "--node-rank K --master HOST:PORT` on each and `lockstep compare RECORD goldens/` "
                                    "on node 0 (docs/distributed.md)");
                   o->shard_given = shard->count() > 0;
                   o->smoke.overrides = overrides->overrides;
                   return check_command(*o);
                 }});
  auto st = std::make_shared<SelftestCommandOptions>();
  auto* selftest = app.add_subcommand(
      "selftest", "The negative control: does each smoke catch a one-ULP change of a parameter, does its "
                  "data-only pass see a moved sample, and can it observe the stack's nondeterminism with the "
                  "contract relaxed?");
  selftest->add_option("SMOKE", st->smokes, "Smoke configs or folders (default: smoke)");
  selftest->add_option("--out", st->out_dir, "Folder for the runs' records")->capture_default_str();
  selftest->add_option("--json", st->json_out, "Also write the results as JSON to this file");
  selftest->add_option("--distinct-runs", st->distinct_runs,
                       "K: runs with the contract relaxed (determinism mode default, 2 intra-op threads), counted "
                       "in distinct results")
      ->transform(decimal_range(2, 50))
      ->capture_default_str();
  out.push_back({selftest, [st] { return selftest_command(*st); }});
  auto cal = std::make_shared<CalibrateCliOptions>();
  out.push_back({add_calibrate_command(app, *cal), [cal] { return calibrate_command(*cal); }});
  auto bis = std::make_shared<BisectCliOptions>();
  out.push_back({add_bisect_command(app, *bis), [bis] { return bisect_command(*bis); }});
  auto env = std::make_shared<BisectEnvCliOptions>();
  out.push_back({add_bisect_env_command(app, *env), [env] { return bisect_env_command(*env); }});
}

// The goldens: `bless`, `review`, `accept`, `verify-goldens`.
void add_golden_commands(CLI::App& app, std::vector<Command>& out) {
  using namespace lockstep;
  auto o = std::make_shared<BlessOptions>();
  auto* bless = app.add_subcommand("bless", "Regenerate goldens, with provenance");
  bless->add_option("SMOKE", o->smokes, "Smoke configs or folders")->required();
  bless->add_option("--reason", o->bless.reason, "Why the goldens change (recorded)")->required();
  bless->add_option("--goldens", o->bless.goldens_dir, "Goldens folder (default: goldens/ beside the smoke folder)");
  bless->add_option("--out", o->bless.out_dir, "Folder for the run records")->capture_default_str();
  bless->add_option("--repeat", o->bless.runs, "Bit-identical runs required")->transform(decimal_range(2, 100))->capture_default_str();
  add_deprecated(bless, "--runs", o->bless.runs, "--repeat N")->transform(decimal_range(2, 100));
  bless->add_option("--seeds", o->seeds,
                    "Also bless these seeds (comma-separated) into a multi-seed golden: per-step mean and "
                    "std for the sigma rule; the config's seed stays the exact reference");
  add_kind_option(bless, o->kind);
  bless->add_flag("--allow-dirty", o->bless.allow_dirty, "Bless from a dirty work tree (recorded)");
  bless->add_flag("--in-ci", o->in_ci, "Write goldens even though CI is set");
  bless->add_flag("--no-wait", o->no_wait,
                  "Exit 3, naming its pid, when another bless or accept holds the goldens folder (default: wait)");
  out.push_back({bless, [o] { return bless_command(*o); }});

  auto review_opts = std::make_shared<PendingOptions>();
  auto* review = add_pending_command(app, "review", "Show pending goldens (*.golden.new) against the current ones",
                                     *review_opts);
  out.push_back({review, [review_opts] { return review_command(*review_opts); }});
  auto accept_opts = std::make_shared<PendingOptions>();
  auto* accept = add_pending_command(app, "accept", "Promote reviewed pending goldens, with a reason", *accept_opts);
  accept->add_option("--reason", accept_opts->reason, "Why the goldens change (recorded)")->required();
  accept->add_flag("--in-ci", accept_opts->in_ci, "Write goldens even though CI is set");
  accept->add_flag("--allow-dirty", accept_opts->allow_dirty,
                   "Accept although the work tree has changes outside the goldens folder (recorded)");
  accept->add_flag("--allow-narrower", accept_opts->allow_narrower,
                   "Replace a golden by one that checks less (fewer series, no batch probes, ...), named on output");
  accept->add_flag("--no-wait", accept_opts->no_wait,
                   "Exit 3, naming its pid, when another bless or accept holds the goldens folder (default: wait)");
  out.push_back({accept, [accept_opts] { return accept_command(*accept_opts); }});

  auto v = std::make_shared<VerifyOptions>();
  auto* verify = app.add_subcommand("verify-goldens", "Integrity, provenance and completeness of the golden set");
  verify->add_option("DIR", v->goldens_dir, "Goldens folder")->capture_default_str();
  verify->add_option("--smoke", v->smoke_dir, "Smoke folder (default: smoke/ beside the goldens)");
  auto* verify_shard = verify->add_option("--shard", v->shard,
                     "I/N: only the goldens of the smokes `check --shard I/N` checks (each CI shard verifies its own)");
  out.push_back({verify, [v, verify_shard] {
                   v->shard_given = verify_shard->count() > 0;
                   return verify_goldens_command(*v);
                 }});
}

// `hook`, `init` and `env`: the repository and the machine.
void add_setup_commands(CLI::App& app, std::vector<Command>& out) {
  using namespace lockstep;
  auto init_opts = std::make_shared<InitOptions>();
  auto* init = app.add_subcommand("init", "Scaffold lockstep in a repository: smoke/, goldens/, .gitignore, the GitLab CI template and .gitlab-ci.yml, "
      "and the pre-push hook (in a git work tree); never overwrites a file");
  init->add_option("DIR", init_opts->dir, "Repository folder")->capture_default_str();
  init->add_option("--kind", init_opts->kind,
                   "The smokes this repository will gate: built-in (lockstep's models, in lockstep's image), trainer "
                   "(your own trainer, in its image with the wheel) or both: the example and CI jobs written "
                   "(default: both where lockstep-torch is installed, else trainer)")
      ->check(CLI::IsMember({"built-in", "trainer", "both"}));
  out.push_back({init, [init_opts] { return init_command(*init_opts); }});
  auto* hook = app.add_subcommand("hook", "Git hooks");
  out.push_back({hook->add_subcommand("install", "Install the pre-push hook (never overwrites one)"),
                 [] { return hook_install_command(); }});
  out.push_back({hook->add_subcommand("uninstall", "Remove the pre-push hook `hook install` wrote"),
                 [] { return hook_uninstall_command(); }});
  auto plan_opts = std::make_shared<HookPlanOptions>();
  auto* hook_plan = hook->add_subcommand("plan", "What the pre-push hook checks and which changed paths trigger it "
                                                 "(from lockstep.json and the smokes)");
  hook_plan->add_option("ROOT", plan_opts->root, "Repository root")->capture_default_str();
  out.push_back({hook_plan, [plan_opts] { return hook_plan_command(*plan_opts); }});
  hook->require_subcommand(1);

  auto o = std::make_shared<EnvOptions>();
  auto* env = app.add_subcommand("env", "Print the environment fingerprint, or diff it against a record");
  auto* env_format = env->add_option("--format", o->format, "text, or json (the fingerprint as JSON on stdout)")
                        ->check(CLI::IsMember({"text", "json"}))
                        ->capture_default_str();
  // --json FILE as in every command; bare --json was the old switch.
  auto* env_json = env->add_option("--json", o->json_out, "Also write the fingerprint (or the diff) as JSON to this file")
                       ->expected(0, 1);
  auto* env_device = env->add_option("--device", o->device,
                  "Fingerprint for runs on this device: its platform key (cuda-sm90, ...), CUDA fields "
                  "tagged relevant; with cuda, exit 3 and the reason when CUDA is not usable")
      ->check(CLI::IsMember({"cpu", "cuda"}));
  env->add_option("--diff", o->diff_record, "Run record or golden to diff against (its device is used)");
  env->add_option("--config", o->config,
                  "With a team trainer's record: its smoke config, whose trainer.command[0] is the interpreter "
                  "asked and whose trainer.packages apply (default: the record's smoke in smoke/ beside its "
                  "goldens folder)");
  env->add_option("--write-envs", o->write_envs,
                  "RECORD_FILE HERE_FILE: with --diff, write the settable differences (variables, the interpreter) "
                  "as two environment files for `lockstep bisect-env`")
      ->expected(2);
  env->add_option("--python", o->python,
                  "With a team trainer's record: the Python to ask, when trainer.command[0] is a wrapper");
  out.push_back({env, [o, env_device, env_json, env_format] {
                   o->device_given = env_device->count() > 0;
                   if (env_json->count() > 0 && o->json_out.empty()) {
                     if (env_format->count() > 0 && o->format != "json")
                       throw BadUsage("env: --json without a file is the old spelling of --format json, and --format " +
                                      o->format + " was given too; give --format only");
                     std::cerr << "lockstep: note: env --json without a file is deprecated; use --format json\n";
                     // Said once: with --format json given too, the old switch adds nothing.
                     respell_remembered_flag("--json", env_format->count() > 0 ? std::vector<std::string>{}
                                                                             : std::vector<std::string>{"--format", "json"});
                     o->format = "json";
                   }
                   o->json = o->format == "json";
                   if (!o->json_out.empty())
                     require_report_file("--json", o->json_out, "\"platform\": ", {o->diff_record, o->config}, "");
                   if (!o->write_envs.empty() && o->diff_record.empty())
                     throw BadUsage("env --write-envs: only with --diff RECORD (the record's values and this machine's)");
                   // A team trainer's record is diffed without LibTorch, against its own interpreter.
                   if (!o->diff_record.empty() && is_trainer_record_file(o->diff_record))
                     return env_trainer_diff_command(*o);
                   if (!o->config.empty() || !o->python.empty())
                     throw BadUsage(std::string(o->config.empty() ? "env --python" : "env --config") +
                                    ": only with --diff of a team trainer's record");
                   if (!o->diff_record.empty() && is_smoke_config_file(o->diff_record))
                     throw BadUsage("env --diff " + o->diff_record + ": a smoke config, not a record; pass the "
                                    "smoke's golden (goldens/<smoke>/<platform>.json) or a run record");
                   return env_command(*o);
                 }});
}

// `history` and `history add`: the nightly ledgers.
void add_history_commands(CLI::App& app, std::vector<Command>& out) {
  using namespace lockstep;
  auto o = std::make_shared<HistoryOptions>();
  auto* history = app.add_subcommand("history", "The nightly ledgers read back: each metric's share of its tolerance "
                                                "night by night, change points, regressions and drifts (docs/history.md)");
  history->add_option("DIR", o->dir, "History folder (check --history DIR)");
  history->add_option("SMOKE", o->smoke, "Only this smoke's ledger");
  history->add_option("--json", o->json_out, "Also write the JSON report to this file");
  history->add_option("--html", o->html_out, "Also write the HTML page (trend plots, change points) to this file");
  history->add_flag("--skip-bad", o->skip_bad, "Leave out malformed ledger lines, naming each, instead of exit 2");
  auto a = std::make_shared<HistoryAddOptions>();
  auto* add = history->add_subcommand("add", "Enter records made elsewhere (run, import) into the ledgers, not compared");
  add->add_option("RECORD", a->records, "Run records")->required();
  add->add_option("--to", a->to, "History folder")->required();
  auto push = std::make_shared<HistorySyncOptions>(), pull = std::make_shared<HistorySyncOptions>();
  struct Sync {
    const char* name;
    std::shared_ptr<HistorySyncOptions> opts;
    const char* help;
  };
  for (const Sync& sync : {Sync{"push", push, "Commit the ledgers to a branch (not the work tree) and push it, merging "
                                              "the remote's entries"},
                           Sync{"pull", pull, "Fetch the branch's ledgers into the folder, merged with its own"}}) {
    auto* sub = history->add_subcommand(sync.name, sync.help);
    std::shared_ptr<HistorySyncOptions> opts = sync.opts;
    sub->add_option("DIR", opts->dir, "History folder")->required();
    sub->add_option("--branch", opts->branch, "Branch")->capture_default_str();
    sub->add_option("--remote", opts->remote, "Remote name or URL")->capture_default_str();
    sub->add_option("--repo", opts->repo, "A path in the repository")->capture_default_str();
    bool is_push = std::string(sync.name) == "push";
    out.push_back({sub, [opts, is_push] { return is_push ? history_push_command(*opts) : history_pull_command(*opts); }});
  }
  // The nested commands first: `history add` sets both.
  out.push_back({add, [a] { return history_add_command(*a); }});
  out.push_back({history, [o] {
                   if (o->dir.empty()) throw BadUsage("history: give the history folder (lockstep history DIR)");
                   return history_command(*o);
                 }});
}

// The groups of `lockstep --help`, as git groups its commands: what gates
// a change, what investigates one, what produces records, what sets a
// repository up. Every leaf command is in one (tests/cli/help_test.cpp).
void set_help_groups(CLI::App& app) {
  static const std::pair<const char*, std::vector<const char*>> kGroups[] = {
      {"Gate a change", {"check", "bless", "review", "accept", "verify-goldens", "selftest"}},
      {"Investigate", {"compare", "bisect", "bisect-env", "calibrate", "history", "env"}},
      {"Produce records", {"run", "probe", "import"}},
      {"Set up", {"init", "hook"}}};
  for (const auto& [group, names] : kGroups)
    for (const char* name : names) app.get_subcommand(name)->group(group);
}

}  // namespace

int main(int argc, char** argv) {
  using namespace lockstep;
  remember_command_line(argc, argv);
  say_when_stopped_by_a_signal();
  CLI::App app{"lockstep: determinism regression checker for LibTorch training stacks"};
  app.formatter(std::make_shared<HelpFormatter>());  // before the subcommands, which copy it
  app.set_version_flag("--version", std::string("lockstep ") + LOCKSTEP_VERSION);
  app.require_subcommand(1);
  std::vector<Command> commands;
  // `lockstep --help` lists the commands by what they are for, gate first.
  add_check_family(app, commands);
  add_golden_commands(app, commands);
  add_run_and_probe(app, commands);
  add_compare_and_import(app, commands);
  add_setup_commands(app, commands);
  add_history_commands(app, commands);
  set_help_groups(app);
  refuse_empty_values(app);

  const std::vector<std::string> args(argv + 1, argv + argc);
  if (std::string empty = empty_assignment(args); !empty.empty()) {
    std::cerr << "lockstep: error: " << empty << "\n";
    return to_int(ExitCode::kBadInput);
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help / --version exit 0; every usage error is exit 2 (README.md, "Exit codes").
    if (e.get_exit_code() == 0) return app.exit(e);
    // A mistyped command or flag is the whole error: one line naming it and
    // its closest spelling, not CLI11's list of the words it did not expect.
    std::string said = misspelling_hint(app, args);
    if (said.empty()) said = usage_error_said(app, args, e);
    if (said.empty()) {
      app.exit(e);
    } else {
      std::cerr << "lockstep: error: " << said << "\n";
    }
    return to_int(ExitCode::kBadInput);
  }

  try {
    refuse_doubled_spellings();
    stack_label();  // a malformed LOCKSTEP_STACK is refused before any run, not after one
    for (const auto& c : commands)
      if (*c.app) return finish_command(c.action());
  } catch (const Error& e) {
    std::cerr << "lockstep: error: " << e.what() << "\n";
    return to_int(e.code());
  } catch (const std::exception& e) {
    // Anything unexpected is the tool's or the runner's fault, not a regression.
    std::cerr << "lockstep: internal error: " << e.what() << "\n";
    return to_int(ExitCode::kEnvironment);
  }
  return to_int(ExitCode::kBadInput);
}
