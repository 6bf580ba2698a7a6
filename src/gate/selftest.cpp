#include "gate/selftest.h"

#include <algorithm>
#include <sstream>

#include "compare/compare.h"
#include "record/batch_probe.h"

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

// 1. The planted parameter change against the plain run `base`, bit for bit.
void check_parameter_change(const SmokeConfig& config, const std::string& smoke_path, const SelftestOptions& o,
                            Launcher& launcher, const RunRecord& base, SelftestResult& r) {
  r.perturbed = "the first element of the model's first parameter, one ULP towards +inf before step 0";
  ChildRun perturbed = child(smoke_path, o.dir + "/selftest-perturbed.json");
  perturbed.overrides.perturb = "parameter";
  RunRecord moved = launcher.run(perturbed);
  // The built-in trainer moves it before its init statistics: they name
  // it; a trainer's helper says it (fingerprint field perturb.parameter).
  for (const auto& [name, stats] : moved.init)
    if (auto it = base.init.find(name); it != base.init.end() && it->second.xxh3_128 != stats.xxh3_128)
      r.perturbed = name + "[0], one ULP towards +inf before step 0";
  if (auto said = moved.fingerprint.find("perturb.parameter"); said != moved.fingerprint.end())
    r.perturbed = said->second.value;
  Verdict v = compare_runs(moved, base, {"the perturbed run", "the plain run", "plain run", "perturbed run"});
  r.parameter_caught = !v.passed();
  r.caught = r.parameter_caught ? v.first_divergence : "";
  if (v.trace.first >= 0) r.module = v.trace.cells[static_cast<size_t>(v.trace.first)].module;
  if (r.parameter_caught && r.module.empty())
    r.notes.push_back(v.trace.compared ? "the module trace agrees over the steps it covers: the change was not "
                                         "located to a module"
                                       : "no module trace to name the module (trace.steps 0, or a trainer that does "
                                         "not call ctx.trace_modules(model))");
  if (!r.parameter_caught)
    r.notes.push_back(config.has_trainer()
                          ? "the perturbed run was bit-identical to the plain one: the helper makes the change in "
                            "ModuleTracer.step(0) (ctx.trace_modules(model)); a trainer without it, or one that "
                            "records nothing the parameter reaches, cannot be checked by this gate"
                          : "the perturbed run was bit-identical to the plain one: nothing this smoke records "
                            "reaches the model's first parameter");
}

// 2. The data-only pass's first sample moved, against the plain run's
// batch probes. A trainer smoke without a data-only pass skips it.
void check_data_change(const SmokeConfig& config, const std::string& smoke_path, const SelftestOptions& o,
                       Launcher& launcher, const RunRecord& base, SelftestResult& r) {
  if (config.has_trainer() && !config.trainer.has_data_pass()) {
    r.notes.push_back("no data-only pass (trainer.probes unset): the data control does not apply, and nothing "
                      "checks the batches this trainer reads");
    return;
  }
  r.data_checked = true;
  ChildRun perturbed = child(smoke_path, o.dir + "/selftest-perturbed-data.json");
  perturbed.overrides.perturb = "data";
  RunRecord moved = launcher.run(perturbed);
  auto said = moved.fingerprint.find("perturb.data");
  r.data_perturbed = said != moved.fingerprint.end() ? said->second.value : "nothing (the record does not say)";
  for (size_t i = 0; i < std::max(moved.probes.size(), base.probes.size()) && !r.data_caught; ++i) {
    std::string d = i < moved.probes.size() && i < base.probes.size()
                        ? batch_content_difference(base.probes[i], moved.probes[i])
                        : "the perturbed run has " + std::to_string(moved.probes.size()) + " batches, the plain run " +
                              std::to_string(base.probes.size());
    if (!d.empty()) {
      r.data_caught = true;
      r.data_caught_at = "data batch " + std::to_string(i) + ": " + d;
    }
  }
  if (r.data_caught) return;
  if (r.data_perturbed.rfind("nothing", 0) == 0)
    r.notes.push_back("the data control moved nothing: " + r.data_perturbed);
  else
    r.notes.push_back("the data-only pass's probes were bit-identical although a sample moved: they do not follow "
                      "the samples the dataset returns (probes of indices or labels only, or of a tensor taken "
                      "before the dataset made the sample?); a change of the data or of its transform would pass "
                      "this smoke unseen");
}

}  // namespace

SelftestResult selftest_smoke(const SmokeConfig& config, const std::string& smoke_path, const SelftestOptions& o,
                              Launcher& launcher) {
  SelftestResult r;
  r.smoke = config.name;
  RunRecord base = launcher.run(child(smoke_path, o.dir + "/selftest-base.json"));
  // 0. The plain runs must repeat bit for bit, or no planted change can
  // be told from the smoke's own nondeterminism.
  RunRecord again = launcher.run(child(smoke_path, o.dir + "/selftest-base-2.json"));
  if (std::string d = first_bit_difference(again, base, "the second plain run", "the first"); !d.empty()) {
    r.repeatable = false;
    r.notes.push_back("the plain runs differ (" + d + "): no planted change can be told from the smoke's own "
                      "nondeterminism; `lockstep check` says where it starts, and selftest means something once the "
                      "runs repeat bit for bit");
    return r;
  }
  check_parameter_change(config, smoke_path, o, launcher, base, r);
  check_data_change(config, smoke_path, o, launcher, base, r);
  r.sensitive = r.parameter_caught && (!r.data_checked || r.data_caught);

  // 3. Observability: the contract relaxed, counted in distinct results.
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
          {"repeatable", r.repeatable},
          {"sensitive", r.sensitive},
          {"caught", r.caught},
          {"module", r.module},
          {"perturbed", r.perturbed},
          {"data",
           {{"checked", r.data_checked},
            {"caught", r.data_caught},
            {"perturbed", r.data_perturbed},
            {"first_difference", r.data_caught_at}}},
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
  if (!r.repeatable) {
    out << "selftest " << r.smoke << ": " << r.verdict() << " (its plain runs differ: nothing planted was judged)\n";
    for (const auto& n : r.notes) out << "  note: " << n << "\n";
    return out.str();
  }
  out << "selftest " << r.smoke << ": " << r.verdict()
      << (r.sensitive ? " (it catches a planted one-ULP change of a parameter" +
                            std::string(r.data_checked ? " and of a data sample" : "") + ")"
                      : " (a planted change went unseen: see the notes)")
      << "\n";
  out << "  planted change (" << r.perturbed << "): ";
  if (r.parameter_caught)
    out << "caught" << (r.module.empty() ? "" : ", located in module " + r.module) << " — " << r.caught << "\n";
  else
    out << "NOT caught\n";
  if (r.data_checked)
    out << "  planted data change (" << r.data_perturbed << "): "
        << (r.data_caught ? "caught — " + r.data_caught_at : std::string("NOT caught")) << "\n";
  out << "  contract relaxed (" << r.relaxed_how << "), " << r.relaxed_runs << " runs: " << r.distinct
      << " distinct result" << (r.distinct == 1 ? "" : "s");
  if (r.distinct > 1)
    out << ": this smoke observes the stack's nondeterminism (first difference: " << r.relaxed_first << ")\n";
  else
    out << ": this smoke cannot observe nondeterminism on this stack (its kernels agree bit for bit even "
           "unpinned; its repeat check shows only that: nothing to fix, but a nondeterministic kernel of this stack "
           "would not show in it)\n";
  for (const auto& n : r.notes) out << "  note: " << n << "\n";
  return out.str();
}

}  // namespace lockstep
