// `lockstep run` and `lockstep probe`, one path for every smoke: decide a
// RunPlan (plan/run_plan.h: every refusal, every default path), ask the
// producer for its site (cli/record_producers.h: the built-in trainer in
// lockstep-torch, the team's trainer, the rank coordinator) and print one
// summary; `run --repeat N` asks the launcher (launch/launcher.h) for N
// fresh child runs instead, each of which takes this path again.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <functional>

#include "cli/commands.h"
#include "cli/record_producers.h"
#include "cli/smoke_launcher.h"
#include "compare/batch_sweep_report.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "core/float_bits.h"
#include "core/json_io.h"
#include "core/process.h"
#include "core/temp_folder.h"
#include "external/trainer_batch_sweep.h"
#include "launch/launcher.h"
#include "plan/run_plan.h"
#include "smoke/golden_store.h"
#include "smoke/smoke_config.h"

namespace lockstep {
namespace fs = std::filesystem;

namespace {

// `run --repeat N`: N fresh processes, the first record kept as plan.out.
int run_repeated(const RunPlan& plan, Launcher& launcher) {
  const RunRequest& o = plan.request;
  fs::path out(plan.out);
  std::string prefix = out.stem().string() + ".repeat";
  std::string dir = out.parent_path().empty() ? "." : out.parent_path().string();
  // Each child is this request (its lane, overrides, seed, ...) run once,
  // quietly, into its own record.
  ChildRun base;
  static_cast<RunRequest&>(base) = o;
  base.repeat = 1;
  base.quiet = true;
  base.share_data_pass = shares_data_pass(plan.config);
  std::vector<RunRecord> runs = run_children(launcher, base, dir, prefix, plan.repeat);
  auto [index, diff] = first_repeat_difference(runs);
  if (!diff.empty()) {
    std::cout << "run " << plan.config.name << ": NONDETERMINISTIC (exit 4): run " << index + 1
              << " differs from run 1; first difference: " << diff << "\n  records: " << dir << "/" << prefix
              << "-1.json, " << dir << "/" << prefix << "-" << index + 1 << ".json\n";
    return to_int(ExitCode::kNondeterministic);
  }
  write_run_record(plan.out, runs.front());
  if (!o.quiet)
    std::cout << "run " << plan.config.name << ": " << plan.repeat
              << " runs in fresh processes are bit-identical\n  record " << plan.out << "\n";
  return 0;
}

// Writes the record a producer made and prints the one summary:
//   run digits-cnn: 64 batches probed, 10 steps, loss 2.30 -> 1.95
//     platform cpu-x86_64-avx2, record lockstep-out/digits-cnn.run.json
// A rank's notes go to its log (<rendezvous>/rank-<r>.stdout.log), --quiet or not.
int report_run(const RunPlan& plan, const ProducedRun& run) {
  const RunRequest& o = plan.request;
  const std::string& name = plan.config.name;
  if (run.outcome == ProducedRun::Outcome::kStopped) {
    if (!o.quiet)
      std::cout << "run " << name << ": " << run.who << "stopped after " << o.stop_after << " steps, checkpoint "
                << run.checkpoint << " (continue with --resume)\n";
    return 0;
  }
  if (run.outcome == ProducedRun::Outcome::kElsewhere) {
    if (!o.quiet) std::cout << plan.verb() << " " << name << run.who << "\n  logs " << run.logs << "\n";
    return 0;
  }
  const RunRecord& rec = run.record;
  write_run_record(plan.out, rec);
  if (!o.quiet || plan.site == RunSite::kRank)
    for (const auto& n : run.notes) std::cout << "note: " << n << "\n";
  if (o.quiet) return 0;
  std::cout << plan.verb() << " " << name << (o.variant.empty() ? "" : " (equivalence lane " + o.variant + ")")
            << run.who << rec.probes.size() << " batches probed";
  auto loss = rec.series.find("loss");
  if (plan.train && loss != rec.series.end() && !loss->second.values.empty())
    std::cout << ", " << plan.config.steps << " steps, " << run.loss_label << " "
              << format_double(loss->second.values.front()) << " -> " << format_double(loss->second.values.back())
              << run.after_loss;
  std::cout << "\n  platform " << rec.platform << ", record " << plan.out << "\n";
  const RunOverrides& planted = plan.request.overrides;
  if (!planted.perturb.empty() || planted.lr_scale != 1)  // recorded as inputs: a golden fails this run
    std::cout << "  planted change: "
              << (planted.perturb.empty() ? "" : "--perturb " + planted.perturb + (planted.lr_scale != 1 ? " " : ""))
              << (planted.lr_scale != 1 ? "--lr-scale " + format_double(planted.lr_scale) : "")
              << " (an input of the record: a golden fails it as one)\n";
  if (!plan.config.vary.empty())  // the values drawn here are in the record too (vary.*)
    std::cout << "  varied: " << describe_variation(plan.config.vary) << " (--vary " << variation_spec(plan.config.vary)
              << ")\n";
  return 0;
}

// `run --vary`: what this process applies to itself before the run, so
// every process it starts (lockstep-torch, the ranks, the trainer) inherits
// it: the CPUs it may run on, MALLOC_PERTURB_ (read by each child's malloc
// at its start). The heap hole and the thread pools are made where the
// run is (run/smoke_run.cpp, the Python helper); the environment's order
// where each process is started (spec/run_variation.h).
// Nothing here allocates when the process already is as asked (lockstep-torch
// after the front set it all up): the heap of a varied run stays the plain
// run's but for the variation.
void apply_process_variation(const RunVariation& v, bool from_flag) {
  if (v.affinity.any() && allowed_cpus_mask() != v.affinity) pin_this_process(v.affinity);
  if (v.malloc_perturb > 0) {
    const char* now = std::getenv("MALLOC_PERTURB_");
    char value[8];
    std::snprintf(value, sizeof value, "%d", v.malloc_perturb);
    if (!now || std::strcmp(now, value) != 0) ::setenv("MALLOC_PERTURB_", value, 1);
  }
  // The variation as resolved here (a kind given without its value drew
  // one) is what every process this one starts applies and records.
  if (from_flag) ::setenv(kVaryVariable, variation_spec(v).c_str(), 1);
}

// check's lanes of a built-in smoke in this one LibTorch: lane
// `o.variant`, then each of o.then_variants (plan_then_variant), every
// lane planned before the first one runs. An error is led by the lane it
// came from ("lane NAME: ...").
int run_lanes_here(const RunOptions& o, bool train) {
  std::vector<RunPlan> plans;
  auto for_lane = [](const std::string& name, const std::function<void()>& step) {
    try {
      step();
    } catch (const Error& e) {
      if (name.empty()) throw;
      throw Error(e.code(), "lane " + name + ": " + e.what());
    }
  };
  for (size_t i = 0; i <= o.then_variants.size(); ++i) {
    const std::string& name = i == 0 ? o.variant : o.then_variants[i - 1];
    for_lane(name, [&] {
      const SmokeConfig loaded = load_smoke_config(o.smoke, name);
      plans.push_back(plans.empty() ? plan_run(loaded, o, train) : plan_then_variant(plans.front(), loaded, name));
    });
  }
  for (const RunPlan& plan : plans)
    for_lane(plan.request.variant, [&] { report_run(plan, make_record_producer(plan)->produce(plan)); });
  return 0;
}

// `repeats`: the launcher of `run --repeat`'s fresh runs.
int run_or_probe(const RunOptions& given, bool train, Launcher& repeats) {
  std::error_code ec;
  if (fs::is_directory(given.smoke, ec))
    throw BadUsage(given.smoke + ": a folder; `lockstep " + (train ? "run" : "probe") +
                   "` takes one smoke config file (`lockstep check " + given.smoke + "` checks every smoke in it)");
  // A varied run started by check, bless or the front: $LOCKSTEP_VARY
  // (plan/run_plan.h), every value written out.
  RunOptions o = given;
  const bool from_flag = !o.overrides.vary.empty();
  if (const char* env = std::getenv(kVaryVariable); !from_flag && env && *env) {
    std::mt19937_64 unused;  // every value is written out: nothing drawn
    o.overrides.vary = parse_variation(env, unused, allowed_cpus_mask(), kVaryVariable);
  }
  if (!o.then_variants.empty()) return run_lanes_here(o, train);
  RunPlan plan = plan_run(load_smoke_config(o.smoke, o.variant), o, train);
  apply_process_variation(plan.config.vary, from_flag);
  if (plan.repeat > 1) return run_repeated(plan, repeats);
  return report_run(plan, make_record_producer(plan)->produce(plan));
}

}  // namespace

SmokeConfig refuse_batch_sweep_of(const RunOptions& o, const BatchSweepOptions& sweep) {
  std::error_code ec;
  if (fs::is_directory(o.smoke, ec))
    throw BadUsage(o.smoke + ": a folder; `lockstep probe --batch-sweep` takes one smoke config file");
  if (!o.out.empty())
    throw BadUsage("--record: --batch-sweep writes no record (--json FILE writes the sweep as JSON)");
  if (o.rank >= 0 || o.nnodes > 1 || o.node_rank >= 0 || !o.master.empty() || !o.rendezvous.empty())
    throw BadUsage("--batch-sweep: one process on one machine (no --rank, --rendezvous, --nnodes, --node-rank, "
                   "--master)");
  if (o.overrides.world_size > 0)
    throw BadUsage("--world-size: --batch-sweep forwards one process's first batch (data.batch_size samples); the "
                   "world size changes nothing it does");
  SmokeConfig cfg = with_overrides(load_smoke_config(o.smoke, o.variant), o.overrides);
  if (cfg.has_trainer() && sweep.timing)
    throw BadUsage("--batch-sweep-timing: the bench's timing of a built-in smoke's model");
  if (!sweep.json_out.empty()) {
    // Never over an input (the config, its data, a model, a trainer's
    // script or declared files) nor any file but an earlier sweep's JSON.
    std::vector<std::string> inputs = {o.smoke, cfg.data.resolved_path, cfg.model.path};
    for (const auto& a : cfg.trainer.command) inputs.push_back(a);
    require_report_file("--json", sweep.json_out, "\"forward_s\"", inputs, "");
    refuse_writing_into_goldens(sweep.json_out, o.smoke, "the sweep's JSON");
  }
  return cfg;
}

int report_batch_sweep(const RunOptions& o, const BatchSweepOptions& sweep, const BatchSweep& s) {
  if (!sweep.json_out.empty()) write_file_atomically(sweep.json_out, pretty_dump(batch_sweep_json(s)));
  if (!o.quiet || !s.invariant()) std::cout << render_batch_sweep(s);  // --quiet: nothing on success
  return s.invariant() ? 0 : to_int(ExitCode::kRegression);
}

int trainer_batch_sweep_command(const RunOptions& o, const BatchSweepOptions& sweep, const SmokeConfig& cfg) {
  // The trainer's folder lives as long as the sweep when it succeeds (what
  // the trainer wrote besides it is of no use); a failure keeps it, for
  // the stderr log its message names.
  TempFolder dir("lockstep-batch-sweep");
  try {
    return report_batch_sweep(o, sweep, sweep_trainer_batch_invariance(cfg, dir.path()));
  } catch (...) {
    dir.keep();
    throw;
  }
}

int run_command(const RunOptions& o) {
  SmokeLauncher launcher;  // trainer smokes in this process, built-in ones in `lockstep run`
  return run_command(o, launcher);
}

int run_command(const RunOptions& o, Launcher& repeats) { return run_or_probe(o, /*train=*/true, repeats); }

int probe_command(const RunOptions& o) {
  SmokeLauncher unused;  // probe has no --repeat
  return run_or_probe(o, /*train=*/false, unused);
}

}  // namespace lockstep
