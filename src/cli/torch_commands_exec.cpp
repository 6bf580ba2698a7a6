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

[[noreturn]] void exec_torch_binary(const char* what) {
  // Beside this executable (/proc/self/exe: a link to `lockstep` on PATH still finds it).
  std::filesystem::path bin = sibling_executable("lockstep-torch");
  std::vector<std::string> args = remembered_command_line();
  if (args.empty()) throw EnvironmentError("internal: the command line was not remembered");
  args[0] = bin.string();
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  // Our environment, with the tunables that shorten LibTorch's start-up
  // (core/torch_start.h).
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) env.emplace_back(*e);
  env = with_torch_start_tunables(std::move(env));
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
  ProducedRun produce(const RunPlan& plan) override { exec_torch_binary(plan.verb()); }
};

}  // namespace

std::unique_ptr<RecordProducer> builtin_record_producer() { return std::make_unique<ExecProducer>(); }
int finish_command(int code) { return code; }
int env_command(const EnvOptions&) { exec_torch_binary("env"); }

}  // namespace lockstep
