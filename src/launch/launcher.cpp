#include "launch/launcher.h"

#include <algorithm>
#include <functional>

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "compare/compare.h"
#include "core/child_error.h"
#include "core/error.h"
#include "core/float_bits.h"
#include "core/install_paths.h"
#include "core/process.h"

extern char** environ;

namespace lockstep {

std::vector<std::string> child_args(const ChildRun& run) { return run_request_args(run, run.train); }

ProcessLauncher::ProcessLauncher(std::string executable, int64_t timeout_s)
    : executable_(std::move(executable)), timeout_s_(timeout_s) {}

namespace {

// The child's environment: ours, with LOCKSTEP_SEED, LOCKSTEP_VARY and the
// run's own variables replaced when asked.
std::vector<std::string> child_environment(const ChildRun& run) {
  std::vector<std::string> env;
  std::vector<std::string> extra = run.env;
  if (!run.seed.empty()) extra.push_back("LOCKSTEP_SEED=" + run.seed);
  // A varied run is told so in its environment (plan/run_plan.h); a plain
  // one never inherits a variation meant for another.
  const std::string vary = std::string(kVaryVariable) + "=";
  if (!run.overrides.vary.empty()) extra.push_back(vary + variation_spec(run.overrides.vary));
  auto replaced = [&extra](const char* entry) {
    for (const auto& x : extra) {
      size_t eq = x.find('=');
      if (std::strncmp(entry, x.c_str(), eq + 1) == 0) return true;
    }
    return false;
  };
  for (char** e = environ; *e; ++e)
    if (!replaced(*e) && std::strncmp(*e, vary.c_str(), vary.size()) != 0) env.emplace_back(*e);
  for (const auto& x : extra) env.push_back(x);
  return env;
}

}  // namespace

std::vector<RunRecord> Launcher::run_together(const std::vector<ChildRun>& lanes) {
  std::vector<RunRecord> records;
  for (const auto& lane : lanes) try {
      records.push_back(run(lane));
    } catch (const Error& e) {
      if (lanes.size() < 2) throw;
      throw Error(e.code(), "lane " + lane.variant + ": " + e.what());
    }
  return records;
}

void ProcessLauncher::spawn(const ChildRun& run, int64_t timeout_s) {
  ProcessSpec p;
  p.what = "lockstep run";
  p.argv = child_args(run);
  p.argv.insert(p.argv.begin(), executable_.empty() ? self_executable() : executable_);
  // It dies with this process, and so does all it starts (core/process.h).
  p.env = child_environment(run);
  std::error_code cwd_ec;
  p.cwd = std::filesystem::current_path(cwd_ec).string();
  if (cwd_ec) throw EnvironmentError("the current folder cannot be read: " + cwd_ec.message());
  p.timeout_s = timeout_s;

  // The child's stderr goes to <out>.log, is echoed to ours but for its
  // error block, which becomes this error's message (said once, by whoever
  // reports it: a report, JUnit in GitLab, must say why a run failed, not
  // "see above"). Its stdout is ours.
  std::string log = run.out + ".log";
  std::error_code dir_ec;
  std::filesystem::create_directories(std::filesystem::absolute(log).parent_path(), dir_ec);
  if (dir_ec) throw io_error(log, "create its folder", dir_ec.value());
  if (std::filesystem::is_symlink(log, dir_ec))
    throw BadUsage(log + ": refusing to write the child's log through a symbolic link");
  p.stderr_path = std::filesystem::absolute(log).string();
  ProcessOutcome outcome = run_process(p);
  // The reason: the child's last error, with the lines after it (a
  // trainer's stderr quoted under it).
  std::string reason;
  {
    // The last MiB only: a child that wrote gigabytes (a runaway warning
    // loop) costs no more memory; the whole log stays in the file.
    constexpr std::streamoff kTail = std::streamoff{1} << 20;
    std::ifstream in(log, std::ios::binary);
    in.seekg(0, std::ios::end);
    std::streamoff size = in.tellg();
    std::string line;
    if (size > kTail) {
      in.seekg(size - kTail);
      std::getline(in, line);  // a partial line
      std::cerr << "(the child's stderr is over 1 MiB: its first " << size - kTail << " bytes are not shown; all of it is in "
                << log << ")\n";
    } else {
      in.seekg(0);
    }
    ChildErrorReader err;
    while (std::getline(in, line))
      if (!err.feed(line)) std::cerr << line << "\n";  // the error itself is this error's message
    reason = err.reason_or_last_line();
  }
  std::error_code ec;
  if (std::filesystem::file_size(log, ec) == 0 && !ec) std::filesystem::remove(log, ec);
  // The child as a user would run it again: a lane by its name.
  const std::string command = "`lockstep run " + run.smoke + (run.variant.empty() ? "" : " --variant " + run.variant) + "`";
  if (outcome.timed_out)
    throw EnvironmentError(command + " " + outcome.describe(p.timeout_s) + ": a hang");
  if (outcome.signal != 0)
    throw EnvironmentError(command + " was killed by signal " + std::to_string(outcome.signal));
  int code = outcome.exit_status;
  if (code == to_int(ExitCode::kBadInput))
    throw Error(ExitCode::kBadInput, command + " failed: " + reason);
  // A team trainer that failed (non-zero exit, signal, timeout): the change
  // under test broke training (external/trainer_run.h).
  if (code == to_int(ExitCode::kRegression)) throw Error(ExitCode::kRegression, reason);
  if (code != 0)
    throw Error(ExitCode::kEnvironment,
                command + " exited with " + std::to_string(code) + ": " + reason);
}

RunRecord ProcessLauncher::run(const ChildRun& run) {
  spawn(run, timeout_s_);
  return read_run_record(run.out);
}

void ProcessLauncher::run_to_checkpoint(const ChildRun& run) { spawn(run, timeout_s_); }

std::vector<RunRecord> ProcessLauncher::run_together(const std::vector<ChildRun>& lanes) {
  if (lanes.size() < 2) return Launcher::run_together(lanes);
  // Only the name and the record may differ: the child runs every lane
  // with the first one's command line.
  auto rest = [](ChildRun r) {
    r.variant.clear();
    r.out.clear();
    return std::make_pair(child_args(r), child_environment(r));
  };
  ChildRun first = lanes.front();
  for (size_t i = 1; i < lanes.size(); ++i) {
    if (lanes[i].out != then_variant_record(first.out, lanes[i].variant) || rest(lanes[i]) != rest(lanes.front()))
      throw std::logic_error("run_together: lane " + lanes[i].variant + " differs from lane " + first.variant +
                             " in more than its name and record");
    first.then_variants.push_back(lanes[i].variant);
  }
  spawn(first, timeout_s_ * static_cast<int64_t>(lanes.size()));
  std::vector<RunRecord> records;
  for (const auto& lane : lanes) records.push_back(read_run_record(lane.out));
  return records;
}

std::vector<RunRecord> run_children(Launcher& launcher, const ChildRun& base, const std::string& dir,
                                    const std::string& prefix, int n, JobSlots* slots, int slots_per_run,
                                    int held, const std::function<void()>& first, int first_number) {
  std::vector<RunRecord> runs(static_cast<size_t>(std::max(n, 0)));
  std::vector<std::function<void()>> tasks;
  if (first) tasks.push_back(first);
  for (int i = 1; i <= n; ++i)
    tasks.push_back([&, i] {
      ChildRun r = base;
      const int number = first_number + i - 1;
      r.out = dir + "/" + prefix + "-" + std::to_string(number) + ".json";
      if (base.share_data_pass && number > 1) r.data_pass = false;
      if (base.varied_run > 0 && number == base.varied_run) r.overrides.vary = base.variation;
      runs[static_cast<size_t>(i - 1)] = launcher.run(r);
    });
  run_tasks(tasks, slots, slots_per_run, held);
  for (size_t i = 1; base.share_data_pass && first_number == 1 && i < runs.size(); ++i)
    take_data_pass(runs[i], runs[0], dir + "/" + prefix + "-" + std::to_string(i + 1) + ".json");
  return runs;
}

DistinctResults distinct_results(const std::vector<RunRecord>& runs) {
  DistinctResults out;
  for (size_t i = 0; i < runs.size(); ++i) {
    size_t g = 0;
    while (g < out.groups.size() && !first_bit_difference(runs[i], runs[out.groups[g].front()]).empty()) ++g;
    if (g == out.groups.size()) {
      out.groups.emplace_back();
      out.first_difference.push_back(i == 0 ? "" : first_bit_difference(runs[i], runs[0], "run " + std::to_string(i + 1)));
    }
    out.groups[g].push_back(i);
  }
  return out;
}

void take_data_pass(RunRecord& run, const RunRecord& from, const std::string& path) {
  if (!run.probes.empty() || from.probes.empty()) return;
  run.probes = from.probes;
  if (!path.empty()) write_run_record(path, run);
}

bool shares_data_pass(const SmokeConfig& config) { return config.has_trainer() && config.trainer.has_data_pass(); }

std::pair<size_t, std::string> first_repeat_difference(const std::vector<RunRecord>& runs) {
  for (size_t i = 1; i < runs.size(); ++i)
    if (std::string diff = first_bit_difference(runs[i], runs[0], "run " + std::to_string(i + 1)); !diff.empty())
      return {i, diff};
  return {0, ""};
}

}  // namespace lockstep
