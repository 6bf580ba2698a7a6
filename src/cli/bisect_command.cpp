// `lockstep bisect --good REV --bad REV [SMOKE...]`: bisect/bisect.h through
// the smoke launcher; prints each step as it ends and the conclusion,
// writes --json, and ends as a signal that interrupted it would (after its
// temporary folders are gone). `lockstep bisect-env`: bisect/bisect_env.h,
// the same way.
#include <iostream>

#include <nlohmann/json.hpp>

#include "bisect/bisect.h"
#include "bisect/bisect_env.h"
#include "cli/commands.h"
#include "cli/smoke_launcher.h"
#include "core/atomic_file.h"
#include "core/directory_lock.h"
#include "core/error.h"
#include "core/job_slots.h"
#include "core/process.h"

namespace lockstep {

namespace {

nlohmann::json commit_json(const CommitInfo& c) {
  return {{"hash", c.hash}, {"subject", c.subject}, {"author", c.author}, {"date", c.date}};
}

nlohmann::json result_json(const BisectResult& r) {
  nlohmann::json j;
  j["lockstep_report"] = "bisect";
  j["exit"] = StopSignals::received() ? 128 + StopSignals::received() : to_int(r.code);
  j["found"] = r.found;
  j["message"] = r.message;
  if (r.found) {
    j["first_bad"] = commit_json(r.first_bad);
    j["divergence"] = r.divergence;
  }
  j["candidates"] = nlohmann::json::array();
  for (const auto& c : r.candidates) j["candidates"].push_back(commit_json(c));
  j["range"] = r.range;
  j["runs"] = r.runs;
  j["steps"] = nlohmann::json::array();
  j["skipped"] = nlohmann::json::array();
  for (const auto& s : r.steps) {
    j["steps"].push_back({{"commit", commit_json(s.commit)},
                          {"verdict", step_word(s.verdict)},
                          {"why", s.why},
                          {"end", s.end},
                          {"runs", s.runs},
                          {"seconds", s.seconds},
                          {"run_seconds", s.run_seconds}});
    if (s.verdict == BisectStep::Verdict::kSkip) j["skipped"].push_back({{"commit", commit_json(s.commit)}, {"why", s.why}});
  }
  return j;
}

}  // namespace

int bisect_command(const BisectCliOptions& options) {
  SmokeLauncher launcher;
  return bisect_command(options, launcher);
}

int bisect_command(const BisectCliOptions& o, Launcher& launcher) {
  if (o.json_given)
    require_report_file("--json", o.json_out, "\"lockstep_report\": \"bisect\"", {}, o.bisect.out_dir + "/bisect");
  BisectOptions options = o.bisect;
  const int jobs = o.jobs > 0 ? o.jobs : available_cpus();
  JobSlots slots(jobs);
  if (jobs > 1) options.slots = &slots;
  DirectoryLock out_lock(options.out_dir, true, [&](int pid) {
    std::cout << "bisect: waiting for process " << pid << ", which writes to " << options.out_dir << "\n" << std::flush;
  });
  options.on_step = [](const BisectStep& s) {
    std::cout << "bisect: " << (s.end ? "[end] " : "") << s.commit.describe() << ": " << step_word(s.verdict) << " ("
              << s.runs << " runs, " << static_cast<int>(s.seconds * 10) / 10.0 << " s)";
    // One line per step; the conclusion below says the first bad commit's in full.
    if (!s.why.empty() && s.verdict != BisectStep::Verdict::kGood)
      std::cout << "\n  " << (s.why.size() > 160 ? s.why.substr(0, 157) + "..." : s.why);
    std::cout << "\n" << std::flush;
  };
  BisectResult r = bisect(options, launcher);
  std::cout << "bisect: " << r.message << "\n";
  if (r.found && !r.divergence.empty()) std::cout << "  against its parent: " << r.divergence << "\n";
  for (const auto& c : r.candidates) std::cout << "  " << c.describe() << "\n";
  size_t tested = 0;
  for (const auto& s : r.steps) tested += s.end ? 0 : 1;
  std::cout << "bisect: " << r.range << " commits, " << tested << " tested besides the two ends, " << r.runs
            << " runs; exit " << to_int(r.code) << "\n";
  if (!o.json_out.empty()) write_file_atomically(o.json_out, result_json(r).dump(2) + "\n");
  StopSignals::reraise();  // an interrupted bisect ends as the signal would have
  return to_int(r.code);
}

int bisect_env_command(const BisectEnvCliOptions& options) {
  SmokeLauncher launcher;
  return bisect_env_command(options, launcher);
}

int bisect_env_command(const BisectEnvCliOptions& o, Launcher& launcher) {
  EnvBisectOptions options = o.bisect;
  std::vector<std::string> inputs = options.smokes;
  inputs.push_back(options.good_env);
  inputs.push_back(options.bad_env);
  if (options.good_env.empty() || options.bad_env.empty())
    throw BadUsage(std::string(options.good_env.empty() ? "--good-env" : "--bad-env") +
                   ": an environment file path, got an empty path");
  if (o.json_given)
    require_report_file("--json", o.json_out, "\"lockstep_report\": \"bisect-env\"", inputs,
                        options.out_dir + "/bisect-env");
  const int jobs = o.jobs > 0 ? o.jobs : available_cpus();
  JobSlots slots(jobs);
  if (jobs > 1) options.slots = &slots;
  options.on_test = [](const std::string& line) { std::cout << "bisect-env: " << line << "\n" << std::flush; };
  DirectoryLock out_lock(options.out_dir, true, [&](int pid) {
    std::cout << "bisect-env: waiting for process " << pid << ", which writes to " << options.out_dir << "\n" << std::flush;
  });
  {
    std::vector<EnvDifference> d = env_differences(read_stack_env(options.good_env), read_stack_env(options.bad_env));
    std::cout << "bisect-env: " << d.size() << " difference(s) from " << options.good_env << " to " << options.bad_env;
    for (size_t i = 0; i < d.size(); ++i) std::cout << (i ? "; " : ": ") << d[i].label();
    std::cout << "\n" << std::flush;
  }
  EnvBisectResult r = bisect_env(options, launcher);
  std::cout << "bisect-env: " << r.message << "\n";
  if (!r.divergence.empty()) std::cout << "  " << r.divergence << "\n";
  std::cout << "bisect-env: " << r.tests.size() << " sets tested, " << r.runs << " runs; exit " << to_int(r.code)
            << "\n";
  if (!o.json_out.empty()) {
    nlohmann::json j;
    j["lockstep_report"] = "bisect-env";
    j["exit"] = to_int(r.code);
    j["message"] = r.message;
    j["divergence"] = r.divergence;
    j["differences"] = nlohmann::json::array();
    for (const auto& d : r.differences) j["differences"].push_back(d.label());
    j["culprit"] = nlohmann::json::array();
    for (const auto& d : r.culprit) j["culprit"].push_back(d.label());
    j["tests"] = nlohmann::json::array();
    for (const auto& t : r.tests) {
      nlohmann::json applied = nlohmann::json::array();
      for (size_t i : t.applied) applied.push_back(r.differences[i].label());
      j["tests"].push_back({{"applied", applied}, {"failed", t.failed}, {"why", t.why}, {"runs", t.runs}});
    }
    j["runs"] = r.runs;
    write_file_atomically(o.json_out, j.dump(2) + "\n");
  }
  return to_int(r.code);
}

}  // namespace lockstep
