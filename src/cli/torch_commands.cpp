// What runs LibTorch in this process: the built-in smoke's RecordProducer
// (plan/record_producer.h; the run itself is run/smoke_run.h) and `env`.
// check and bless start `lockstep run` children through launch/launcher.h.
#include <sys/prctl.h>
#include <torch/torch.h>
#include <unistd.h>

#include <csignal>

#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>

#include "cli/commands.h"
#include "cli/progress_bar.h"
#include "cli/record_producers.h"
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
#include "compare/batch_sweep_report.h"
#include "run/batch_sweep.h"
#include "run/environment.h"
#include "run/smoke_run.h"
#include "smoke/golden_store.h"
#include "smoke/smoke_config.h"

namespace lockstep {
namespace fs = std::filesystem;

namespace {

// The built-in smoke in this process (run/smoke_run.h): one process, or
// one rank of the coordinator's group. The plan has checked every argument.
class BuiltinProducer : public RecordProducer {
 public:
  ProducedRun produce(const RunPlan& plan) override {
    const RunRequest& o = plan.request;
    const SmokeConfig& cfg = plan.config;
    SmokeRunOptions options;
    options.train = plan.train;
    options.resume = {o.stop_after, o.checkpoint, o.resume, !o.skip_generator_restore};
    if (plan.site == RunSite::kRank) join(plan, options);
    std::unique_ptr<ProgressBar> bar;
    options.on_probe = [&](int64_t done, int64_t total) {
      if (!bar) bar = std::make_unique<ProgressBar>("probe " + cfg.name, total);
      bar->update(done);
    };
    SmokeRun run = run_smoke(cfg, options);
    if (bar) bar->finish();
    ProducedRun out;
    if (run.stopped_at_checkpoint) {
      out.outcome = ProducedRun::Outcome::kStopped;
      out.who = "";
      out.checkpoint = o.checkpoint;
      return out;
    }
    // Rank 0 of a run on several machines: the other nodes' ranks' records,
    // beside the ones this node's ranks write (rank-<r>.json, as the
    // coordinator expects them).
    for (const auto& [r, json] : run.rank_records)
      write_file_atomically(o.rendezvous + "/rank-" + std::to_string(r) + ".json", json);
    out.notes = std::move(run.notes);
    out.record = std::move(run.record);
    if (!o.quiet && plan.train && out.record.train_probes.size() < static_cast<size_t>(cfg.steps))
      out.notes.push_back(std::to_string(out.record.train_probes.size()) + " batches trained");
    return out;
  }

 private:
  // One rank of the coordinator's group (--rank, --rendezvous).
  static void join(const RunPlan& plan, SmokeRunOptions& options) {
    const RunRequest& o = plan.request;
    // A rank never outlives its coordinator (a killed `lockstep run` or CI
    // job must not leave ranks waiting in a collective): the process
    // runner's watcher kills the rank's group when the coordinator dies
    // (core/process.h); this covers a rank started by hand.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() == 1) throw EnvironmentError("rank " + std::to_string(o.rank) + ": its coordinator is gone");
    options.rank.rank = o.rank;
    options.rank.world_size = plan.config.distributed.world_size;
    options.rank.rendezvous = o.rendezvous;
    if (o.nnodes > 1) {  // checked by the plan
      std::string error;
      options.rank.nnodes = o.nnodes;
      options.rank.master = parse_master_address(o.master, &error);
    }
  }
};

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

std::unique_ptr<RecordProducer> builtin_record_producer() { return std::make_unique<BuiltinProducer>(); }

int finish_command(int code) {
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  ::_exit(code);
}

int batch_sweep_command(const RunOptions& o, const BatchSweepOptions& sweep) {
  const SmokeConfig cfg = refuse_batch_sweep_of(o, sweep);
  if (cfg.has_trainer()) return trainer_batch_sweep_command(o, sweep, cfg);
  return report_batch_sweep(o, sweep, sweep_batch_invariance(cfg, sweep.timing));
}

int env_command(const EnvOptions& o) {
  EnvReport r = describe_environment({o.device, o.device_given, o.diff_record, fs::current_path().string()});
  const std::string& unusable = r.cuda_unusable;
  nlohmann::json doc = {{"platform", r.platform}};
  if (o.diff_record.empty()) {
    doc["fingerprint"] = to_json(r.fingerprint);
  } else {
    nlohmann::json arr = nlohmann::json::array();
    for (const auto& d : r.differences)
      arr.push_back({{"field", d.name}, {"record", d.golden}, {"here", d.run}, {"relevant", d.relevant}});
    doc["record_platform"] = r.record_platform;
    doc["differences"] = arr;
  }
  if (!unusable.empty()) doc["cuda_unusable"] = unusable;
  // --format json: stdout holds the JSON only; --json FILE: also that file.
  if (o.json) std::cout << pretty_dump(doc);
  if (!o.json_out.empty()) write_file_atomically(o.json_out, pretty_dump(doc));
  if (o.diff_record.empty()) {
    if (!o.json) {
      std::cout << "platform: " << printable_message(r.platform, false) << "\n";
      print_fingerprint(r.fingerprint);
    }
    if (!unusable.empty()) throw EnvironmentError("env --device cuda: CUDA is not usable: " + unusable);
    return 0;
  }
  if (!o.json) {
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
  }
  if (!unusable.empty())
    throw EnvironmentError("env --diff " + o.diff_record + ": a CUDA record, but CUDA is not usable here: " + unusable);
  write_env_pair(o, r.differences);
  return 0;
}

}  // namespace lockstep
