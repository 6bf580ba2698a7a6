// `lockstep run` and `lockstep probe`: a built-in smoke runs in this
// process (cli/torch_commands.cpp, LibTorch), a smoke with a "trainer"
// section runs the team's own trainer (external/trainer_run.h, no
// LibTorch needed); `run --repeat N` starts N fresh `lockstep run`
// processes either way (launch/launcher.h).
#include <netdb.h>
#include <sys/socket.h>
#include <sys/types.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>

#include "cli/commands.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "core/float_bits.h"
#include "core/install_paths.h"
#include "distributed/rank_checkpoint.h"
#include "distributed/rank_launch.h"
#include "distributed/rank_records.h"
#include "external/trainer_run.h"
#include "cli/smoke_launcher.h"
#include "launch/launcher.h"
#include "smoke/golden_store.h"
#include "smoke/smoke_config.h"

namespace lockstep {
namespace fs = std::filesystem;

namespace {

// A checkpoint's files are CK, CK/..., CK.partial, CK.rank-<r>,
// CK.lockstep-part.json; a record's are OUT and OUT.ranks/OUT.trainer. The
// two never share a path, so neither may be the other or start with it
// followed by "/" or ".".
void refuse_overlap(const std::string& out, const std::string& checkpoint, const char* flag) {
  if (checkpoint.empty()) return;
  auto norm = [](const std::string& p) {
    std::error_code ec;  // links resolved: "L/ck" is "ck" when L links to "."
    fs::path resolved = fs::weakly_canonical(fs::absolute(p), ec);
    std::string s = (ec ? fs::absolute(p).lexically_normal() : resolved).string();
    while (s.size() > 1 && s.back() == '/') s.pop_back();
    return s;
  };
  std::string a = norm(out), b = norm(checkpoint);
  auto under = [](const std::string& x, const std::string& y) {
    return x == y || (x.size() > y.size() && x.compare(0, y.size(), y) == 0 && (x[y.size()] == '/' || x[y.size()] == '.'));
  };
  if (under(a, b) || under(b, a))
    throw BadUsage("--out " + out + " and " + flag + " " + checkpoint + ": the record (and its " + out +
                   ".ranks or .trainer folder) and the checkpoint's files (" + checkpoint + ", " + checkpoint +
                   ".*) would share paths; give them names that do not start with each other");
}

// Where a trainer or multi-rank run writes: never into the goldens, and
// the record never among the checkpoint's files.
void refuse_unsafe_outputs(const std::string& out, const RunOptions& o) {
  refuse_writing_into_goldens(out, o.smoke, "a run record");
  refuse_writing_into_goldens(o.checkpoint, o.smoke, "a checkpoint");
  refuse_overlap(out, o.checkpoint, "--checkpoint");
  refuse_overlap(out, o.resume, "--resume");
}

// `run --repeat N`: N fresh processes, the first record kept as --out.
int run_repeated(const RunOptions& o) {
  SmokeConfig cfg = load_smoke_config(o.smoke);
  fs::path out = o.out.empty() ? fs::path("lockstep-out") / (cfg.name + ".run.json") : fs::path(o.out);
  refuse_overwriting_inputs(out.string(), {o.smoke});
  refuse_writing_into_goldens(out.string(), o.smoke, "a run record");
  std::string prefix = out.stem().string() + ".repeat";
  std::string dir = out.parent_path().empty() ? "." : out.parent_path().string();
  ChildRun base;
  base.config = o.smoke;
  base.overrides = o.overrides;
  SmokeLauncher launcher;  // trainer smokes in this process, built-in ones in `lockstep run`
  std::vector<RunRecord> runs = run_children(launcher, base, dir, prefix, o.repeat);
  auto [index, diff] = first_repeat_difference(runs);
  if (!diff.empty()) {
    std::cout << "run " << cfg.name << ": NONDETERMINISTIC (exit 4): run " << index + 1
              << " differs from run 1; first difference: " << diff << "\n  records: " << dir << "/" << prefix
              << "-1.json, " << dir << "/" << prefix << "-" << index + 1 << ".json\n";
    return to_int(ExitCode::kNondeterministic);
  }
  write_run_record(out.string(), runs.front());
  if (!o.quiet)
    std::cout << "run " << cfg.name << ": " << o.repeat << " runs in fresh processes are bit-identical\n  record "
              << out.string() << "\n";
  return 0;
}

// A trainer smoke: the command in fresh processes, its outputs read into a record.
int run_trainer_smoke(const RunOptions& o, const SmokeConfig& cfg, bool train) {
  if (o.overrides.workers >= 0)
    throw BadUsage("--workers: a trainer smoke's DataLoader workers are the trainer's own (its command; "
                   "trainer.workers with a {workers} placeholder runs the data-only pass at several counts)");
  if (o.stop_after >= cfg.steps)
    throw BadUsage("--stop-after " + std::to_string(o.stop_after) + ": must be below the " +
                   std::to_string(cfg.steps) + " steps of " + o.smoke);
  std::string out = o.out.empty() ? "lockstep-out/" + cfg.name + (train ? ".run.json" : ".probe.json") : o.out;
  refuse_overwriting_inputs(out, {o.smoke, o.resume});
  refuse_unsafe_outputs(out, o);
  TrainerRunOptions options;
  options.work_dir = out + ".trainer";
  options.train = train;
  options.stop_after = o.stop_after;
  options.checkpoint = o.checkpoint;
  options.resume = o.resume;
  TrainerRun run = run_trainer(cfg, options);
  if (run.stopped_at_checkpoint) {
    if (!o.quiet)
      std::cout << "run " << cfg.name << ": the trainer stopped after " << o.stop_after << " steps, checkpoint "
                << o.checkpoint << " (continue with --resume)\n";
    return 0;
  }
  const RunRecord& rec = run.record;
  write_run_record(out, rec);
  if (!o.quiet) {
    for (const auto& n : run.notes) std::cout << "note: " << n << "\n";
    std::cout << (train ? "run " : "probe ") << cfg.name << " (trainer `" << cfg.trainer.command.front() << "`"
              << (cfg.distributed.configured ? ", " + std::to_string(cfg.distributed.world_size) + " ranks" : "")
              << "): " << rec.probes.size() << " batches probed";
    auto loss = rec.series.find("loss");
    if (train && loss != rec.series.end() && !loss->second.values.empty())
      std::cout << ", " << cfg.steps << " steps, loss " << format_double(loss->second.values.front()) << " -> "
                << format_double(loss->second.values.back());
    std::cout << "\n  platform " << rec.platform << ", record " << out << "\n";
  }
  return 0;
}

// --nnodes, --node-rank and --master, checked and resolved: node 0's
// address from --master, else MASTER_ADDR and MASTER_PORT (torchrun's).
// Exit 2 for anything that cannot be one node of a run on several machines.
MasterAddress several_machines(const RunOptions& o, const SmokeConfig& cfg) {
  if (o.nnodes <= 1) {
    if (o.node_rank >= 0 || !o.master.empty())
      throw BadUsage(std::string(o.node_rank >= 0 ? "--node-rank" : "--master") +
                     ": only with --nnodes N > 1 (the ranks of a run on several machines)");
    return {};
  }
  std::string flag = "--nnodes " + std::to_string(o.nnodes);
  if (cfg.has_trainer())
    throw BadUsage(flag + ": " + o.smoke + " runs a team's trainer; spreading its ranks over machines is its own "
                   "launcher's job (torchrun), not yet lockstep's: run it on one machine");
  if (!cfg.distributed.configured)
    throw BadUsage(flag + ": " + o.smoke + " has no \"distributed\" section (a single-process smoke runs on one machine)");
  if (o.repeat > 1 || o.stop_after > 0 || !o.resume.empty())
    throw BadUsage(flag + ": --repeat, --stop-after and --resume run on one machine only (run them there)");
  if (o.node_rank < 0)
    throw BadUsage(flag + ": --node-rank K is required (0 on the machine that serves the store and writes the record)");
  if (o.node_rank >= o.nnodes)
    throw BadUsage("--node-rank " + std::to_string(o.node_rank) + ": must be below --nnodes " + std::to_string(o.nnodes));
  int w = cfg.distributed.world_size;
  if (w % o.nnodes != 0)
    throw BadUsage(flag + ": the " + std::to_string(w) + " ranks of " + o.smoke +
                   " (distributed.world_size or --world-size) do not split evenly over " + std::to_string(o.nnodes) +
                   " machines");
  std::string text = o.master, source = "--master";
  if (text.empty()) {
    const char* addr = std::getenv("MASTER_ADDR");
    const char* port = std::getenv("MASTER_PORT");
    if (!addr || !port || !*addr || !*port)
      throw BadUsage(flag + ": node 0's address is needed: --master HOST:PORT, or MASTER_ADDR and MASTER_PORT");
    text = std::string(addr) + ":" + port;
    source = "MASTER_ADDR:MASTER_PORT";
  }
  std::string error;
  MasterAddress m = parse_master_address(text, &error);
  if (!m.set()) throw BadUsage(source + ": " + error);
  // A name no node can resolve would only show as a timeout.
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  int rc = ::getaddrinfo(m.host.c_str(), nullptr, &hints, &found);
  if (found) ::freeaddrinfo(found);
  if (rc == EAI_NONAME || rc == EAI_FAIL)
    throw BadUsage(source + ": '" + m.host + "' does not resolve on this machine (" + ::gai_strerror(rc) + ")");
  if (rc != 0)
    throw EnvironmentError(source + ": cannot resolve '" + m.host + "' now (" + ::gai_strerror(rc) + ")");
  return m;
}

// A multi-rank built-in smoke: world_size fresh rank processes
// (distributed/rank_launch.h), their records merged into one
// (distributed/rank_records.h).
int run_distributed(const RunOptions& o, const SmokeConfig& cfg, bool train, const MasterAddress& master) {
  if (o.stop_after >= cfg.steps)
    throw BadUsage("--stop-after " + std::to_string(o.stop_after) + ": must be below the " +
                   std::to_string(cfg.steps) + " steps of " + o.smoke);
  // Node K > 0 writes no record, only its ranks' logs: by default they go
  // beside node 0's, so both nodes can share one folder (two shells on one
  // machine, or a shared file system).
  std::string node = master.set() && o.node_rank > 0 ? ".node-" + std::to_string(o.node_rank) : "";
  std::string out =
      o.out.empty() ? "lockstep-out/" + cfg.name + node + (train ? ".run.json" : ".probe.json") : o.out;
  refuse_overwriting_inputs(out, {o.smoke, cfg.data.resolved_path, o.resume});
  refuse_overwriting_inputs(o.checkpoint, {o.smoke, cfg.data.resolved_path, out});
  refuse_unsafe_outputs(out, o);
  std::error_code ec;
  if (fs::exists(fs::symlink_status(out, ec)) && !fs::is_regular_file(fs::symlink_status(out, ec)))
    throw BadUsage(out + ": refusing to write the record over something that is not a regular file");
  RankLaunch l;
  l.executable = sibling_executable("lockstep-torch");
  l.args = {train ? "run" : "probe", o.smoke};
  for (auto& a : override_args(o.overrides)) l.args.push_back(std::move(a));
  l.rendezvous = out + ".ranks";
  l.world_size = cfg.distributed.world_size;
  l.timeout_s = cfg.distributed.timeout_s;
  l.smoke = cfg.name;
  if (master.set()) {
    l.nnodes = o.nnodes;
    l.node_rank = o.node_rank;
    l.master = master.describe();
  }
  // A checkpoint is a folder of one file per rank (distributed/rank_checkpoint.h).
  if (o.stop_after > 0) {
    RankCheckpointWriter checkpoint(o.checkpoint, {cfg.name, l.world_size, o.stop_after});
    for (int r = 0; r < l.world_size; ++r)
      l.rank_args.push_back({"--stop-after", std::to_string(o.stop_after), "--checkpoint", checkpoint.rank_file(r)});
    run_ranks(l);
    checkpoint.commit();
    fs::remove_all(l.rendezvous, ec);  // no record to keep beside: the logs of a stop that succeeded
    if (!o.quiet)
      std::cout << "run " << cfg.name << ": " << l.world_size << " ranks stopped after " << o.stop_after
                << " steps, checkpoint " << checkpoint.dir() << " (continue with --resume)\n";
    return 0;
  }
  if (!o.resume.empty())
    for (const auto& file : open_rank_checkpoint(o.resume, cfg.name, l.world_size)) {
      l.rank_args.push_back({"--resume", file});
      if (o.skip_generator_restore) l.rank_args.back().push_back("--skip-generator-restore");
    }
  std::vector<std::string> paths = run_ranks(l);
  if (l.node_rank > 0) {  // node 0 merges and writes the record
    int per_node = l.world_size / l.nnodes, first = l.node_rank * per_node;
    if (!o.quiet)
      std::cout << (train ? "run " : "probe ") << cfg.name << ": node " << l.node_rank << " of " << l.nnodes
                << (per_node == 1 ? ": rank " + std::to_string(first)
                                  : ": ranks " + std::to_string(first) + ".." + std::to_string(first + per_node - 1))
                << " finished; node 0 writes the record\n"
                << "  logs " << l.rendezvous << "\n";
    return 0;
  }
  std::vector<RunRecord> ranks;
  for (const auto& path : paths) ranks.push_back(read_run_record(path));
  RunRecord rec = merge_rank_records(ranks, l.rendezvous);
  if (l.nnodes > 1)  // not part of the stack: the same ranks on one machine give the same bits
    rec.fingerprint["distributed.nodes"] = {std::to_string(l.nnodes) + " machines, store at " + l.master, false, false};
  write_run_record(out, rec);
  if (!o.quiet) {
    std::cout << (train ? "run " : "probe ") << cfg.name << ": " << l.world_size << (l.world_size == 1 ? " rank (" : " ranks (")
              << cfg.distributed.backend
              << (l.nnodes > 1 ? ", on " + std::to_string(l.nnodes) + " machines through " + l.master : std::string())
              << "), " << rec.probes.size() << " batches probed";
    auto loss = rec.series.find("loss");
    if (train && loss != rec.series.end() && !loss->second.values.empty())
      std::cout << ", " << cfg.steps << " steps, global loss " << format_double(loss->second.values.front())
                << " -> " << format_double(loss->second.values.back()) << "; parameters agreed on every rank "
                << "after every step";
    std::cout << "\n  platform " << rec.platform << ", record " << out << "\n";
  }
  return 0;
}

}  // namespace

int run_command(const RunOptions& o) {
  if (o.repeat > 1) {
    if (o.nnodes > 1) throw BadUsage("--nnodes: --repeat runs on one machine only (run it there)");
    if (o.stop_after > 0 || !o.resume.empty()) throw BadUsage("--repeat does not combine with --stop-after or --resume");
    return run_repeated(o);
  }
  SmokeConfig cfg = with_overrides(load_smoke_config(o.smoke), {o.overrides.intra_op_threads, -1, o.overrides.world_size});
  // Refuses what cannot run on several machines, before anything starts.
  MasterAddress master = o.rank < 0 ? several_machines(o, cfg) : MasterAddress{};
  if (cfg.has_trainer()) return run_trainer_smoke(o, cfg, /*train=*/true);
  if (cfg.distributed.configured && o.rank < 0) return run_distributed(o, cfg, /*train=*/true, master);
  return run_builtin(o, /*train=*/true);
}

int probe_command(const RunOptions& o) {
  SmokeConfig cfg = with_overrides(load_smoke_config(o.smoke), {o.overrides.intra_op_threads, -1, o.overrides.world_size});
  MasterAddress master = o.rank < 0 ? several_machines(o, cfg) : MasterAddress{};
  if (cfg.has_trainer()) return run_trainer_smoke(o, cfg, /*train=*/false);
  if (cfg.distributed.configured && o.rank < 0) return run_distributed(o, cfg, /*train=*/false, master);
  return run_builtin(o, /*train=*/false);
}

}  // namespace lockstep
