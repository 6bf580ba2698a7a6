#include "plan/run_plan.h"

#include <netdb.h>
#include <sys/socket.h>
#include <sys/types.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "core/atomic_file.h"
#include "core/error.h"
#include "plan/run_flags.h"
#include "record/run_record.h"
#include "smoke/golden_store.h"

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
    throw BadUsage("--record " + out + " and " + flag + " " + checkpoint + ": the record (and its " + out +
                   ".ranks or .trainer folder) and the checkpoint's files (" + checkpoint + ", " + checkpoint +
                   ".*) would share paths; give them names that do not start with each other");
}

// Where a run writes: never over its inputs, never into the goldens (only
// bless and accept write there), the record never among the checkpoint's
// files, and never over something that is not a regular file.
void refuse_unsafe_outputs(const RunPlan& p) {
  const RunRequest& r = p.request;
  const std::string& data = p.config.data.resolved_path;
  refuse_overwriting_inputs(p.out, {r.smoke, data, r.resume});
  refuse_overwriting_inputs(r.checkpoint, {r.smoke, data, p.out});
  refuse_writing_into_goldens(p.out, r.smoke, "a run record");
  refuse_writing_into_goldens(r.checkpoint, r.smoke, "a checkpoint");
  refuse_overlap(p.out, r.checkpoint, "--checkpoint");
  refuse_overlap(p.out, r.resume, "--resume");
  std::error_code ec;
  fs::file_status s = fs::symlink_status(p.out, ec);
  if (!ec && fs::exists(s) && !fs::is_regular_file(s))  // as write_file_atomically, before the run, not after it
    throw BadUsage("--record " + p.out + ": refusing to write over something that is not a regular file" +
                   (fs::is_directory(s) ? " (--record names the record's file, e.g. " +
                                              (fs::path(p.out) / (p.config.name + ".run.json")).string() + ")"
                                        : std::string()));
  // A path ending in "/" names a folder: a single process's checkpoint is a
  // file (a multi-rank checkpoint is a folder; the record's path is checked
  // by refuse_replacing_other_than_a_record below).
  if (!r.checkpoint.empty() && r.checkpoint.back() == '/' && p.site != RunSite::kRanks)
    throw BadUsage("--checkpoint " + r.checkpoint + ": a file path, not a folder (drop the trailing /)");
  // Another smoke of the suite, overwritten by a record, would fail every
  // later check as a config with unknown fields.
  if (!ec && fs::is_regular_file(s) && fs::file_size(p.out, ec) < (uintmax_t{4} << 20) && !ec &&
      is_smoke_config_file(p.out))
    throw BadUsage(p.out + ": refusing to write a run record over a smoke config");
  refuse_replacing_other_than_a_record(p.out, "--record");
}

// --nnodes, --node-rank and --master, checked and resolved: node 0's
// address from --master, else MASTER_ADDR and MASTER_PORT (torchrun's).
MasterAddress several_machines(const RunRequest& o, const SmokeConfig& cfg) {
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

// --rank and --rendezvous: one rank of the coordinator's group.
void check_rank(const RunRequest& r, const SmokeConfig& cfg) {
  const DistributedSpec& d = cfg.distributed;
  if (!d.configured || r.rank >= d.world_size)
    throw BadUsage("--rank " + std::to_string(r.rank) + ": " + r.smoke + " has " +
                   (d.configured ? std::to_string(d.world_size) + " ranks" : std::string("no distributed section")));
  std::error_code ec;
  if (r.rendezvous.empty() || !fs::is_directory(r.rendezvous, ec))
    throw BadUsage("--rendezvous '" + r.rendezvous + "': not a folder (rank processes are started by `lockstep "
                   "run` on a distributed smoke, which makes it)");
  if (r.nnodes > 1) {  // the coordinator checked both; a rank started by hand may not have
    std::string error;
    if (!parse_master_address(r.master, &error).set()) throw BadUsage("--master: " + error);
  }
}

// The record's default path: lockstep-out/<smoke>[.variant-<lane>][.node-K].run.json
// (probe: .probe.json): a lane's never overwrites the base run's. Node K >
// 0 writes no record, only its ranks' logs beside node 0's, so both nodes
// can share one folder.
std::string default_out(const RunPlan& p) {
  std::string node = p.master.set() && p.request.node_rank > 0 ? ".node-" + std::to_string(p.request.node_rank) : "";
  std::string lane = p.request.variant.empty() ? "" : ".variant-" + p.request.variant;
  return "lockstep-out/" + p.config.name + lane + node + (p.train ? ".run.json" : ".probe.json");
}

// --then-variant: more lanes after this one in this process. Only what
// runs here, whole, once: a built-in smoke's lane, which the next lanes
// follow in the same LibTorch.
void refuse_then_variants(const RunPlan& p) {
  const RunRequest& r = p.request;
  const char* why = r.variant.empty()               ? "it follows a lane (--variant NAME)"
                    : !p.train                       ? "`lockstep run` only"
                    : p.site != RunSite::kInProcess ? "a built-in smoke's lane in this process (not a trainer's nor a multi-rank one)"
                    : p.span != RunSpan::kWhole      ? "whole runs only (no --stop-after, --resume)"
                    : p.repeat > 1                   ? "one run of each lane (no --repeat)"
                                                     : nullptr;
  if (!why && r.out.empty()) why = "with --record DIR/variant-NAME.json (the later lanes' records go beside it)";
  if (!why && !r.overrides.vary.empty()) why = "no --vary (a varied run is a repeat's, in a process of its own)";
  if (why) throw BadUsage(std::string("--then-variant: ") + why);
  for (const auto& name : r.then_variants) {
    if (name.empty()) throw BadUsage("--then-variant: a lane's name, not empty");
    if (name == r.variant || std::count(r.then_variants.begin(), r.then_variants.end(), name) > 1)
      throw BadUsage("--then-variant " + name + ": each lane once");
    if (fs::path(then_variant_record(p.out, name)).lexically_normal() == fs::path(p.out).lexically_normal())
      throw BadUsage("--then-variant " + name + ": its record would be --record " + p.out + ", lane " + r.variant +
                     "'s");
  }
}

}  // namespace

std::string then_variant_record(const std::string& first_out, const std::string& name) {
  return (fs::path(first_out).parent_path() / ("variant-" + name + ".json")).string();
}

RunPlan plan_then_variant(const RunPlan& first, const SmokeConfig& loaded, const std::string& name) {
  RunRequest r = first.request;
  r.variant = name;
  r.then_variants.clear();
  r.out = then_variant_record(first.out, name);
  RunPlan p = plan_run(loaded, r, first.train);
  const SmokeConfig& a = first.config;
  const SmokeConfig& b = p.config;
  if (p.site != RunSite::kInProcess)
    throw BadUsage("--then-variant " + name + ": this lane runs elsewhere than in this process (its own processes "
                   "or ranks); run it on its own with --variant " + name);
  if (a.mode != b.mode)
    throw BadUsage("--then-variant " + name + ": its determinism.mode (" + b.mode + ") is not lane " +
                   first.request.variant + "'s (" + a.mode + "), a setting of the whole process; run it on its own "
                   "with --variant " + name);
  if (a.inter_op_threads != b.inter_op_threads)
    throw BadUsage("--then-variant " + name + ": its determinism.inter_op_threads (" +
                   std::to_string(b.inter_op_threads) + ") is not lane " + first.request.variant + "'s (" +
                   std::to_string(a.inter_op_threads) + "), a setting of the whole process; run it on its own with "
                   "--variant " + name);
  return p;
}

std::vector<std::string> override_args(const RunOverrides& o) {
  RunRequest r;
  r.overrides = o;
  std::vector<std::string> args;
  for (const RunFlag& flag : run_flags())
    if (flag.override_)
      for (std::string& a : write_run_flag(flag, r)) args.push_back(std::move(a));
  return args;
}

std::vector<std::string> run_request_args(const RunRequest& r, bool train) {
  std::vector<std::string> args = {train ? "run" : "probe", r.smoke};
  for (const RunFlag& flag : run_flags())
    for (std::string& a : write_run_flag(flag, r)) args.push_back(std::move(a));
  return args;
}

RunPlan plan_run(const SmokeConfig& loaded, const RunRequest& r, bool train) {
  RunPlan p;
  p.request = r;
  p.train = train;
  p.repeat = r.repeat;
  if (!train && !r.data_pass) throw BadUsage("--no-data-pass: `lockstep probe` is the data-only pass");
  if (!r.rendezvous.empty() && r.rank < 0)
    throw BadUsage("--rendezvous: only with --rank (both are given by the coordinator of a multi-rank run, which "
                   "`lockstep run` on a distributed smoke starts)");
  if (r.repeat > 1) {
    if (r.nnodes > 1) throw BadUsage("--nnodes: --repeat runs on one machine only (run it there)");
    if (r.stop_after > 0 || !r.resume.empty()) throw BadUsage("--repeat does not combine with --stop-after or --resume");
    if (!r.data_pass)
      throw BadUsage("--no-data-pass does not combine with --repeat (the first of the repeats makes the data-only "
                     "pass, the others take its probes)");
  }
  if (loaded.has_trainer()) {
    if (r.overrides.workers >= 0)
      throw BadUsage("--workers: a trainer smoke's DataLoader workers are the trainer's own (its command; "
                     "trainer.workers with a {workers} placeholder runs the data-only pass at several counts)");
    if (r.overrides.perturb == "data" && (!r.data_pass || !loaded.trainer.has_data_pass()))
      throw BadUsage("--perturb data: it moves a sample of the data-only pass, and this run makes none (" +
                     std::string(!r.data_pass ? "--no-data-pass" : loaded.file + " sets no trainer.probes") + ")");
    p.site = RunSite::kTrainer;
    RunOverrides trainer_overrides = r.overrides;
    trainer_overrides.workers = -1;
    p.config = with_overrides(loaded, trainer_overrides);
  } else {
    if (!r.data_pass)
      throw BadUsage("--no-data-pass: a built-in smoke's data-only pass is part of its own process (no interpreter "
                     "to start); the flag is for a trainer smoke");
    p.site = r.rank >= 0 ? RunSite::kRank : loaded.distributed.configured ? RunSite::kRanks : RunSite::kInProcess;
    p.config = with_overrides(loaded, r.overrides);
  }
  // What cannot run on several machines is refused before anything starts.
  if (p.site != RunSite::kRank) p.master = several_machines(r, p.config);
  if (p.site == RunSite::kRank) check_rank(r, p.config);
  p.span = r.stop_after > 0 ? RunSpan::kStopAfter : !r.resume.empty() ? RunSpan::kResume : RunSpan::kWhole;
  if (r.stop_after >= p.config.steps)
    throw BadUsage("--stop-after " + std::to_string(r.stop_after) + ": must be below the " +
                   std::to_string(p.config.steps) + " steps of " + r.smoke);
  p.out = r.out.empty() ? default_out(p) : r.out;
  refuse_unsafe_outputs(p);
  if (!r.then_variants.empty()) refuse_then_variants(p);
  // A single process (or one rank) resumes from a checkpoint file; a
  // multi-rank run's checkpoint is a folder (distributed/rank_checkpoint.h).
  std::error_code ec;
  if ((p.site == RunSite::kInProcess || p.site == RunSite::kRank) && !r.resume.empty() &&
      fs::is_directory(r.resume, ec))
    throw BadInput(r.resume, "", std::string("a checkpoint file (") +
                                     (p.site == RunSite::kRank ? "one rank's" : "this single-process smoke's") +
                                     "), got a folder (a multi-rank smoke's checkpoint?)");
  return p;
}

}  // namespace lockstep
