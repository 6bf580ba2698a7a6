#include "compare/change_summary.h"

#include <cmath>
#include <set>
#include <sstream>

#include "compare/tolerance.h"

namespace lockstep {

namespace {

struct Buckets {
  size_t counts[5] = {0, 0, 0, 0, 0};
  double max_abs = 0, max_rel = 0;
  int64_t max_abs_at = -1, max_rel_at = -1;

  void add(double before, double after, int64_t at) {
    double abs = std::fabs(after - before);
    if (std::isnan(abs)) abs = (std::isnan(before) && std::isnan(after)) ? 0 : INFINITY;
    double rel = before != 0 ? abs / std::fabs(before) : abs;
    if (abs > max_abs || max_abs_at < 0) { max_abs = abs; max_abs_at = at; }
    if (rel > max_rel || max_rel_at < 0) { max_rel = rel; max_rel_at = at; }
    int b = rel == 0 ? 0 : rel < 1e-7 ? 1 : rel < 1e-5 ? 2 : rel < 1e-3 ? 3 : 4;
    ++counts[b];
  }
  bool changed() const { return counts[1] + counts[2] + counts[3] + counts[4] > 0; }
  std::string line(const std::string& name) const {
    std::ostringstream o;
    o << "  " << name << ": max |change| " << format_error(max_abs) << " @" << max_abs_at << ", max rel "
      << format_error(max_rel) << " @" << max_rel_at << "; 0:" << counts[0] << " <1e-7:" << counts[1]
      << " <1e-5:" << counts[2] << " <1e-3:" << counts[3] << " >=1e-3:" << counts[4] << "\n";
    return o.str();
  }
};

}  // namespace

std::string describe_changes(const RunRecord& a, const RunRecord& b) {
  std::ostringstream o;
  std::set<std::string> names;
  for (const auto& [k, _] : a.series) names.insert(k);
  for (const auto& [k, _] : b.series) names.insert(k);
  for (const auto& name : names) {
    auto x = a.series.find(name), y = b.series.find(name);
    if (x == a.series.end() || y == b.series.end()) {
      o << "  " << name << ": " << (x == a.series.end() ? "new series" : "series removed") << "\n";
      continue;
    }
    if (x->second.values.size() != y->second.values.size()) {
      o << "  " << name << ": length " << x->second.values.size() << " -> " << y->second.values.size() << "\n";
      continue;
    }
    Buckets bk;
    for (size_t i = 0; i < x->second.values.size(); ++i)
      bk.add(x->second.values[i], y->second.values[i], static_cast<int64_t>(i));
    if (bk.changed()) o << bk.line(name);
  }
  if (a.probes.size() != b.probes.size()) {
    o << "  probes: " << a.probes.size() << " -> " << b.probes.size() << " batches\n";
  } else {
    size_t hash_changes = 0;
    for (size_t i = 0; i < a.probes.size(); ++i)
      hash_changes += a.probes[i].inputs.xxh3_128 != b.probes[i].inputs.xxh3_128 ||
                      a.probes[i].labels.xxh3_128 != b.probes[i].labels.xxh3_128;
    for (const auto& stat : tensor_stat_names()) {
      Buckets bk;
      for (size_t i = 0; i < a.probes.size(); ++i)
        bk.add(tensor_stat(a.probes[i].inputs, stat), tensor_stat(b.probes[i].inputs, stat), static_cast<int64_t>(i));
      if (bk.changed()) o << bk.line("probes.inputs." + stat);
    }
    if (hash_changes) o << "  probes: content hash changed in " << hash_changes << " of " << a.probes.size() << " batches\n";
  }
  for (const auto& [k, v] : b.hashes) {
    auto it = a.hashes.find(k);
    if (it == a.hashes.end() || it->second != v) o << "  hashes." << k << ": changed\n";
  }
  return o.str();
}

}  // namespace lockstep
