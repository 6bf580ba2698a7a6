#include "machine/machine_load.h"

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

namespace lockstep {

CpuTimes read_cpu_times() {
  std::ifstream in("/proc/stat");
  std::string line;
  CpuTimes t;
  if (!std::getline(in, line) || line.rfind("cpu ", 0) != 0) return t;
  std::istringstream fields(line.substr(4));
  uint64_t v[8] = {0};
  for (int i = 0; i < 8 && fields >> v[i]; ++i) t.total += v[i];
  t.steal = v[7];
  t.known = t.total > 0;
  return t;
}

double steal_fraction(const CpuTimes& before, const CpuTimes& after) {
  if (!before.known || !after.known || after.total <= before.total) return -1;
  return static_cast<double>(after.steal - before.steal) / static_cast<double>(after.total - before.total);
}

double load_per_core() {
  std::ifstream in("/proc/loadavg");
  double load = -1;
  if (!(in >> load)) return -1;
  unsigned cores = std::thread::hardware_concurrency();
  return cores ? load / cores : -1;
}

std::string runner_class(const std::string& cpu_model, const std::string& logical_cores) {
  if (const char* c = std::getenv("LOCKSTEP_RUNNER_CLASS"); c && *c) return c;
  return cpu_model + " x" + logical_cores;
}

}  // namespace lockstep
