#include "compare/batch_sweep_report.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

namespace lockstep {

namespace {

std::string describe_cell(const SweepCell& c, int64_t batch) {
  std::string s = "at " + std::to_string(c.size) + ": " + std::to_string(c.samples_differ) + " of " +
                  std::to_string(batch) + " samples differ";
  if (c.max_ulp > 0) {
    char abs[32];
    std::snprintf(abs, sizeof abs, "%.3g", c.max_abs);
    // No finite |Δ| where only a NaN or an infinity moved.
    s += ", max " + std::to_string(c.max_ulp) + " ulp (" +
         (c.max_abs > 0 ? "|Δ| " + std::string(abs) : std::string("a NaN or an infinity differs")) + ")";
  }
  return s;
}

// "fc1 (Linear)"; the model's own row "(model output, Net)".
std::string label(const ModuleSweep& m) {
  if (!m.module.empty() && m.module.front() == '(' && m.module.back() == ')' && !m.type.empty())
    return m.module.substr(0, m.module.size() - 1) + ", " + m.type + ")";
  return m.module + (m.type.empty() ? "" : " (" + m.type + ")");
}

}  // namespace

std::string render_batch_sweep(const BatchSweep& s) {
  std::ostringstream o;
  std::string pieces;
  for (size_t k = 1; k < s.sizes.size(); ++k) pieces += (pieces.empty() ? "" : ", ") + std::to_string(s.sizes[k]);
  o << "batch sweep " << s.smoke << " (" << s.device << "): the first batch, " << s.batch
    << " samples, forwarded whole and in pieces of " << pieces
    << " (eval mode: no dropout; a BatchNorm on its running statistics); each sample's output of each module held "
       "bit for bit to the whole batch's\n";
  size_t width = 0;
  for (const auto& m : s.modules) width = std::max(width, label(m).size());
  for (const auto& m : s.modules) {
    o << "  " << label(m) << std::string(width + 2 - label(m).size(), ' ');
    const std::string whole = m.per_sample ? "" : " (no batch dimension: compared whole)";
    if (m.first_size_differing() == 0) {
      o << "batch-invariant" << whole << "\n";
      continue;
    }
    o << (m.first_size_originating() == 0 ? "differs only as its input does (an earlier module's difference, carried "
                                            "on):"
                                          : "not batch-invariant:");
    std::string cells;
    for (const auto& c : m.cells)
      if (c.samples_differ > 0) cells += (cells.empty() ? " " : "; ") + describe_cell(c, s.batch);
    o << cells << whole << "\n";
  }
  if (s.invariant()) {
    o << s.smoke << ": BATCH-INVARIANT on this stack (exit 0)\n";
    return o.str();
  }
  // The verdict names where a difference starts: the first module whose
  // input was the whole batch's and whose output was not.
  const ModuleSweep* first = nullptr;
  for (const auto& m : s.modules)
    if (!first && m.first_size_originating() != 0) first = &m;
  for (const auto& m : s.modules)
    if (!first && m.first_size_differing() != 0) first = &m;
  const int64_t at = first->first_size_originating() != 0 ? first->first_size_originating() : first->first_size_differing();
  uint64_t ulp = 0;
  for (const auto& c : first->cells)
    if (c.size == at) ulp = c.max_ulp;
  o << s.smoke << ": NOT BATCH-INVARIANT (exit 1): " << label(*first) << " is not batch-invariant on this stack at batch "
    << at << (ulp > 0 ? " (max " + std::to_string(ulp) + " ulp)" : std::string()) << "\n";
  o << "  note: not a regression of the golden: a sample's result here depends on the batch around it. A gate that "
       "trains at one fixed batch size is unaffected; it matters where the batch changes: serving (requests batched "
       "together), and equivalence lanes that split the batch (micro-batches, ranks), which cannot agree bit for "
       "bit past this module (docs/equivalence.md)\n";
  return o.str();
}

}  // namespace lockstep
