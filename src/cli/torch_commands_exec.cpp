// The LibTorch subcommands of the torch-free front `lockstep`: a built-in
// smoke's `run`/`probe`, and `env`, replace this process with
// `lockstep-torch` beside it (same arguments, pid and file descriptors; the
// environment with core/torch_start.h's start-up tunable added), so only
// they pay LibTorch's start-up (about half a second of CPU); `check`,
// `compare`, `bless`, a trainer smoke and every other command never load it.
// Example: `lockstep run smoke/digits-cnn.json` execs
// `/usr/bin/lockstep-torch run smoke/digits-cnn.json`.
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>

#include "cli/commands.h"
#include "cli/record_producers.h"
#include "core/error.h"
#include "core/install_paths.h"
#include "core/torch_start.h"

extern char** environ;

namespace lockstep {

namespace {

// The command line without `--vary`: lockstep-torch takes the variation as
// this process resolved it, from $LOCKSTEP_VARY (a kind given without its
// value drew one here), and a varied run's command line stays the plain
// run's (plan/run_plan.h).
std::vector<std::string> without_variation_flag(const std::vector<std::string>& args) {
  std::vector<std::string> out;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--vary") {
      ++i;  // and its value
      continue;
    }
    if (args[i].rfind("--vary=", 0) == 0) continue;
    out.push_back(args[i]);
  }
  return out;
}

[[noreturn]] void exec_torch_binary(const char* what, const RunVariation& vary = {}) {
  // Beside this executable (/proc/self/exe: a link to `lockstep` on PATH still finds it).
  std::filesystem::path bin = sibling_executable("lockstep-torch");
  if (remembered_command_line().empty()) throw EnvironmentError("internal: the command line was not remembered");
  std::vector<std::string> args = without_variation_flag(remembered_command_line());
  args[0] = bin.string();
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  // Our environment, with the tunables that shorten LibTorch's start-up
  // (core/torch_start.h).
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) env.emplace_back(*e);
  env = ordered_environment(with_torch_start_tunables(std::move(env)), vary);
  std::vector<char*> envp;
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::cout.flush();
  std::cerr.flush();
  ::execve(argv[0], argv.data(), envp.data());
  int err = errno;
  throw EnvironmentError(std::string("`lockstep ") + what + "` needs LibTorch, in " + bin.string() + ": " +
                         std::strerror(err) + " " + missing_torch_hint());
}

// The built-in smoke's producer of the front: lockstep-torch makes the
// record, with the same command line (it plans again, the same plan).
class ExecProducer : public RecordProducer {
 public:
  ProducedRun produce(const RunPlan& plan) override { exec_torch_binary(plan.verb(), plan.config.vary); }
};

}  // namespace

std::unique_ptr<RecordProducer> builtin_record_producer() { return std::make_unique<ExecProducer>(); }
int finish_command(int code) { return code; }
int env_command(const EnvOptions&) { exec_torch_binary("env"); }
int batch_sweep_command(const RunOptions& o, const BatchSweepOptions& sweep) {
  const SmokeConfig cfg = refuse_batch_sweep_of(o, sweep);  // bad usage refused before LibTorch's start-up
  if (cfg.has_trainer()) return trainer_batch_sweep_command(o, sweep, cfg);  // the trainer brings its own torch
  exec_torch_binary("probe --batch-sweep");
}

}  // namespace lockstep
