// The subcommands that run LibTorch in this process: run, probe, env.
// The run itself is run/smoke_run.h; check and bless start `lockstep run`
// children through launch/launcher.h.
#include <sys/prctl.h>
#include <torch/torch.h>
#include <unistd.h>

#include <csignal>

#include <charconv>
#include <cstdlib>
#include <filesystem>
#include <iostream>

#include "cli/commands.h"
#include "cli/progress_bar.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "core/float_bits.h"
#include "core/json_io.h"
#include "determinism/contract.h"
#include "env/cuda_preflight.h"
#include "env/fingerprint_capture.h"
#include "launch/launcher.h"
#include "record/golden.h"
#include "record/platform_key.h"
#include "run/environment.h"
#include "run/smoke_run.h"
#include "smoke/golden_store.h"
#include "smoke/smoke_config.h"

namespace lockstep {
namespace fs = std::filesystem;

namespace {

// Shared by run and probe: check the arguments, run the smoke in this
// process (run/smoke_run.h), write the record, print a summary.
int run_in_process(const RunOptions& o, bool train) {
  SmokeConfig cfg = with_overrides(load_smoke_config(o.smoke), o.overrides);
  refuse_overwriting_inputs(o.out, {o.smoke, cfg.data.resolved_path, o.resume});
  refuse_overwriting_inputs(o.checkpoint, {o.smoke, cfg.data.resolved_path});
  if (o.stop_after >= cfg.steps)
    throw BadUsage("--stop-after " + std::to_string(o.stop_after) + ": must be below the " +
                   std::to_string(cfg.steps) + " steps of " + o.smoke);
  // Only bless writes goldens: neither a record nor a checkpoint lands there.
  refuse_writing_into_goldens(o.out, o.smoke, "a run record");
  refuse_writing_into_goldens(o.checkpoint, o.smoke, "a checkpoint");

  std::error_code ec;
  if (!o.resume.empty() && fs::is_directory(o.resume, ec))
    throw BadInput(o.resume, "", std::string("a checkpoint file (") +
                                     (o.rank >= 0 ? "one rank's" : "this single-process smoke's") +
                                     "), got a folder (a multi-rank smoke's checkpoint?)");
  SmokeRunOptions options;
  options.train = train;
  options.resume = {o.stop_after, o.checkpoint, o.resume, !o.skip_generator_restore};
  if (o.rank >= 0) {
    if (!cfg.distributed.configured || o.rank >= cfg.distributed.world_size)
      throw BadUsage("--rank " + std::to_string(o.rank) + ": " + o.smoke + " has " +
                     (cfg.distributed.configured ? std::to_string(cfg.distributed.world_size) + " ranks"
                                                 : std::string("no distributed section")));
    if (o.rendezvous.empty() || !fs::is_directory(o.rendezvous, ec))
      throw BadUsage("--rendezvous '" + o.rendezvous + "': not a folder (rank processes are started by `lockstep "
                     "run` on a distributed smoke, which makes it)");
    // A rank never outlives its coordinator (a killed `lockstep run` or CI
    // job must not leave ranks waiting in a collective): the process
    // runner's watcher kills the rank's group when the coordinator dies
    // (core/process.h); this covers a rank started by hand.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() == 1) throw EnvironmentError("rank " + std::to_string(o.rank) + ": its coordinator is gone");
    options.rank.rank = o.rank;
    options.rank.world_size = cfg.distributed.world_size;
    options.rank.rendezvous = o.rendezvous;
    if (o.nnodes > 1) {  // the coordinator checked both (cli/run_command.cpp)
      std::string error;
      options.rank.nnodes = o.nnodes;
      options.rank.master = parse_master_address(o.master, &error);
      if (!error.empty()) throw BadUsage("--master: " + error);
    }
  }
  std::unique_ptr<ProgressBar> bar;
  options.on_probe = [&](int64_t done, int64_t total) {
    if (!bar) bar = std::make_unique<ProgressBar>("probe " + cfg.name, total);
    bar->update(done);
  };
  SmokeRun run = run_smoke(cfg, options);
  if (bar) bar->finish();
  if (run.stopped_at_checkpoint) {
    if (!o.quiet)
      std::cout << "run " << cfg.name << ": stopped after " << run.steps_done << " steps, checkpoint "
                << o.checkpoint << " (continue with --resume)\n";
    return 0;
  }
  const RunRecord& rec = run.record;
  // Rank 0 of a run on several machines: the other nodes' ranks' records,
  // beside the ones this node's ranks write (rank-<r>.json, as the
  // coordinator expects them).
  for (const auto& [r, json] : run.rank_records)
    write_file_atomically(o.rendezvous + "/rank-" + std::to_string(r) + ".json", json);
  // A rank's notes go to its log (<rendezvous>/rank-<r>.stdout.log), --quiet or not.
  if (!o.quiet || o.rank >= 0)
    for (const auto& n : run.notes) std::cout << "note: " << n << "\n";
  std::string out = o.out.empty() ? "lockstep-out/" + cfg.name + (train ? ".run.json" : ".probe.json") : o.out;
  write_run_record(out, rec);
  if (!o.quiet && train && rec.train_probes.size() < static_cast<size_t>(cfg.steps))
    std::cout << "note: " << rec.train_probes.size() << " batches trained\n";
  if (!o.quiet) {
    std::cout << (train ? "run " : "probe ") << cfg.name << ": " << rec.probes.size() << " batches probed";
    if (train)
      std::cout << ", " << cfg.steps << " steps, loss " << format_double(rec.series.at("loss").values.front())
                << " -> " << format_double(rec.series.at("loss").values.back());
    std::cout << "\n  platform " << rec.platform << ", record " << out << "\n";
  }
  return 0;
}

void print_fingerprint(const Fingerprint& fp) {
  size_t width = 0;
  for (const auto& [k, _] : fp) width = std::max(width, k.size());
  for (int relevant = 1; relevant >= 0; --relevant) {
    std::cout << (relevant ? "determinism-relevant:\n" : "informational:\n");
    for (const auto& [k, f] : fp)
      if (f.relevant == static_cast<bool>(relevant))
        std::cout << "  " << k << std::string(width + 2 - k.size(), ' ') << f.value << "\n";
  }
}

}  // namespace

int run_builtin(const RunOptions& o, bool train) { return run_in_process(o, train); }

int env_command(const EnvOptions& o) {
  EnvReport r = describe_environment({o.device, o.device_given, o.diff_record, fs::current_path().string()});
  const std::string& unusable = r.cuda_unusable;
  if (o.diff_record.empty()) {
    if (o.json) {
      nlohmann::json out = {{"platform", r.platform}, {"fingerprint", to_json(r.fingerprint)}};
      if (!unusable.empty()) out["cuda_unusable"] = unusable;
      std::cout << pretty_dump(out);
    } else {
      std::cout << "platform: " << printable_message(r.platform, false) << "\n";
      print_fingerprint(r.fingerprint);
    }
    if (!unusable.empty()) throw EnvironmentError("env --device cuda: CUDA is not usable: " + unusable);
    return 0;
  }
  if (o.json) {
    nlohmann::json arr = nlohmann::json::array();
    for (const auto& d : r.differences)
      arr.push_back({{"field", d.name}, {"record", d.golden}, {"here", d.run}, {"relevant", d.relevant}});
    nlohmann::json out = {{"platform", r.platform}, {"record_platform", r.record_platform}, {"differences", arr}};
    if (!unusable.empty()) out["cuda_unusable"] = unusable;
    std::cout << pretty_dump(out);
    if (!unusable.empty())
      throw EnvironmentError("env --diff " + o.diff_record + ": a CUDA record, but CUDA is not usable here: " + unusable);
    return 0;
  }
  std::cout << "platform here: " << r.platform << ", in " << o.diff_record << ": "
            << printable_message(r.record_platform, false) << "\n";
  size_t relevant = 0;
  for (const auto& d : r.differences) relevant += d.relevant ? 1 : 0;
  std::cout << r.differences.size() << " difference(s), " << relevant
            << " determinism-relevant (*: a check against this record would use the cross-stack lane)\n";
  for (const auto& d : r.differences)
    // A record's strings are data: control characters are escaped, never
    // sent to the terminal.
    std::cout << (d.relevant ? "* " : "  ") << printable_message(d.name, false)
              << "\n      record: " << printable_message(d.golden, false)
              << "\n      here:   " << printable_message(d.run, false) << "\n";
  if (!unusable.empty())
    throw EnvironmentError("env --diff " + o.diff_record + ": a CUDA record, but CUDA is not usable here: " + unusable);
  return 0;
}

}  // namespace lockstep
