// What calibration measures on canned runs: the spread per metric and the
// axis that drove it, the rule Megatron-LM's formula recommends (exact
// where every run agreed bit for bit), the leave-one-out false-alarm
// count, and the Clopper-Pearson bound it prints.
#include "calibrate/spread.h"

#include <gtest/gtest.h>

#include <cmath>

#include "record_builder.h"

namespace lockstep {
namespace {

using testing::make_probe;
using testing::make_record;

CalibrationRun run_at(const std::string& axis, const std::string& value, int repeat, std::vector<double> grad) {
  CalibrationRun r;
  r.point[axis] = value;
  r.repeat = repeat;
  r.label = axis + "=" + value + " #" + std::to_string(repeat);
  r.record = make_record({2.5, 2.25}, std::move(grad));
  r.record.probes = {make_probe(0, 1.0), make_probe(1, 2.0)};
  // Where it ran, as a record says it: a thread count in the contract (and
  // the fingerprint), a CPU capability in the fingerprint.
  if (axis == "threads") {
    r.record.contract["intra_op_threads"] = value;
    r.record.fingerprint["determinism.intra_op_threads"] = {value, true};
  }
  if (axis == "capability") r.record.fingerprint["cpu.capability"] = {value, true};
  return r;
}

const CurveSpread& spread_of(const std::vector<CurveSpread>& s, const std::string& name) {
  for (const auto& x : s)
    if (x.name == name) return x;
  throw std::runtime_error("no spread of " + name);
}

TEST(Spread, RunsThatAgreeBitForBitAreRecommendedExact) {
  std::vector<CalibrationRun> runs = {run_at("threads", "1", 1, {1, 1}), run_at("threads", "2", 1, {1, 1})};
  std::vector<CurveSpread> s = measure_spreads(runs, false);
  const CurveSpread& g = spread_of(s, "grad_norm");
  EXPECT_TRUE(g.bit_identical);
  EXPECT_EQ(g.max_abs, 0);
  EXPECT_EQ(g.driver, "");
  auto rec = recommend(s, SpreadRules{}, false);
  EXPECT_EQ(rec.at("grad_norm").tolerance.rule, Tolerance::Rule::kExact);
  EXPECT_EQ(rec.at("loss").tolerance.rule, Tolerance::Rule::kExact);
  EXPECT_EQ(rec.at("probes.inputs.mean").tolerance.rule, Tolerance::Rule::kExact);
  EXPECT_EQ(rec.at("probes.inputs.mean").key, "inputs.mean");
  EXPECT_TRUE(rec.at("probes.inputs.mean").probe);
}

TEST(Spread, ASpreadIsMeasuredFromTheMeanAndScaledWithFloors) {
  std::vector<CalibrationRun> runs = {run_at("threads", "1", 1, {1, 1.0}), run_at("threads", "2", 1, {1, 1.0 + 3e-6}),
                                      run_at("threads", "3", 1, {1, 1.0 - 3e-6})};
  std::vector<CurveSpread> s = measure_spreads(runs, false);
  const CurveSpread& g = spread_of(s, "grad_norm");
  EXPECT_FALSE(g.bit_identical);
  EXPECT_NEAR(g.max_abs, 3e-6, 1e-15);
  EXPECT_NEAR(g.max_rel, 3e-6, 1e-15);
  EXPECT_EQ(g.worst_step, 1);
  EXPECT_EQ(g.driver, "threads");
  ASSERT_EQ(g.abs_spread.size(), 2u);
  EXPECT_EQ(g.abs_spread[0], 0);
  auto rec = recommend(s, SpreadRules{}, false);
  const Tolerance& t = rec.at("grad_norm").tolerance;
  EXPECT_EQ(t.rule, Tolerance::Rule::kClose);
  EXPECT_EQ(t.atol, 4.5e-6);  // 1.5 x 3e-6, above the 1e-6 floor
  EXPECT_EQ(t.rtol, 1e-3);    // 1.5 x 3e-6 is below the 1e-3 floor
  SpreadRules loose;
  loose.multiplier = 3;
  loose.rtol_floor = 0;
  auto loose_rec = recommend(s, loose, false);
  const Tolerance& u = loose_rec.at("grad_norm").tolerance;
  EXPECT_EQ(u.atol, 9e-6);
  EXPECT_EQ(u.rtol, 9e-6);
}

TEST(Spread, TwoRunsAtOnePointThatDifferAreDrivenByRepeat) {
  std::vector<CalibrationRun> runs = {run_at("threads", "1", 1, {1, 1}), run_at("threads", "1", 2, {1, 1.5})};
  EXPECT_EQ(spread_of(measure_spreads(runs, false), "grad_norm").driver, "repeat");
}

TEST(Spread, AMetricLoggedAtOtherStepsOrNonFiniteIsNotMeasured) {
  std::vector<CalibrationRun> runs = {run_at("threads", "1", 1, {1, 1}), run_at("threads", "2", 1, {1, NAN})};
  std::vector<CurveSpread> s = measure_spreads(runs, false);
  EXPECT_EQ(spread_of(s, "grad_norm").skipped, "non-finite in threads=2 #1 at step 1");
  auto rec = recommend(s, SpreadRules{}, false);
  EXPECT_FALSE(rec.at("grad_norm").measured);
  EXPECT_EQ(rec.at("grad_norm").because, "not measured: grad_norm: non-finite in threads=2 #1 at step 1");
  runs[1].record.series["grad_norm"] = Series{Series::Dtype::kFloat64, {1, 1}, {}, {}, {1, 2}, 0, {}};
  EXPECT_EQ(spread_of(measure_spreads(runs, false), "grad_norm").skipped, "logged at other steps in threads=2 #1");
}

TEST(Spread, SeedsThatVaryAreRecommendedASigmaRuleAtLeastTheFloor) {
  std::vector<CalibrationRun> runs = {run_at("seed", "1", 1, {1, 1.0}), run_at("seed", "2", 1, {1, 1.1}),
                                      run_at("seed", "3", 1, {1, 0.9})};
  for (size_t i = 0; i < runs.size(); ++i) runs[i].record.seed = i + 1;
  auto rec = recommend(measure_spreads(runs, true), SpreadRules{}, true);
  EXPECT_EQ(rec.at("grad_norm").tolerance.rule, Tolerance::Rule::kSigma);
  EXPECT_EQ(rec.at("grad_norm").tolerance.k, 3);  // max z = sqrt(3/2) = 1.22, x 1.5 = 1.84 < the floor 3
  // Probes of other seeds are other batches: measured over the first seed's runs only.
  EXPECT_FALSE(rec.at("probes.inputs.mean").measured);
}

TEST(Spread, TheFirstFailingValueNamesTheSeriesStepAndRule) {
  std::vector<CalibrationRun> runs = {run_at("threads", "1", 1, {1, 1}), run_at("threads", "2", 1, {1, 1})};
  auto rec = recommend(measure_spreads(runs, false), SpreadRules{}, false);
  RunRecord moved = runs[0].record;
  moved.series["grad_norm"].values[1] = 1.25;
  EXPECT_EQ(first_failing_value(moved, runs[0].record, rec),
            "grad_norm at step 1: golden 1, run 1.25 (|err| 0.25, rule exact)");
  EXPECT_EQ(first_failing_value(moved, runs[0].record, rec, {"grad_norm"}), "");
  moved.probes[1].inputs.mean = 2.5;
  EXPECT_EQ(first_failing_value(moved, runs[0].record, rec, {"grad_norm"}),
            "probes.inputs.mean at batch 1: golden 2, run 2.5 (|err| 0.5, rule exact)");
}

TEST(Spread, LeaveOneOutCountsTheRunsTheOthersWouldFail) {
  // Three runs agree; the fourth moved. Held out, it fails against each of
  // the three (their rule is exact); each of the others, held out, passes
  // a rule that the fourth widened.
  std::vector<CalibrationRun> runs = {run_at("threads", "1", 1, {1, 1}), run_at("threads", "2", 1, {1, 1}),
                                      run_at("threads", "3", 1, {1, 1}), run_at("threads", "4", 1, {1, 1.01})};
  FalseAlarm fa = leave_one_out(runs, SpreadRules{}, false);
  EXPECT_EQ(fa.runs, 4);
  EXPECT_EQ(fa.failed_runs, 1);
  EXPECT_EQ(fa.comparisons, 12);
  EXPECT_EQ(fa.failed_comparisons, 3);
  EXPECT_EQ(fa.example.rfind("threads=4 #1 against threads=1 #1: train step 1: grad_norm — step 1: golden 1, run 1.01", 0), 0u)
      << fa.example;
  EXPECT_NE(fa.example.find("(cross-stack lane)"), std::string::npos) << fa.example;
  EXPECT_NEAR(fa.upper95, upper_bound_95(1, 4), 1e-12);
  EXPECT_EQ(leave_one_out({runs[0], runs[1]}, SpreadRules{}, false).runs, 0);  // needs 3
}

// Calibrate and check share one rule: a pair is judged in check's lane.
// Runs at one point (or differing only in DataLoader workers) are one
// stack and one contract: check holds them bit-exact, so a spread between
// them is no tolerance calibrate may credit.
TEST(Spread, RunsOfOneStackAreHeldBitExactAsCheckHoldsThem) {
  std::vector<CalibrationRun> runs = {run_at("workers", "0", 1, {1, 1}), run_at("workers", "2", 1, {1, 1}),
                                      run_at("workers", "4", 1, {1, 1.01})};
  auto rec = recommend(measure_spreads(runs, false), SpreadRules{}, false);
  EXPECT_EQ(rec.at("grad_norm").tolerance.rule, Tolerance::Rule::kClose);
  TolerancePolicy policy = policy_with({}, rec);
  EXPECT_EQ(check_failure(runs[2].record, runs[0].record, policy).rfind("train step 1: grad_norm", 0), 0u)
      << check_failure(runs[2].record, runs[0].record, policy);
  EXPECT_NE(check_failure(runs[2].record, runs[0].record, policy).find("(same-stack lane)"), std::string::npos);
  // The same spread across thread counts is a stack axis: the tolerance holds it.
  std::vector<CalibrationRun> threads = {run_at("threads", "1", 1, {1, 1}), run_at("threads", "2", 1, {1, 1}),
                                         run_at("threads", "4", 1, {1, 1.01})};
  rec = recommend(measure_spreads(threads, false), SpreadRules{}, false);
  EXPECT_EQ(check_failure(threads[2].record, threads[0].record, policy_with({}, rec)), "");
  // And a smoke that sets "same_stack": "tolerance" gets them on one stack too.
  TolerancePolicy lenient;
  lenient.same_stack_exact = false;
  EXPECT_EQ(check_failure(runs[2].record, runs[0].record, policy_with(lenient, recommend(measure_spreads(runs, false),
                                                                                          SpreadRules{}, false))),
            "");
}

TEST(Spread, AnotherContractIsNeverCreditedAsSpread) {
  std::vector<CalibrationRun> runs = {run_at("runner", "a", 1, {1, 1}), run_at("runner", "b", 1, {1, 1}),
                                      run_at("runner", "c", 1, {1, 1.01})};
  runs[2].record.contract["mode"] = "relaxed";
  runs[1].record.fingerprint["cpu.capability"] = {"AVX512", true};
  auto rec = recommend(measure_spreads(runs, false), SpreadRules{}, false);
  std::string why = check_failure(runs[2].record, runs[1].record, policy_with({}, rec));
  EXPECT_NE(why.find("(contract-mismatch lane)"), std::string::npos) << why;
  FalseAlarm fa = leave_one_out(runs, SpreadRules{}, false);
  EXPECT_EQ(fa.failed_runs, 3);  // every run fails against the one made under another contract (or is it)
}

TEST(Spread, TheUpperBoundIsClopperPearsons) {
  EXPECT_NEAR(upper_bound_95(0, 8), 1 - std::pow(0.05, 1.0 / 8), 1e-9);  // 0.312
  EXPECT_NEAR(upper_bound_95(0, 60), 1 - std::pow(0.05, 1.0 / 60), 1e-9);  // 0.049
  EXPECT_NEAR(upper_bound_95(1, 4), 0.7514, 1e-4);
  EXPECT_EQ(upper_bound_95(4, 4), 1);
}

TEST(Spread, RulesRoundUpToTwoSignificantDigits) {
  EXPECT_EQ(round_up_2(3.21e-7), 3.3e-7);
  EXPECT_EQ(round_up_2(4.5e-6), 4.5e-6);
  EXPECT_EQ(round_up_2(4.5000000001e-6), 4.6e-6);
  EXPECT_EQ(round_up_2(1.0), 1.0);
  EXPECT_EQ(round_up_2(0.0), 0.0);
}

}  // namespace
}  // namespace lockstep
