// What a run is judged and guarded by: "distributed", "trace" and the
// names under "tolerance" (smoke/config_sections.h).
#include "smoke/config_sections.h"

#include <algorithm>
#include <charconv>
#include <cctype>
#include <cstdlib>
#include <filesystem>

#include "core/error.h"
#include "core/hash.h"
#include "core/json_io.h"
#include "machine/driver_version.h"
#include "smoke/config_keys.h"
#include "smoke/golden_store.h"

namespace lockstep {

// Tolerance keys must name a series the trainer records or a probe
// statistic: a typo would otherwise silently leave the default in force.
void check_tolerance_names(const JsonView& t, const SmokeConfig& c) {
  std::vector<std::string> series = {"default", "loss", "grad_norm", "grad_norm/*", "param_norm", "lr"};
  if (c.has_trainer()) {
    series = {"default"};
    for (const auto& [name, tag] : c.trainer.series) series.push_back(name);
  }
  static const std::vector<std::string> stats = {"sum", "mean", "std", "min", "max"};
  if (t.has("series")) {
    for (const auto& k : t.at("series").keys()) {
      if (c.has_trainer()) {
        if (std::find(series.begin(), series.end(), k) != series.end()) continue;
        std::string hint = closest_spelling(k, series);
        std::string names;
        for (const auto& n : series) names += (names.empty() ? "" : ", ") + n;
        t.at("series").at(k).fail("a series of trainer.metrics.series: " + names +
                                  (hint.empty() ? std::string() : " (did you mean '" + hint + "'?)"));
      }
      if (std::find(series.begin(), series.end(), k) != series.end() || k.rfind("grad_norm/", 0) == 0) continue;
      std::string hint = closest_spelling(k, series);
      t.at("series").at(k).fail("a recorded series: default, loss, grad_norm, grad_norm/<parameter>, grad_norm/*, "
                                "param_norm or lr" + (hint.empty() ? std::string() : " (did you mean '" + hint + "'?)"));
    }
  }
  if (t.has("probes")) {
    std::vector<std::string> fields = {"default"};
    for (const char* part : {"inputs", "labels", "module"})  // module.<stat>: module traces (docs/module-trace.md)
      for (const auto& s : stats) fields.push_back(std::string(part) + "." + s);
    for (const auto& k : t.at("probes").keys()) {
      if (std::find(fields.begin(), fields.end(), k) != fields.end()) continue;
      std::string hint = closest_spelling(k, fields);
      t.at("probes").at(k).fail("default or inputs|labels|module.sum|mean|std|min|max" +
                                (hint.empty() ? std::string() : " (did you mean '" + hint + "'?)"));
    }
  }
}

// The "distributed" section (spec/distributed_spec.h).
void read_distributed(const JsonView& d, SmokeConfig& c) {
  d.allow_keys(keys_under("distributed"));
  DistributedSpec& s = c.distributed;
  s.configured = true;
  s.world_size = static_cast<int>(d.at("world_size").as_int(1, 64));
  if (d.has("backend")) s.backend = d.at("backend").as_enum({"gloo", "nccl"});
  else s.backend = c.device == "cuda" ? "nccl" : "gloo";
  if (s.backend == "nccl" && c.device != "cuda")
    d.at("backend").fail("\"gloo\" with device \"cpu\" (NCCL runs on CUDA devices only)");
  if (s.backend == "gloo" && c.device == "cuda")
    d.at("backend").fail("\"nccl\" with device \"cuda\" (lockstep runs Gloo on the CPU only)");
  if (d.has("timeout_s")) s.timeout_s = d.at("timeout_s").as_int(1, 86400);
  if (d.has("self_test")) {
    JsonView t = d.at("self_test");
    t.allow_keys(keys_under("distributed.self_test"));
    s.self_test.fault = t.at("fault").as_enum({"skip_allreduce", "nan_loss", "kill", "hang"});
    s.self_test.rank = static_cast<int>(t.at("rank").as_int(0, s.world_size - 1));
    s.self_test.step = t.at("step").as_int(0, c.steps - 1);
    if (c.has_trainer())
      t.fail("no self_test beside \"trainer\": the faults are injected by lockstep's built-in trainer "
             "(a team trainer proves its own checks, e.g. with a bug switch)");
  }
}

// The "trace" section (spec/train_specs.h TraceSpec, docs/module-trace.md).
void read_trace(const JsonView& t, SmokeConfig& c) {
  t.allow_keys(keys_under("trace"));
  TraceSpec& s = c.trace;
  if (t.has("steps")) s.steps = t.at("steps").as_int(0, std::min<int64_t>(kMaxTraceSteps, c.steps));
  if (t.has("digests")) s.digests = t.at("digests").as_bool();
  if (t.has("ops")) {
    s.ops = t.at("ops").as_bool();
    if (s.ops && !c.has_trainer())
      t.at("ops").fail("false beside a built-in smoke: per-op hashes are recorded by the Python helper under "
                       "torch's DebugMode (a trainer smoke); the built-in trainer traces modules");
    if (s.ops && s.steps == 0) t.at("ops").fail("false with trace.steps 0 (ops are hashed in the traced steps)");
  }
  if (t.has("self_test")) {
    JsonView st = t.at("self_test");
    st.allow_keys(keys_under("trace.self_test"));
    s.self_test_module = st.at("module").as_string();
    if (s.self_test_module.empty() || s.self_test_module.size() > 256)
      st.at("module").fail("a module path of 1 to 256 characters (e.g. \"conv\")");
    if (s.steps == 0) t.at("steps").fail("at least 1 with a self_test (it perturbs a traced step)");
    s.self_test_step = st.at("step").as_int(0, s.steps - 1);
    if (st.has("phase"))
      s.self_test_phase = st.at("phase").as_enum({"forward", "backward"}) == "forward" ? TracePhase::kForward
                                                                                      : TracePhase::kBackward;
    if (c.has_trainer())
      st.fail("no self_test beside \"trainer\": the one-ULP perturbation is made by lockstep's built-in trainer");
  }
}

void check_rank_checkpoints(const JsonView& v, const SmokeConfig& c) {
  // Each rank of a team trainer stops and resumes its own state (its
  // generators, its sampler position): one shared checkpoint path would
  // have the ranks overwrite one file, or resume from another's.
  if (c.distributed.configured && c.has_trainer() && !c.trainer.resume_stop.empty())
    for (const char* part : {"stop", "continue"}) {
      JsonView args = v.at("trainer").at("resume").at(part);
      bool has_rank = false;
      for (size_t i = 0; i < args.size(); ++i) {
        std::string a = args.at(i).as_string();
        has_rank = has_rank || a.find("{rank}") != std::string::npos;
        if (a.find("{checkpoint}") != std::string::npos && a.find("{rank}") == std::string::npos)
          args.at(i).fail("{rank} beside {checkpoint} in a multi-rank smoke (each rank saves and resumes its own "
                          "file, e.g. \"{checkpoint}.rank-{rank}\"), got \"" + input_excerpt(a) + "\"");
      }
      if (!has_rank)
        args.fail("an argument with {rank} in a multi-rank smoke, the path of each rank's own checkpoint (e.g. "
                  "\"{checkpoint}.rank-{rank}\"): one path shared by the ranks would have them overwrite one file");
    }
}

}  // namespace lockstep
