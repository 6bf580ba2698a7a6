#include "gate/selftest.h"

#include <sstream>

#include "compare/compare.h"

namespace lockstep {

namespace {

// The child run of the smoke at `path` writing `out`: the base run's
// request, its data-only pass its own.
ChildRun child(const std::string& path, const std::string& out) {
  ChildRun c;
  c.smoke = path;
  c.out = out;
  return c;
}

}  // namespace

SelftestResult selftest_smoke(const SmokeConfig& config, const std::string& smoke_path, const SelftestOptions& o,
                              Launcher& launcher) {
  SelftestResult r;
  r.smoke = config.name;
  r.perturbed = "the first element of the model's first parameter, one ULP towards +inf before step 0";

  // 1. Sensitivity: the planted change against a plain run, bit for bit.
  RunRecord base = launcher.run(child(smoke_path, o.dir + "/selftest-base.json"));
  ChildRun perturbed = child(smoke_path, o.dir + "/selftest-perturbed.json");
  perturbed.overrides.perturb = "parameter";
  RunRecord moved = launcher.run(perturbed);
  // The built-in trainer moves it before its init statistics: they name it.
  for (const auto& [name, stats] : moved.init)
    if (auto it = base.init.find(name); it != base.init.end() && it->second.xxh3_128 != stats.xxh3_128)
      r.perturbed = name + "[0], one ULP towards +inf before step 0";
  Verdict v = compare_runs(moved, base, {"the perturbed run", "the plain run", "plain run", "perturbed run"});
  r.sensitive = !v.passed();
  r.caught = r.sensitive ? v.first_divergence : "";
  if (v.trace.first >= 0) r.module = v.trace.cells[static_cast<size_t>(v.trace.first)].module;
  if (r.sensitive && r.module.empty())
    r.notes.push_back(v.trace.compared ? "the module trace agrees over the steps it covers: the change was not "
                                         "located to a module"
                                       : "no module trace to name the module (trace.steps 0, or a trainer that does "
                                         "not call ctx.trace_modules(model))");
  if (!r.sensitive)
    r.notes.push_back(config.has_trainer()
                          ? "the perturbed run was bit-identical to the plain one: the helper makes the change in "
                            "ModuleTracer.step(0) (ctx.trace_modules(model)); a trainer without it, or one that "
                            "records nothing the parameter reaches, cannot be checked by this gate"
                          : "the perturbed run was bit-identical to the plain one: nothing this smoke records "
                            "reaches the model's first parameter");

  // 2. Observability: the contract relaxed, counted in distinct results.
  ChildRun relaxed = child(smoke_path, "");
  relaxed.overrides.mode = "default";
  relaxed.overrides.intra_op_threads = o.relaxed_threads;
  r.relaxed_how = "determinism mode default, " + std::to_string(o.relaxed_threads) + " intra-op threads";
  std::vector<RunRecord> runs = run_children(launcher, relaxed, o.dir, "selftest-relaxed", o.relaxed_runs);
  DistinctResults d = distinct_results(runs);
  r.relaxed_runs = static_cast<int>(runs.size());
  r.distinct = static_cast<int>(d.groups.size());
  if (d.groups.size() > 1) r.relaxed_first = d.first_difference[1];
  return r;
}

nlohmann::json to_json(const SelftestResult& r) {
  return {{"smoke", r.smoke},
          {"verdict", r.verdict()},
          {"sensitive", r.sensitive},
          {"caught", r.caught},
          {"module", r.module},
          {"perturbed", r.perturbed},
          {"relaxed",
           {{"runs", r.relaxed_runs},
            {"distinct", r.distinct},
            {"how", r.relaxed_how},
            {"first_difference", r.relaxed_first},
            {"observes", r.distinct > 1}}},
          {"notes", r.notes}};
}

std::string selftest_text(const SelftestResult& r) {
  std::ostringstream out;
  out << "selftest " << r.smoke << ": " << r.verdict() << "\n";
  out << "  planted change (" << r.perturbed << "): ";
  if (r.sensitive)
    out << "caught" << (r.module.empty() ? "" : ", located in module " + r.module) << " — " << r.caught << "\n";
  else
    out << "NOT caught\n";
  out << "  contract relaxed (" << r.relaxed_how << "), " << r.relaxed_runs << " runs: " << r.distinct
      << " distinct result" << (r.distinct == 1 ? "" : "s");
  if (r.distinct > 1)
    out << ": this smoke observes the stack's nondeterminism (first difference: " << r.relaxed_first << ")\n";
  else
    out << ": this smoke cannot observe nondeterminism on this stack (its kernels agree bit for bit even "
           "unpinned; its repeat check shows only that)\n";
  for (const auto& n : r.notes) out << "  note: " << n << "\n";
  return out.str();
}

}  // namespace lockstep
