// How busy the machine was while a run was timed: the load average per
// logical core and the share of CPU time the hypervisor stole. A step time
// measured on a saturated shared runner says nothing about the code, so
// the resources gate turns such a comparison into a note (docs/comparison.md).
//
//   CpuTimes before = read_cpu_times();
//   ... train ...
//   double steal = steal_fraction(before, read_cpu_times());   // 0.0 .. 1.0, -1 unknown
//   double load = load_per_core();                             // 1-min load / cores, -1 unknown
#pragma once

#include <cstdint>
#include <string>

namespace lockstep {

/// Aggregate CPU time counters of /proc/stat's "cpu" line, in clock ticks.
struct CpuTimes {
  uint64_t total = 0;  ///< user + nice + system + idle + iowait + irq + softirq + steal
  uint64_t steal = 0;  ///< time the hypervisor ran other guests on our CPUs
  bool known = false;  ///< false when /proc/stat could not be read
};

/// The counters now.
CpuTimes read_cpu_times();

/// Steal time between two readings as a share of all CPU time, or -1 when
/// either is unknown or no time passed.
double steal_fraction(const CpuTimes& before, const CpuTimes& after);

/// The 1-minute load average divided by the logical cores, or -1 when
/// /proc/loadavg cannot be read.
double load_per_core();

/// The class of runner resources are compared within: $LOCKSTEP_RUNNER_CLASS
/// when set (a runner tag, say), else "<cpu model> x<logical cores>".
std::string runner_class(const std::string& cpu_model, const std::string& logical_cores);

}  // namespace lockstep
