#include "plan/run_flags.h"

#include <type_traits>

#include "core/float_bits.h"

namespace lockstep {

std::string RunFlag::name() const {
  const std::string all = names_;
  return all.substr(all.rfind(',') + 1);
}

namespace {

using R = RunRequest;
using O = RunOverrides;

// A value as a child's command line says it.
template <class T>
std::string text(const T& value) {
  if constexpr (std::is_same_v<T, std::string>) return value;
  else if constexpr (std::is_same_v<T, double>) return format_double(value);
  else return std::to_string(value);
}

// Which run: the lane, the record, what is said.
std::vector<RunFlag> what_runs() {
  return {
      RunFlag("--variant",
              "Run the smoke's equivalence lane NAME (its \"equivalence\" section) instead of the base run",
              &R::variant)
          .not_empty("a lane's name, not empty"),
      // check's later lanes of a built-in smoke, in this same process; an
      // empty name is refused by plan_run, in words.
      RunFlag("--then-variant", "Then run lane NAME in this process, into variant-NAME.json beside the record",
              &R::then_variants)
          .hidden(),
      RunFlag("--record", "Record path (default lockstep-out/<smoke>.run.json; probe: <smoke>.probe.json)", &R::out)
          .not_empty("a file path for the record, not empty")
          .deprecated("--out", "FILE"),
      RunFlag("-q,--quiet", "Print nothing on success", &R::quiet),
  };
}

// The config's values overridden for this run (check passes the first
// three on to its runs), and the planted changes.
std::vector<RunFlag> overrides() {
  return {
      RunFlag("--intra-op-threads",
              "Override the config's intra-op thread count (recorded: thread counts are a stack axis, so a golden "
              "made with another count is compared under the smoke's tolerances)",
              &O::intra_op_threads)
          .range(1, 1024),
      RunFlag("--workers",
              "Override data.workers of a built-in smoke (batches must not change; a trainer smoke's workers are "
              "its own: refused)",
              &O::workers)
          .range(0, 64),
      RunFlag("--world-size",
              "Override distributed.world_size of a multi-rank smoke (recorded in the contract; run refuses a "
              "single-process smoke, check leaves it as it is)",
              &O::world_size)
          .range(1, 64),
      RunFlag("--lr-scale",
              "Multiply the learning rate by F: a planted change, to see what the gate catches (recorded as an "
              "input: a golden fails it); a trainer takes part through LOCKSTEP_LR_SCALE",
              &O::lr_scale)
          .run_only()
          .range(1e-6, 1e6)
          .excludes("--resume")
          .excludes("--stop-after"),
      RunFlag("--perturb",
              "A planted change, as `lockstep selftest` makes it (recorded as an input): parameter moves the "
              "model's first parameter by one ULP before step 0 (a trainer: LOCKSTEP_PERTURB and the helper's "
              "ModuleTracer); data moves the first sample of the data-only pass's first batch by one ULP (a "
              "trainer: the helper's ctx.register_loader)",
              &O::perturb)
          .run_only()
          .choices({"parameter", "data"})
          .excludes("--resume")
          .excludes("--stop-after"),
      RunFlag("--determinism",
              "strict or default: the determinism contract's mode instead of the config's (recorded in the "
              "contract: a golden of the other mode fails it)",
              &O::mode)
          .run_only()
          .choices({"strict", "default"}),
  };
}

// How much runs, how often, and where: repeats, the span, ranks, machines.
std::vector<RunFlag> span_and_site() {
  return {
      RunFlag("--repeat",
              "Run N fresh processes and require bit-identical records (exit 4 naming the first step, metric and "
              "parameter that differ)",
              &R::repeat)
          .run_only()
          .range(1, 100),
      RunFlag("--stop-after", "Checkpoint after K steps and stop (no record); see --resume", &R::stop_after)
          .run_only()
          .range(1, 1000000)
          .needs("--checkpoint"),
      RunFlag("--checkpoint", "Checkpoint file for --stop-after", &R::checkpoint).run_only().needs("--stop-after"),
      RunFlag("--resume", "Continue from a --stop-after checkpoint to the end", &R::resume)
          .run_only()
          .excludes("--stop-after"),
      RunFlag("--no-data-pass",
              "A trainer smoke's training pass alone, without the data-only pass beside it; the record has no "
              "data-only probes (check and bless run it so for every run after the first, which takes the "
              "first's)",
              &R::data_pass)
          .run_only(),
      // A test hook: proves the resume check catches generators left unrestored.
      RunFlag("--skip-generator-restore", "With --resume: leave the generators unrestored",
              &R::skip_generator_restore)
          .run_only()
          .hidden()
          .needs("--resume"),
      // One rank of a multi-rank smoke, started by the coordinator
      // (distributed/rank_launch.h). One without the other is refused by
      // plan_run, in words.
      RunFlag("--rank", "This process is rank R of a distributed smoke", &R::rank).range(0, 63).hidden(),
      RunFlag("--rendezvous", "The run's rendezvous folder", &R::rendezvous).hidden(),
      // Several machines: one `lockstep run` per node, ranks split evenly.
      RunFlag("--nnodes",
              "Spread a multi-rank smoke's ranks over N machines (run the same command on each, with --node-rank "
              "and --master)",
              &R::nnodes)
          .range(1, 64),
      RunFlag("--node-rank", "This machine's place among --nnodes, 0..N-1 (node 0 writes the record)",
              &R::node_rank)
          .range(0, 63),
      RunFlag("--master",
              "HOST:PORT where node 0 serves the ranks' c10d TCPStore (default: MASTER_ADDR:MASTER_PORT)",
              &R::master),
  };
}

}  // namespace

const std::vector<RunFlag>& run_flags() {
  static const std::vector<RunFlag> kFlags = [] {
    std::vector<RunFlag> all = what_runs();
    for (auto group : {overrides, span_and_site})
      for (RunFlag& flag : group()) all.push_back(std::move(flag));
    return all;
  }();
  return kFlags;
}

std::vector<std::string> write_run_flag(const RunFlag& flag, const RunRequest& request) {
  RunRequest given = request, defaults;  // the accessors bind a RunRequest they may write
  const std::string name = flag.name();
  return std::visit(
      [&](const auto& field) -> std::vector<std::string> {
        const auto& value = field(given);
        using T = std::decay_t<decltype(value)>;
        if (value == field(defaults)) return {};
        if constexpr (std::is_same_v<T, bool>) return {name};
        else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
          std::vector<std::string> args;
          for (const std::string& word : value) args.insert(args.end(), {name, word});
          return args;
        } else return {name, text(value)};
      },
      flag.field_);
}

}  // namespace lockstep
