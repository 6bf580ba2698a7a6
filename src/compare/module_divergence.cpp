#include "compare/module_divergence.h"

#include <algorithm>
#include <cmath>

#include <nlohmann/json.hpp>

#include "compare/tolerance.h"

namespace lockstep {

namespace {

std::string where(const ModuleTraceEntry& e) {
  return "train step " + std::to_string(e.step) + ", " + trace_phase_name(e.phase) + ", " + e.module;
}

std::string describe(const ModuleTraceEntry& e) {
  return where(e) + " " + nlohmann::json(e.output.shape).dump() + " " + e.output.dtype;
}

// 0, 1 or 2 as in TraceCell::state. An atol/rtol rule is scaled to the
// tensor: rtol applies to max(|value|, M) with M = |mean| + std of the
// reference, and for the sum to its element count times M, so the
// statistics of a normalised output (mean ~ 0) are not held to a
// relative error of their rounding noise.
int cell_state(const TensorStats& run, const TensorStats& ref, const TolerancePolicy& policy) {
  if (run.xxh3_128 == ref.xxh3_128) return 0;
  if (run.nan_count != ref.nan_count || run.inf_count != ref.inf_count) return 2;
  double count = 1;
  for (int64_t d : ref.shape) count *= static_cast<double>(d);
  count -= static_cast<double>(ref.nan_count + ref.inf_count);
  const double scale = std::fabs(ref.mean) + ref.std;
  for (const auto& stat : tensor_stat_names()) {
    Tolerance tol = policy.for_probe("module." + stat);
    double a = tensor_stat(run, stat), g = tensor_stat(ref, stat);
    if (tol.rule == Tolerance::Rule::kClose) {
      double magnitude = std::max(std::fabs(g), stat == "sum" ? count * scale : scale);
      if (!(std::fabs(a - g) <= tol.atol + tol.rtol * magnitude)) return 2;
    } else if (!check_value(a, g, tol, false).pass) {
      return 2;
    }
  }
  return 1;
}

// "sum |Δ| 2.4e-07 (rel 3.1e-09), mean |Δ| ..., min/max moved 0/1 ulp":
// the absolute change too, since the mean of a normalised output is ~0.
std::string how_far(const TensorStats& run, const TensorStats& ref) {
  if (run.nan_count != ref.nan_count || run.inf_count != ref.inf_count)
    return "NaN/Inf counts " + std::to_string(ref.nan_count) + "/" + std::to_string(ref.inf_count) + " → " +
           std::to_string(run.nan_count) + "/" + std::to_string(run.inf_count);
  std::string out;
  for (const char* stat : {"sum", "mean", "std"}) {
    ValueCheck c = check_value(tensor_stat(run, stat), tensor_stat(ref, stat), Tolerance::exact(), false);
    out += std::string(out.empty() ? "" : ", ") + stat + " |Δ| " + format_error(c.abs_err) + " (rel " +
           format_error(c.rel_err) + ")";
  }
  bool f32 = ref.dtype == "float32";
  uint64_t lo = check_value(run.min, ref.min, Tolerance::exact(), f32).ulps;
  uint64_t hi = check_value(run.max, ref.max, Tolerance::exact(), f32).ulps;
  return out + ", min/max moved " + std::to_string(lo) + "/" + std::to_string(hi) + " ulp" +
         (f32 ? "" : " (" + ref.dtype + ")");
}

// Cell i of `ref` in words. `previous`: the entry before it in execution
// order whose output agreed (-1: none), to say where what flowed in moved.
std::string summarise(const ModuleTraceEntry& run, const ModuleTraceEntry& ref, bool beyond,
                      const ModuleTraceEntry* previous) {
  bool same_input = run.input_xxh3 == ref.input_xxh3;
  std::string input = same_input ? "input identical" : beyond ? "input within tolerance" : "input differs too";
  std::string out = where(ref) + ": " + input + ", output differs (" + how_far(run.output, ref.output) + ")";
  if (beyond) out += ", beyond the probe tolerances";
  if (same_input && ref.step > 0 && ref.phase == TracePhase::kForward)
    out += "; what flowed in agrees, so the module's parameters (updated at step " + std::to_string(ref.step - 1) +
           ") or its kernel moved";
  if (!same_input && !beyond) {
    bool batch = ref.phase == TracePhase::kForward && (!previous || previous->step != ref.step);
    if (batch)
      out += "; it is the step's first traced module and what flowed in (the batch, or code before the first "
             "module) already differs";
    else
      out += "; what flowed in moved after " + where(*previous) +
             ", which agrees: in code outside the traced modules (a functional op, the loss, an in-place op)";
  }
  return out;
}

// "train step 0, forward, fc: aten.addmm.default (op 2 of fc's 2 ops)":
// op `i` of `ops`, with its place among the ops of its step, phase and
// module.
std::string op_in_words(const std::vector<OpTraceEntry>& ops, size_t i) {
  const OpTraceEntry& o = ops[i];
  size_t k = 0, n = 0;
  for (size_t j = 0; j < ops.size(); ++j) {
    const OpTraceEntry& x = ops[j];
    if (x.step != o.step || x.phase != o.phase || x.module != o.module) continue;
    ++n;
    if (j <= i) ++k;
  }
  std::string where = "train step " + std::to_string(o.step) + ", " + o.phase;
  std::string scope;
  if (!o.module.empty()) {
    where += ", " + o.module;
    scope = o.module + "'s " + std::to_string(n) + " ops";
  } else if (o.phase == "forward") {
    where += ", outside a submodule";
    scope = "the step's " + std::to_string(n) + " forward ops outside a submodule";
  } else {
    scope = "the step's " + std::to_string(n) + " " + o.phase + " ops";
  }
  return where + ": " + o.op + " (op " + std::to_string(k) + " of " + scope + ")";
}

}  // namespace

void locate_first_op(const ModuleTrace& run, const ModuleTrace& ref, ModuleDivergence& d) {
  if (run.ops.empty() && ref.ops.empty()) {
    if (!run.ops_not_traced.empty() || !ref.ops_not_traced.empty())
      d.op_note = "op trace: not recorded: " + (!ref.ops_not_traced.empty() ? ref.ops_not_traced : run.ops_not_traced);
    return;
  }
  if (run.ops.empty() || ref.ops.empty()) {
    const ModuleTrace& missing = ref.ops.empty() ? ref : run;
    d.op_note = std::string("op trace: the ") + (ref.ops.empty() ? "golden" : "run") + " has none" +
                (missing.ops_not_traced.empty() ? " (made without trace.ops, or by a helper that records none)"
                                                 : ": " + missing.ops_not_traced);
    return;
  }
  const int64_t steps = std::min(run.steps, ref.steps);
  auto within = [steps](const std::vector<OpTraceEntry>& ops) {
    return static_cast<size_t>(std::count_if(ops.begin(), ops.end(), [steps](const OpTraceEntry& o) { return o.step < steps; }));
  };
  const size_t run_n = within(run.ops), ref_n = within(ref.ops);
  for (size_t i = 0; i < std::min(run_n, ref_n); ++i) {
    const OpTraceEntry& a = run.ops[i];
    const OpTraceEntry& g = ref.ops[i];
    if (a.step != g.step || a.phase != g.phase || a.module != g.module || a.op != g.op) {
      d.op_note = "op trace: the op sequences part at op " + std::to_string(i) + " (golden " + op_in_words(ref.ops, i) +
                  ", run " + op_in_words(run.ops, i) + "): another op ran there; compared up to there";
      d.ops_differ = true;
      return;
    }
    if (a.output_xxh3 != g.output_xxh3) {
      d.first_op = op_in_words(ref.ops, i);
      d.first_op_step = g.step;
      return;
    }
  }
  // Every op both hold agrees: one side ran more (or dropped other counts).
  if (run_n != ref_n || run.ops_dropped != ref.ops_dropped) {
    d.op_note = "op trace: the golden holds " + std::to_string(ref_n) + " ops in the steps both traced (" +
                std::to_string(ref.ops_dropped) + " left out), the run " + std::to_string(run_n) + " (" +
                std::to_string(run.ops_dropped) + " left out); the ops both hold agree";
    d.ops_differ = true;
  }
}

ModuleDivergence locate_module_divergence(const ModuleTrace& run, const ModuleTrace& ref,
                                          const TolerancePolicy& policy, bool exact) {
  ModuleDivergence d;
  if (ref.entries.empty() || run.entries.empty()) {
    const ModuleTrace& missing = ref.entries.empty() ? ref : run;
    const char* who = ref.entries.empty() ? "golden" : "run";
    if (!missing.not_traced.empty()) d.note = std::string("module trace: the ") + who + "'s model was not traced: " + missing.not_traced;
    else if (!(ref.entries.empty() && run.entries.empty()))
      d.note = std::string("module trace: the ") + who + " has none" +
               (ref.entries.empty() ? " (made before lockstep traced modules, or with trace.steps 0: re-bless to record one)" : "");
    return d;
  }
  d.compared = true;
  const int64_t steps = std::min(run.steps, ref.steps);
  size_t n = std::min(run.entries.size(), ref.entries.size());
  for (size_t i = 0; i < n; ++i) {
    const ModuleTraceEntry& a = run.entries[i];
    const ModuleTraceEntry& g = ref.entries[i];
    if (g.step >= steps || a.step >= steps) {
      n = i;
      break;
    }
    if (a.step != g.step || a.phase != g.phase || a.module != g.module || a.output.shape != g.output.shape ||
        a.output.dtype != g.output.dtype) {
      d.note = "module trace: the traces part in structure at entry " + std::to_string(i) + " (golden " +
               describe(g) + ", run " + describe(a) + "): the model or its call order changed; compared up to there";
      d.structure_differs = true;
      n = i;
      break;
    }
    TraceCell c{g.step, g.phase, g.module, cell_state(a.output, g.output, policy)};
    if (exact && c.state == 1) c.state = 2;  // in an exact lane any moved bit is a difference
    d.cells.push_back(c);
    const ModuleTraceEntry* previous = i > 0 ? &ref.entries[i - 1] : nullptr;
    if (c.state >= 1 && d.first_bits < 0) {
      d.first_bits = static_cast<int64_t>(i);
      d.bits_summary = summarise(a, g, false, previous);
    }
    bool diverged = exact ? c.state >= 1 : c.state == 2;
    if (diverged && d.first < 0) {
      d.first = static_cast<int64_t>(i);
      d.summary = summarise(a, g, !exact, previous);
      d.change = how_far(a.output, g.output);
    }
  }
  // Within the steps both traced, one trace may simply hold more entries.
  auto within = [steps](const ModuleTrace& t) {
    size_t k = 0;
    for (const auto& e : t.entries) k += e.step < steps ? 1 : 0;
    return k;
  };
  if (!d.structure_differs && within(run) != within(ref)) {
    d.structure_differs = true;
    d.note = "module trace: in the steps both traced the golden holds " + std::to_string(within(ref)) +
             " entries, the run " + std::to_string(within(run)) + "; compared the first " + std::to_string(n);
  }
  if (run.steps != ref.steps && d.note.empty())
    d.note = "module trace: the golden traced " + std::to_string(ref.steps) + " steps, the run " +
             std::to_string(run.steps) + "; compared the first " + std::to_string(steps);
  if (exact) {  // one rule: the first divergence is the first moved entry
    d.first_bits = -1;
    d.bits_summary.clear();
    locate_first_op(run, ref, d);
  }
  return d;
}

}  // namespace lockstep
