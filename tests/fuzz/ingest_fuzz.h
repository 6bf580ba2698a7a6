// Shared by the metric-log fuzzers (tensorboard_fuzz.cpp, jsonl_fuzz.cpp,
// mllog_fuzz.cpp, metrics_csv_fuzz.cpp): a per-process scratch folder, and
// the invariants every Series read_metrics returns must hold. A reader
// must either return such series or throw lockstep::Error (exit 2);
// anything else (a crash, a sanitizer report, another exception, a broken
// invariant) is a finding.
#pragma once

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "core/error.h"
#include "ingest/metrics.h"

namespace lockstep_fuzz {

/// A folder of this process under the temp dir, created once.
inline const std::string& scratch_dir(const char* name) {
  static const std::string dir = [name] {
    auto d = std::filesystem::temp_directory_path() / (std::string("lockstep-") + name + "-" + std::to_string(::getpid()));
    std::filesystem::create_directories(d);
    return d.string();
  }();
  return dir;
}

inline void write_file(const std::string& path, const char* data, size_t size) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(data, static_cast<std::streamsize>(size));
}

/// Traps unless every series is well formed: steps empty or one per value,
/// strictly increasing and non-negative, on a regular grid.
inline void check_series(const std::map<std::string, lockstep::Series>& out, const lockstep::MetricsSpec& spec) {
  if (out.size() != spec.series.size()) std::abort();
  for (const auto& [name, s] : out) {
    if (s.values.empty()) std::abort();
    if (s.steps.empty()) continue;
    if (s.steps.size() != s.values.size() || s.steps[0] < 0) std::abort();
    for (size_t i = 1; i < s.steps.size(); ++i)
      if (s.steps[i] - s.steps[i - 1] != s.steps[1] - s.steps[0] || s.steps[i] <= s.steps[i - 1]) std::abort();
  }
}

/// read_metrics(spec), checked; lockstep::Error is an accepted outcome.
inline void read_checked(const lockstep::MetricsSpec& spec) {
  try {
    check_series(lockstep::read_metrics(spec), spec);
  } catch (const lockstep::Error& e) {
    if (e.code() != lockstep::ExitCode::kBadInput) std::abort();
  }
}

}  // namespace lockstep_fuzz
