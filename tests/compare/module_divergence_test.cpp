#include "compare/module_divergence.h"

#include <gtest/gtest.h>

#include <cmath>
#include <tuple>

#include "../record_builder.h"
#include "compare/compare.h"

namespace lockstep {
namespace {

std::string hex(char c) { return std::string(32, c); }

TensorStats stats(char hash, double mean, double sd = 1.0) {
  TensorStats s;
  s.shape = {4, 8};
  s.dtype = "float32";
  s.xxh3_128 = hex(hash);
  s.sum = mean * 32;
  s.mean = mean;
  s.std = sd;
  s.min = mean - 2;
  s.max = mean + 2;
  return s;
}

// conv -> bn -> fc forward, then fc, bn backward, for `steps` steps;
// outputs hashed 'a', 'b', ... in order, each input the previous output.
ModuleTrace chain(int steps) {
  ModuleTrace t;
  t.steps = steps;
  char h = 'a';
  for (int s = 0; s < steps; ++s) {
    std::string in = hex('0');
    for (const char* m : {"conv", "bn", "fc"}) {
      t.entries.push_back({s, TracePhase::kForward, m, in, stats(h, 0.5), -1});
      in = hex(h++);
    }
    for (const char* m : {"fc", "bn"}) {
      t.entries.push_back({s, TracePhase::kBackward, m, in, stats(h, 0.01), -1});
      in = hex(h++);
    }
  }
  return t;
}

TEST(ModuleDivergence, IdenticalTracesHaveNoDivergence) {
  ModuleTrace t = chain(2);
  ModuleDivergence d = locate_module_divergence(t, t, {}, true);
  EXPECT_TRUE(d.compared);
  EXPECT_EQ(d.cells.size(), 10u);
  EXPECT_EQ(d.first, -1);
  EXPECT_EQ(d.summary, "");
}

TEST(ModuleDivergence, TheFirstMovedOutputWithAnIdenticalInputIsNamedExactly) {
  ModuleTrace golden = chain(2), run = chain(2);
  // bn's output at step 0 moves by one float32 ULP in its max; fc's input is that output.
  run.entries[1].output.xxh3_128 = hex('x');
  run.entries[1].output.max = std::nextafter(static_cast<float>(golden.entries[1].output.max), 10.0f);
  run.entries[2].input_xxh3 = hex('x');
  run.entries[2].output.xxh3_128 = hex('y');
  ModuleDivergence d = locate_module_divergence(run, golden, {}, true);
  EXPECT_EQ(d.first, 1);
  EXPECT_EQ(d.summary,
            "train step 0, forward, bn: input identical, output differs (sum |Δ| 0 (rel 0), mean |Δ| 0 (rel 0), std "
            "|Δ| 0 (rel 0), min/max moved 0/1 ulp)");
  EXPECT_EQ(d.cells[1].state, 2);  // exact: any moved bit
  EXPECT_EQ(d.cells[2].state, 2);
  EXPECT_EQ(d.cells[0].state, 0);
  EXPECT_EQ(locate_module_divergence(run, golden, {}, false).cells[1].state, 1);  // across stacks: within tolerance
}

TEST(ModuleDivergence, AcrossStacksTheFirstEntryBeyondToleranceIsNamedAndTheFirstBitMoveIsKept) {
  ModuleTrace golden = chain(1), run = chain(1);
  run.entries[0].output.xxh3_128 = hex('x');  // conv: bits only
  run.entries[1].input_xxh3 = hex('x');
  run.entries[1].output.xxh3_128 = hex('y');  // bn: the mean moves by 1e-3 of its scale
  run.entries[1].output.mean += 1.5e-3;
  ModuleDivergence d = locate_module_divergence(run, golden, {}, /*exact=*/false);
  EXPECT_EQ(d.first_bits, 0);
  EXPECT_EQ(d.bits_summary.rfind("train step 0, forward, conv: input identical, output differs (", 0), 0u)
      << d.bits_summary;
  EXPECT_EQ(d.first, 1);
  EXPECT_EQ(d.summary.rfind("train step 0, forward, bn: input within tolerance, output differs (", 0), 0u) << d.summary;
  EXPECT_NE(d.summary.find("), beyond the probe tolerances"), std::string::npos);
  EXPECT_EQ(d.cells[1].state, 2);
}

TEST(ModuleDivergence, ANearZeroMeanIsHeldToTheTensorsScaleNotItsOwnMagnitude) {
  ModuleTrace golden = chain(1), run = chain(1);
  golden.entries[1].output.mean = 1e-9;  // a normalised output
  golden.entries[1].output.sum = 32e-9;
  run.entries[1] = golden.entries[1];
  run.entries[1].output.xxh3_128 = hex('y');
  run.entries[1].output.mean = 3e-9;  // rounding noise: rel 2, but 2e-9 of the scale
  run.entries[1].output.sum = 96e-9;
  ModuleDivergence d = locate_module_divergence(run, golden, {}, false);
  EXPECT_EQ(d.first, -1);
  EXPECT_EQ(d.first_bits, 1);
}

TEST(ModuleDivergence, WhereWhatFlowedInMovedIsSaid) {
  ModuleTrace golden = chain(1), run = chain(1);
  // Between fc's forward and fc's backward (the loss, outside the modules).
  run.entries[3].input_xxh3 = hex('q');
  run.entries[3].output.xxh3_128 = hex('r');
  ModuleDivergence d = locate_module_divergence(run, golden, {}, true);
  EXPECT_EQ(d.first, 3);
  EXPECT_NE(d.summary.find("train step 0, backward, fc: input differs too, output differs ("), std::string::npos);
  EXPECT_NE(d.summary.find("; what flowed in moved after train step 0, forward, fc, which agrees: in code outside "
                           "the traced modules (a functional op, the loss, an in-place op)"),
            std::string::npos)
      << d.summary;
  // The first module of a step: the batch.
  ModuleTrace batch = chain(1);
  batch.entries[0].input_xxh3 = hex('q');
  batch.entries[0].output.xxh3_128 = hex('r');
  ModuleDivergence b = locate_module_divergence(batch, golden, {}, true);
  EXPECT_NE(b.summary.find("; it is the step's first traced module and what flowed in (the batch, or code before "
                           "the first module) already differs"),
            std::string::npos)
      << b.summary;
}

TEST(ModuleDivergence, AnotherModelIsAStructuralNoteAndComparedUpToThere) {
  ModuleTrace golden = chain(1), run = chain(1);
  run.entries[2].module = "head";
  ModuleDivergence d = locate_module_divergence(run, golden, {}, true);
  EXPECT_EQ(d.cells.size(), 2u);
  EXPECT_EQ(d.note,
            "module trace: the traces part in structure at entry 2 (golden train step 0, forward, fc [4,8] float32, "
            "run train step 0, forward, head [4,8] float32): the model or its call order changed; compared up to "
            "there");
  EXPECT_TRUE(d.structure_differs);
  // In an exact lane that is a failure of its own; a trace with fewer
  // entries in the same steps too.
  RunRecord g = testing::make_record({2.5});
  g.module_trace = golden;
  RunRecord r = g;
  r.module_trace = run;
  Verdict v = compare_records(r, g, {});
  EXPECT_FALSE(v.passed());
  ModuleTrace shorter = chain(1);
  shorter.entries.pop_back();
  ModuleDivergence s = locate_module_divergence(shorter, golden, {}, true);
  EXPECT_TRUE(s.structure_differs);
  EXPECT_EQ(s.note, "module trace: in the steps both traced the golden holds 5 entries, the run 4; compared the first 4");
  r.module_trace = shorter;
  EXPECT_FALSE(compare_records(r, g, {}).passed());
}

TEST(ModuleDivergence, AGoldenWithoutATraceIsANote) {
  ModuleTrace none;
  ModuleDivergence d = locate_module_divergence(chain(1), none, {}, true);
  EXPECT_FALSE(d.compared);
  EXPECT_EQ(d.note,
            "module trace: the golden has none (made before lockstep traced modules, or with trace.steps 0: "
            "re-bless to record one)");
}

TEST(ModuleDivergence, TheFirstDivergenceLineLeadsWithTheModule) {
  RunRecord g = testing::make_record({2.5, 2.25});
  g.module_trace = chain(1);
  RunRecord r = g;
  r.series["loss"].values[1] = std::nextafter(2.25f, 3.0f);
  r.module_trace.entries[3].output.xxh3_128 = hex('z');  // fc backward
  Verdict v = compare_records(r, g, {});
  ASSERT_FALSE(v.passed());
  EXPECT_EQ(v.first_divergence.rfind("train step 0, backward, fc: input identical, output differs (", 0), 0u)
      << v.first_divergence;
  EXPECT_NE(v.first_divergence.find(" — the metrics first moved at train step 1: loss"), std::string::npos)
      << v.first_divergence;
  // A difference only the trace shows is still a failure in an exact lane.
  RunRecord only = g;
  only.module_trace.entries[0].output.xxh3_128 = hex('z');
  Verdict w = compare_records(only, g, {});
  EXPECT_FALSE(w.passed());
  EXPECT_EQ(w.first_divergence.rfind("train step 0, forward, conv: input identical, output differs (", 0), 0u)
      << w.first_divergence;
}

// Per-op hashes (trace.ops): ops of one step in execution order, forward
// (with modules), backward, optimizer; hashed 'A', 'B', ...
std::vector<OpTraceEntry> ops_of_step(int64_t step) {
  std::vector<OpTraceEntry> ops;
  char h = static_cast<char>('A' + step * 8);
  for (auto [phase, module, op] : std::vector<std::tuple<const char*, const char*, const char*>>{
           {"forward", "fc", "aten.t.default"}, {"forward", "fc", "aten.addmm.default"},
           {"forward", "", "aten.sum.default"}, {"backward", "", "aten.mm.default"},
           {"backward", "", "aten.sum.dim_IntList"}, {"optimizer", "", "aten.add_.Tensor"},
           {"optimizer", "", "aten.add_.Tensor"}})
    ops.push_back({step, phase, module, op, hex(h++), -1});
  return ops;
}

TEST(ModuleDivergence, TheFirstOpWhoseBitsMovedIsNamedWithItsPlace) {
  RunRecord g = testing::make_record({2.5, 2.25});
  g.module_trace = chain(2);
  g.module_trace.ops = ops_of_step(0);
  for (auto& o : ops_of_step(1)) g.module_trace.ops.push_back(o);
  RunRecord r = g;
  // The optimizer's second update at step 0 moved; step 1's fc forward then differs.
  r.module_trace.ops[6].output_xxh3 = hex('z');
  r.module_trace.entries[5].output.xxh3_128 = hex('z');
  r.series["loss"].values[1] = std::nextafter(2.25f, 3.0f);
  ModuleDivergence d = locate_module_divergence(r.module_trace, g.module_trace, {}, true);
  EXPECT_EQ(d.first_op, "train step 0, optimizer: aten.add_.Tensor (op 2 of the step's 2 optimizer ops)");
  Verdict v = compare_records(r, g, {});
  EXPECT_NE(v.first_divergence.find("; the first op whose output bits differ: train step 0, optimizer: "
                                    "aten.add_.Tensor (op 2 of the step's 2 optimizer ops)"),
            std::string::npos)
      << v.first_divergence;
  // A forward op is named with its module.
  r.module_trace.ops = g.module_trace.ops;
  r.module_trace.ops[8].output_xxh3 = hex('z');
  EXPECT_EQ(locate_module_divergence(r.module_trace, g.module_trace, {}, true).first_op,
            "train step 1, forward, fc: aten.addmm.default (op 2 of fc's 2 ops)");
  // Across stacks op bits say nothing: not looked at.
  EXPECT_EQ(locate_module_divergence(r.module_trace, g.module_trace, {}, false).first_op, "");
  // Only an op moved (modules, series and hashes agree): in an exact lane
  // that bit difference fails on its own, as a module entry's does.
  RunRecord op_only = g;
  op_only.module_trace.ops[8].output_xxh3 = hex('z');
  Verdict w = compare_records(op_only, g, {});
  EXPECT_FALSE(w.passed());
  EXPECT_EQ(w.first_divergence, "train step 1: module_trace — the first op whose output bits differ: train step 1, "
                                "forward, fc: aten.addmm.default (op 2 of fc's 2 ops)");
  // Another op at the same place stops the walk, said.
  r.module_trace.ops[3].op = "aten.bmm.default";
  d = locate_module_divergence(r.module_trace, g.module_trace, {}, true);
  EXPECT_EQ(d.first_op, "");
  EXPECT_EQ(d.op_note, "op trace: the op sequences part at op 3 (golden train step 0, backward: aten.mm.default "
                       "(op 1 of the step's 2 backward ops), run train step 0, backward: aten.bmm.default (op 1 of "
                       "the step's 2 backward ops)): another op ran there; compared up to there");
  EXPECT_TRUE(d.ops_differ);
  // In an exact lane another op sequence fails on its own (two repeats that
  // ran other ops are not bit-identical); so do more ops than the golden's.
  RunRecord other_op = g;
  other_op.module_trace.ops[3].op = "aten.bmm.default";
  Verdict x = compare_records(other_op, g, {});
  EXPECT_FALSE(x.passed());
  EXPECT_NE(first_bit_difference(other_op, g), "");
  RunRecord more = g;
  more.module_trace.ops.push_back(more.module_trace.ops.back());
  d = locate_module_divergence(more.module_trace, g.module_trace, {}, true);
  EXPECT_EQ(d.op_note, "op trace: the golden holds 14 ops in the steps both traced (0 left out), the run 15 (0 left "
                       "out); the ops both hold agree");
  EXPECT_FALSE(compare_records(more, g, {}).passed());
  // Across stacks it is said, not failed.
  EXPECT_FALSE(locate_module_divergence(more.module_trace, g.module_trace, {}, false).ops_differ);
}

TEST(ModuleDivergence, OpsOnOneSideOnlyOrNotRecordedAreANote) {
  ModuleTrace g = chain(1), r = chain(1);
  r.ops = ops_of_step(0);
  EXPECT_EQ(locate_module_divergence(r, g, {}, true).op_note,
            "op trace: the golden has none (made without trace.ops, or by a helper that records none)");
  g.ops_not_traced = "torch 2.6.0 has no DebugMode with tensor hashes (torch.utils._debug_mode, torch >= 2.10)";
  EXPECT_EQ(locate_module_divergence(r, g, {}, true).op_note,
            "op trace: the golden has none: torch 2.6.0 has no DebugMode with tensor hashes "
            "(torch.utils._debug_mode, torch >= 2.10)");
  r.ops.clear();
  r.ops_not_traced = g.ops_not_traced;
  EXPECT_EQ(locate_module_divergence(r, g, {}, true).op_note,
            "op trace: not recorded: torch 2.6.0 has no DebugMode with tensor hashes (torch.utils._debug_mode, "
            "torch >= 2.10)");
}

}  // namespace
}  // namespace lockstep
