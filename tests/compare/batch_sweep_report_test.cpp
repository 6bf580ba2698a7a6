#include "compare/batch_sweep_report.h"

#include <gtest/gtest.h>

namespace lockstep {
namespace {

// Four samples (sizes 4, 2, 1): the rows line up, a module whose input
// was the whole batch's is "not batch-invariant", one that carries an
// earlier difference on says so, and the verdict names where it starts.
TEST(BatchSweepReport, EachModuleALineAndTheVerdictNamesWhereADifferenceStarts) {
  BatchSweep s;
  s.smoke = "unit";
  s.device = "cpu";
  s.batch = 4;
  s.sizes = {4, 2, 1};
  s.modules = {{"fc", "Linear", true, {{2, 0, 0, 0, 0, 0, 0}, {1, 0, 0, 0, 0, 0, 0}}},
               {"mix", "Mix", true, {{2, 0, 0, 0, 0, 0, 0}, {1, 4, 4, 3, 2.5e-7, 0, 0}}},
               {"sum", "", false, {{2, 0, 0, 0, 0, 0, 0}, {1, 4, 0, 0, 0, 0, 0}}}};
  EXPECT_EQ(render_batch_sweep(s),
            "batch sweep unit (cpu): the first batch, 4 samples, forwarded whole and in pieces of 2, 1 (eval mode: no "
            "dropout; a BatchNorm on its running statistics); each sample's output of each module held bit for bit to "
            "the whole batch's\n"
            "  fc (Linear)  batch-invariant\n"
            "  mix (Mix)    not batch-invariant: at 1: 4 of 4 samples differ, max 3 ulp (|Δ| 2.5e-07)\n"
            "  sum          differs only as its input does (an earlier module's difference, carried on): at 1: 4 of 4 "
            "samples differ (no batch dimension: compared whole)\n"
            "unit: NOT BATCH-INVARIANT (exit 1): mix (Mix) is not batch-invariant on this stack at batch 1 (max 3 "
            "ulp)\n"
            "  note: not a regression of the golden: a sample's result here depends on the batch around it. A gate "
            "that trains at one fixed batch size is unaffected; it matters where the batch changes: serving (requests "
            "batched together), and equivalence lanes that split the batch (micro-batches, ranks), which cannot agree "
            "bit for bit past this module (docs/equivalence.md)\n");
  s.modules.push_back({"(model output)", "Net", true, {{2, 0, 0, 0, 0, 0, 0}, {1, 0, 0, 0, 0, 0, 0}}});
  EXPECT_NE(render_batch_sweep(s).find("\n  (model output, Net)  batch-invariant\n"), std::string::npos)
      << render_batch_sweep(s);
  s.modules.pop_back();
  s.modules.resize(1);
  EXPECT_EQ(render_batch_sweep(s).substr(render_batch_sweep(s).find("  fc")),
            "  fc (Linear)  batch-invariant\nunit: BATCH-INVARIANT on this stack (exit 0)\n");
}

}  // namespace
}  // namespace lockstep
