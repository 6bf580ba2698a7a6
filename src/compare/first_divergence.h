// The order findings are reported in (what caused what) and the verdict's
// one-line first divergence: a changed input first, then where the values
// first moved, data before training, led by the first divergent module.
//
//   std::stable_sort(v.findings.begin(), v.findings.end(), causal_order);
//   v.first_divergence = first_divergence(v);
//   // "input changed: data file wine.csv, xxh3 a… → b…; the values first
//   //  moved at data batch 0: ..."
#pragma once

#include <string>

#include "compare/verdict.h"

namespace lockstep {

/// Whether finding `a` is reported before `b`: a changed input first, then
/// the data (by batch), training (by step; within a step the learning rate,
/// the loss, the gradient norms, the parameter norm), the contract,
/// structure, final hashes and resources; a finding without an index after
/// those with one. A strict weak order: use with std::stable_sort.
bool causal_order(const Finding& a, const Finding& b);

/// The verdict's first divergence from its findings (sorted by
/// causal_order) and module trace: a changed input's detail, with where the
/// values first moved because of it; else where the values first moved,
/// and under another determinism contract why. "" when nothing failed.
std::string first_divergence(const Verdict& v);

}  // namespace lockstep
