#include "compare/compare.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "../record_builder.h"
#include "compare/text_report.h"
#include "core/error.h"

namespace lockstep {
namespace {

using testing::make_probe;
using testing::make_record;

const Finding* find(const Verdict& v, const std::string& subject) {
  for (const auto& f : v.findings)
    if (f.subject == subject) return &f;
  return nullptr;
}

TEST(Compare, IdenticalRecordsPassSameStack) {
  RunRecord r = make_record({2.5, 2.25});
  Verdict v = compare_records(r, r, {});
  EXPECT_TRUE(v.passed());
  EXPECT_EQ(v.lane, Lane::kSameStack);
  EXPECT_EQ(v.values_checked, 4u);
  EXPECT_EQ(v.exit_code(), ExitCode::kPass);
}

TEST(Compare, OneUlpFailsExactNamingTheStep) {
  RunRecord g = make_record({2.5, 2.25, 2.0});
  RunRecord r = g;
  r.series["loss"].values[1] = std::nextafter(2.25f, 3.0f);
  Verdict v = compare_records(r, g, {});
  ASSERT_FALSE(v.passed());
  const Finding* f = find(v, "loss");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->index, 1);
  EXPECT_EQ(v.first_divergence.rfind("train step 1: loss", 0), 0u) << v.first_divergence;
  EXPECT_NE(f->detail.find("1 ulp"), std::string::npos) << f->detail;

  TolerancePolicy relaxed;
  relaxed.same_stack_exact = false;
  relaxed.series_default = Tolerance::close(0, 1e-6);
  EXPECT_TRUE(compare_records(r, g, relaxed).passed());
}

// A ULP rule counts in the series' own type: on a float64 series it is all
// but exact, and a failure says so, with the rtol rule to use instead.
TEST(Compare, AFailingUlpRuleOnAFloat64SeriesSaysToUseRtol) {
  RunRecord g = make_record({2.5, 2.25}, {1.0, 1.0});
  RunRecord r = g;
  r.series["grad_norm"].values[1] = 1.0 + 1e-9;  // about 4504 float64 ulp
  r.series["loss"].values[1] = std::nextafter(2.25f, 3.0f);
  TolerancePolicy p;
  p.same_stack_exact = false;
  p.series_default = Tolerance::ulp(4);
  Verdict v = compare_records(r, g, p);
  const Finding* f = find(v, "grad_norm");
  ASSERT_NE(f, nullptr);
  EXPECT_NE(f->detail.find("; rule ulp <= 4 (a float64 series: 4 ulp is about 8.88e-16 relative; for float32-sized "
                           "noise give it an rtol rule, e.g. {\"atol\": 0, \"rtol\": 1e-6}); 1 of 2 fail"),
            std::string::npos)
      << f->detail;
  EXPECT_EQ(find(v, "loss"), nullptr);  // one float32 ulp, within the rule; no advice
}

TEST(Compare, CrossStackUsesTolerancesAndListsRelevantFieldsFirst) {
  RunRecord g = make_record({2.5});
  RunRecord r = g;
  r.fingerprint["os.kernel"].value = "6.2";
  r.fingerprint["torch.version"].value = "2.11.0";
  r.series["loss"].values[0] = std::nextafter(2.5f, 3.0f);
  Verdict v = compare_records(r, g, {});
  EXPECT_EQ(v.lane, Lane::kCrossStack);
  EXPECT_TRUE(v.passed());
  ASSERT_EQ(v.env_diffs.size(), 2u);
  EXPECT_EQ(v.env_diffs[0].name, "torch.version");
  EXPECT_TRUE(v.env_diffs[0].relevant);
  EXPECT_EQ(v.env_diffs[1].name, "os.kernel");
}

TEST(Compare, InformationalDifferenceKeepsSameStack) {
  RunRecord g = make_record({2.5});
  RunRecord r = g;
  r.fingerprint["os.kernel"].value = "6.2";
  EXPECT_EQ(compare_records(r, g, {}).lane, Lane::kSameStack);
}

TEST(Compare, ContractMismatchFailsAndComparesExactly) {
  RunRecord g = make_record({2.5, 2.25});
  RunRecord r = g;
  r.contract["mode"] = "relaxed";
  r.series["loss"].values[1] = std::nextafter(2.25f, 3.0f);
  Verdict v = compare_records(r, g, {});
  EXPECT_EQ(v.lane, Lane::kContractMismatch);
  ASSERT_NE(find(v, "contract.mode"), nullptr);
  EXPECT_EQ(find(v, "contract.mode")->detail.rfind("golden strict, run relaxed", 0), 0u);
  EXPECT_EQ(v.first_divergence.rfind("train step 1: loss", 0), 0u) << v.first_divergence;
}

// Thread counts reorder parallel reductions, never change what is computed:
// a stack axis (the spread calibrate's threads axis measures), so the
// cross-stack lane and the tolerances, never a contract mismatch. A record
// without the fingerprint field (imported, older) lands there too.
TEST(Compare, AnotherThreadCountIsAStackAxisComparedUnderTheTolerances) {
  RunRecord g = make_record({2.5, 2.25});
  RunRecord r = g;
  r.contract["intra_op_threads"] = "2";
  r.contract["inter_op_threads"] = "4";
  r.series["loss"].values[1] = std::nextafter(2.25f, 3.0f);
  Verdict v = compare_records(r, g, {});
  EXPECT_EQ(v.lane, Lane::kCrossStack);
  EXPECT_TRUE(v.passed()) << render_text(v, false);
  EXPECT_EQ(find(v, "contract.intra_op_threads"), nullptr);
  EXPECT_EQ(v.lane_reason, "2 determinism-relevant fingerprint field(s) differ (determinism.inter_op_threads (missing) → 4, "
                           "determinism.intra_op_threads 1 → 2): configured tolerances apply");
  TolerancePolicy exact;
  exact.series_default = Tolerance::exact();
  Verdict failed = compare_records(r, g, exact);
  EXPECT_FALSE(failed.passed());
  EXPECT_EQ(failed.first_divergence.rfind("train step 1: loss", 0), 0u) << failed.first_divergence;
}

// A contract setting the golden's LibTorch did not have (fill_uninitialized
// _memory is "unsupported" before 2.2) is part of the version change: the
// cross-stack lane, values under the tolerances, the version named first,
// a note, no contract finding.
TEST(Compare, ASettingTheGoldensTorchLackedIsAStackChangeNotAContractMismatch) {
  RunRecord g = make_record({2.5, 2.25});
  g.contract["fill_uninitialized_memory"] = "unsupported (LibTorch < 2.2)";
  g.fingerprint["determinism.fill_uninitialized_memory"] = {"unsupported (LibTorch < 2.2)", true};
  g.fingerprint["cpu.capability"] = {"AVX2", true};
  RunRecord r = g;
  r.contract["fill_uninitialized_memory"] = "true";
  r.fingerprint["determinism.fill_uninitialized_memory"].value = "true";
  r.fingerprint["torch.version"].value = "2.6.0";
  r.fingerprint["cpu.capability"].value = "AVX512";
  r.series["loss"].values[1] = std::nextafter(2.25f, 3.0f);
  TolerancePolicy policy;
  policy.series_default = Tolerance::close(0, 1e-6);
  Verdict v = compare_records(r, g, policy);
  EXPECT_EQ(v.lane, Lane::kCrossStack);
  EXPECT_TRUE(v.findings.empty());
  EXPECT_EQ(v.lane_reason,
            "3 determinism-relevant fingerprint field(s) differ (torch.version 1.13.0 → 2.6.0, "
            "determinism.fill_uninitialized_memory unsupported (LibTorch < 2.2) → true, cpu.capability AVX2 → AVX512): "
            "configured tolerances apply");
  ASSERT_EQ(v.notes.size(), 1u);
  EXPECT_EQ(v.notes[0],
            "contract.fill_uninitialized_memory: golden unsupported (LibTorch < 2.2), run true: a setting one side's "
            "torch does not have, part of the version change (LibTorch 1.13.0 → 2.6.0), compared under the smoke's "
            "tolerances");
  EXPECT_EQ(v.env_diffs[0].name, "torch.version");

  // Beyond the tolerance it fails, the version first in the reason.
  r.series["loss"].values[1] = 2.5;
  Verdict moved = compare_records(r, g, policy);
  EXPECT_EQ(moved.lane, Lane::kCrossStack);
  EXPECT_EQ(moved.findings.size(), 1u);
  EXPECT_EQ(moved.lane_reason.rfind("3 determinism-relevant fingerprint field(s) differ (torch.version", 0), 0u);

  // Both sides holding a value that differs is another contract.
  g.contract["fill_uninitialized_memory"] = "false";
  EXPECT_EQ(compare_records(r, g, policy).lane, Lane::kContractMismatch);
}

// Only a version-dependent setting, only across a real version change,
// may lack a value on one side. A run cannot step out of the contract by
// not saying, by a cosmetic version change, or through lockstep's own
// settings; a golden lacking a setting under the same torch is no excuse.
TEST(Compare, OnlyAVersionDependentSettingAcrossARealVersionChangeMayLackAValue) {
  RunRecord g = make_record({2.5});
  g.contract["deterministic_algorithms"] = "true";
  g.contract["fill_uninitialized_memory"] = "true";
  auto lane = [&](RunRecord r, const RunRecord& reference) { return compare_records(r, reference, {}).lane; };
  RunRecord silent = g;
  silent.contract.erase("deterministic_algorithms");
  EXPECT_EQ(lane(silent, g), Lane::kContractMismatch);  // same torch
  EXPECT_EQ(lane(g, silent), Lane::kContractMismatch);  // the golden silent
  silent.fingerprint["torch.version"].value = "2.6.0";
  EXPECT_EQ(lane(silent, g), Lane::kContractMismatch);  // not a version-dependent setting
  RunRecord mode = g;
  mode.contract["mode"] = "unsupported (x)";
  mode.fingerprint["torch.version"].value = "2.6.0";
  EXPECT_EQ(lane(mode, g), Lane::kContractMismatch);  // lockstep's own setting
  RunRecord cosmetic = g;
  cosmetic.contract["fill_uninitialized_memory"] = "unsupported (x)";
  for (const char* version : {"1.13.0 ", "1.13.0+cpu", "1.13.0a0"}) {
    cosmetic.fingerprint["torch.version"].value = version;
    EXPECT_EQ(lane(cosmetic, g), Lane::kContractMismatch) << version;  // no version change
  }
  cosmetic.fingerprint["torch.version"].value = "2.6.0+debian";
  EXPECT_EQ(lane(cosmetic, g), Lane::kCrossStack);  // a downgrade's check: the older side lacks it
  // Neither side holding a value is no difference.
  RunRecord neither = g;
  neither.contract["fill_uninitialized_memory"] = "unsupported (LibTorch < 2.2)";
  RunRecord other = neither;
  other.contract.erase("fill_uninitialized_memory");
  EXPECT_EQ(lane(other, neither), Lane::kSameStack);
}

// The first divergence names a contract value whole, colons and all.
TEST(Compare, TheContractInTheFirstDivergenceKeepsItsColons) {
  RunRecord g = make_record({2.5, 2.25});
  g.contract["cublas_workspace_config"] = ":4096:8";
  RunRecord r = g;
  r.contract["cublas_workspace_config"] = ":16:8";
  r.series["loss"].values[1] = 2.5;
  Verdict v = compare_records(r, g, {});
  EXPECT_EQ(v.lane, Lane::kContractMismatch);
  EXPECT_NE(v.first_divergence.find("another determinism contract: cublas_workspace_config golden :4096:8, run :16:8)"),
            std::string::npos)
      << v.first_divergence;
}

// An imported golden (`import --golden`: another tool's curves, only
// import.source in its fingerprint, no contract): its series are compared
// with the configured tolerances whatever the run's contract and stack;
// what it does not hold is named in notes, never a failure.
TEST(Compare, AnImportedGoldensSeriesAreComparedWithTolerancesAlone) {
  RunRecord g = make_record({2.5, 2.25});
  g.fingerprint = {{"import.source", {"megatron /ci/golden_values_dev_dgx_h100.json (xxh3 0123456789abcdef)", false}}};
  g.contract.clear();
  g.probes.clear();
  g.hashes.clear();
  g.series.erase("grad_norm");
  RunRecord r = make_record({2.5, 2.25 * (1 + 1e-6)});
  r.contract["intra_op_threads"] = "4";
  TolerancePolicy policy;
  policy.series_default = Tolerance::close(0, 1e-4);
  Verdict v = compare_records(r, g, policy);
  EXPECT_TRUE(v.passed()) << render_text(v, false);
  EXPECT_EQ(v.lane, Lane::kCrossStack);
  EXPECT_EQ(v.imported_from, "megatron /ci/golden_values_dev_dgx_h100.json (xxh3 0123456789abcdef)");
  EXPECT_EQ(v.values_checked, 2u);
  std::string text = render_text(v, false);
  EXPECT_NE(text.find("PASS (an imported golden's curves, within tolerance)"), std::string::npos) << text;
  EXPECT_NE(text.find("note: series the imported golden does not hold, not compared: grad_norm"), std::string::npos)
      << text;
  // A contract the import brought (--trainer-report) that names other
  // fields: one note, a few fields named.
  g.contract = {{"mode", "strict"}};
  r.contract = {{"mode", "strict"}, {"a", "1"}, {"b", "1"}, {"c", "1"}, {"d", "1"}};
  std::string contract = render_text(compare_records(r, g, policy), false);
  EXPECT_NE(contract.find("note: determinism contract: 4 field(s) differ from the imported golden's (a note, not "
                          "compared): a 1 here, (missing) there; b 1 here, (missing) there; c 1 here, (missing) there; "
                          "and 1 more\n"),
            std::string::npos) << contract;
  r.series["loss"].values[1] = 2.3;
  Verdict moved = compare_records(r, g, policy);
  ASSERT_FALSE(moved.passed());
  EXPECT_EQ(moved.first_divergence.rfind("train step 1: loss", 0), 0u) << moved.first_divergence;
}

// float32 (TensorBoard's simple_value) against float64 is said in a note.
TEST(Compare, AFloat32RunAgainstAFloat64GoldenSaysSo) {
  RunRecord g = make_record({2.5});
  RunRecord r = g;
  g.series["loss"].dtype = Series::Dtype::kFloat64;
  r.series["loss"].dtype = Series::Dtype::kFloat32;
  Verdict v = compare_records(r, g, {});
  bool said = false;
  for (const auto& n : v.notes)
    said = said || n.rfind("loss: the golden's values are float64, the run's float32 (a float32 log, such as "
                           "TensorBoard's simple_value, against a float64 one)", 0) == 0;
  EXPECT_TRUE(said) << render_text(v, false);
}

TEST(Compare, LengthMismatchFailsWithoutPadding) {
  RunRecord g = make_record(std::vector<double>(10, 1.0));
  RunRecord r = make_record(std::vector<double>(9, 1.0));
  Verdict v = compare_records(r, g, {});
  ASSERT_NE(find(v, "loss"), nullptr);
  EXPECT_EQ(find(v, "loss")->detail, "length 10 vs 9 steps (golden vs run)");
  RunRecord longer = make_record(std::vector<double>(11, 1.0));
  EXPECT_EQ(find(compare_records(longer, g, {}), "loss")->detail, "length 10 vs 11 steps (golden vs run)");
}

// Steps are matched by number: 0..n-1 written out is the dense series; any
// other numbering is named.
TEST(Compare, StepsSpelledOutEqualTheDenseSeries) {
  RunRecord g = make_record({1.0, 2.0, 3.0});
  RunRecord r = g;
  r.series["loss"].steps = {0, 1, 2};
  EXPECT_TRUE(compare_records(r, g, {}).passed());
  EXPECT_TRUE(compare_records(g, r, {}).passed());
  r.series["loss"].steps = {1, 2, 3};
  Verdict v = compare_records(r, g, {});
  ASSERT_NE(find(v, "loss"), nullptr);
  EXPECT_EQ(find(v, "loss")->detail,
            "logged at other steps: steps 0..2 (golden) vs steps 1, 2, ..., 3 (3 values) (run)");
}

TEST(Compare, MissingSeriesFailsNamingIt) {
  RunRecord g = make_record({1.0});
  RunRecord r = g;
  r.series.erase("grad_norm");
  Verdict v = compare_records(r, g, {});
  ASSERT_NE(find(v, "grad_norm"), nullptr);
  EXPECT_EQ(find(v, "grad_norm")->detail, "series present in the golden only");
  r = g;
  r.series["extra"] = Series{Series::Dtype::kFloat64, {1.0}, {}, {}, {}, 0, {}};
  EXPECT_EQ(find(compare_records(r, g, {}), "extra")->detail, "series present in the run only");
}

TEST(Compare, NothingInCommonNeverPasses) {
  RunRecord g = make_record({1.0});
  g.series.clear();
  g.hashes["params"] = std::string(32, 'c');
  RunRecord r = g;
  r.hashes.clear();
  r.hashes["other"] = std::string(32, 'd');
  Verdict v = compare_records(r, g, {});
  EXPECT_FALSE(v.passed());
}

TEST(Compare, NonFiniteRunFailsNamingStep) {
  RunRecord g = make_record({2.5, 2.25, 2.0});
  RunRecord r = g;
  r.series["loss"].values[2] = std::nan("");
  Verdict v = compare_records(r, g, {});
  ASSERT_NE(find(v, "loss"), nullptr);
  EXPECT_EQ(find(v, "loss")->detail, "step 2: golden 2, run nan: non-finite value in the run; 1 of 3 fail");
  std::string text = render_text(v, false);
  EXPECT_EQ(text.find("inf "), std::string::npos);
}

TEST(Compare, NonFiniteGoldenIsExit2UnlessAllowed) {
  RunRecord g = make_record({2.5, INFINITY});
  try {
    compare_records(g, g, {});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kBadInput);
    EXPECT_EQ(std::string(e.what()),
              "golden: series.loss.values[1]: expected a finite value, got inf (set "
              "tolerance.allow_nonfinite_golden in the smoke config to allow it; `lockstep compare` reads the config "
              "with --config SMOKE)");
  }
  TolerancePolicy allow;
  allow.allow_nonfinite_golden = true;
  EXPECT_TRUE(compare_records(g, g, allow).passed());
}

TEST(Compare, NonFiniteGoldenProbeIsExit2) {
  RunRecord g = make_record({1.0});
  g.probes = {make_probe(0, 0.5)};
  g.probes[0].inputs.std = std::nan("");
  try {
    compare_records(g, g, {});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "golden: probes[0].inputs.std: expected a finite value, got nan (set "
              "tolerance.allow_nonfinite_golden in the smoke config to allow it; `lockstep compare` reads the config "
              "with --config SMOKE)");
  }
}

TEST(Compare, SigmaRuleNeedsAMultiSeedGolden) {
  RunRecord g = make_record({1.0});
  TolerancePolicy p;
  p.series["loss"] = Tolerance::sigma(3);
  EXPECT_THROW(compare_records(g, g, p, {}), Error);
  g.series["loss"].std = {0.1};
  RunRecord r = g;
  r.fingerprint["torch.version"].value = "2.11.0";
  r.series["loss"].values[0] = 1.25;
  EXPECT_TRUE(compare_records(r, g, p).passed());
}

TEST(Compare, SigmaRuleCentresOnTheSeedMeanWhileSameStackStaysExact) {
  // A multi-seed golden: values = the config seed's run, mean/std over seeds.
  RunRecord g = make_record({1.0, 2.0});
  g.series["loss"].mean = {1.5, 2.5};
  g.series["loss"].std = {0.1, 0.1};
  TolerancePolicy p;
  p.series["loss"] = Tolerance::sigma(3);
  RunRecord r = g;
  r.fingerprint["torch.version"].value = "2.11.0";  // cross-stack: sigma applies
  r.series["loss"].values = {1.25, 2.25};           // 2.5 std from the mean: passes
  EXPECT_TRUE(compare_records(r, g, p).passed());
  r.series["loss"].values = {1.0, 2.0};             // the seed's own values, 5 std off the mean
  Verdict far = compare_records(r, g, p);
  EXPECT_FALSE(far.passed());
  ASSERT_NE(find(far, "loss"), nullptr);
  EXPECT_EQ(find(far, "loss")->index, 0);

  RunRecord same = g;  // same stack: bit-exact against values, not the mean
  EXPECT_TRUE(compare_records(same, g, p).passed());
}

TEST(Compare, InitHashesAreHeldLikeFinalHashes) {
  RunRecord g = make_record({1.0});
  g.init["fc.weight"] = {0.01, 0.2, std::string(32, 'c')};
  RunRecord r = g;
  EXPECT_TRUE(compare_records(r, g, {}, {}).passed());
  r.init["fc.weight"].xxh3_128 = std::string(32, 'd');
  Verdict v = compare_records(r, g, {}, {});
  EXPECT_FALSE(v.passed());
  ASSERT_NE(find(v, "init.fc.weight"), nullptr);
  r.fingerprint["torch.version"].value = "2.11.0";  // across stacks only a note
  EXPECT_TRUE(compare_records(r, g, {}, {}).passed());
  r.init.erase("fc.weight");
  r.init["fc.bias"] = g.init["fc.weight"];
  EXPECT_FALSE(compare_records(r, g, {}, {}).passed());
}

TEST(Compare, ResourcesFailOnlyOnGrowthBeyondTheRatioOnTheSamePlatform) {
  RunRecord g = make_record({1.0, 1.0, 1.0, 1.0});
  g.resources.step_time_s = {9.0, 0.010, 0.012, 0.011};  // step 0 is not steady
  g.resources.peak_rss_bytes = 100 << 20;
  RunRecord r = g;
  r.resources.step_time_s = {0.5, 0.050, 0.050, 0.050};  // median 0.05 vs 0.011
  TolerancePolicy p;  // step_time_ratio 4
  Verdict slow = compare_records(r, g, p);
  EXPECT_FALSE(slow.passed());
  ASSERT_NE(find(slow, "median step time"), nullptr);
  EXPECT_EQ(find(slow, "median step time")->section, Section::kResources);
  EXPECT_EQ(slow.exit_code(), ExitCode::kRegression);
  p.step_time_ratio = 5;
  EXPECT_TRUE(compare_records(r, g, p).passed());

  r.resources.step_time_s = {0.001, 0.001, 0.001, 0.001};  // faster never fails
  r.resources.peak_rss_bytes = 151 << 20;                  // 1.51x > 1.5
  Verdict big = compare_records(r, g, p);
  ASSERT_NE(find(big, "peak RSS"), nullptr);

  r.platform = "cpu-x86_64-default";  // another platform: not compared
  EXPECT_TRUE(compare_records(r, g, p).passed());
  // The repeat check never looks at resources.
  EXPECT_EQ(first_bit_difference(r, g), "");
}

// Sub-millisecond steps: a ratio past the limit that grew by less than
// 2 ms is a note (one page fault does that), more than 2 ms still fails.
TEST(Compare, StepTimeGrowthBelowTwoMillisecondsIsANote) {
  RunRecord g = make_record({1.0, 1.0, 1.0, 1.0});
  g.resources.step_time_s = {0.1, 0.0005, 0.0005, 0.0005};
  RunRecord r = g;
  r.resources.step_time_s = {0.1, 0.0024, 0.0024, 0.0024};  // 4.8x, +1.9 ms
  Verdict v = compare_records(r, g, {});
  EXPECT_TRUE(v.passed()) << v.first_divergence;
  EXPECT_EQ(v.notes.back(), "median step time 0.0024 s vs golden 5e-04 s (ratio 4.8) not gated: it grew by less than "
                            "2 ms, below what one step's timing resolves");
  r.resources.step_time_s = {0.1, 0.003, 0.003, 0.003};  // 6x, +2.5 ms
  EXPECT_NE(find(compare_records(r, g, {}), "median step time"), nullptr);
}

// On a shared runner the step-time gate is honest: a busy machine (load
// above one per core, or more than 5% CPU steal) on either side makes it a
// note, and another runner class is not compared at all.
TEST(Compare, StepTimeOnABusyMachineOrAnotherRunnerClassIsANote) {
  RunRecord g = make_record({1.0, 1.0, 1.0, 1.0});
  g.resources.step_time_s = {0.1, 0.010, 0.010, 0.010};
  g.resources.runner_class = "AMD EPYC x2";
  g.resources.load_per_core = 0.3;
  g.resources.steal_fraction = 0.0;
  RunRecord r = g;
  r.resources.step_time_s = {0.5, 0.257, 0.257, 0.257};  // ratio 25.7
  r.resources.load_per_core = 2.4;
  Verdict busy = compare_records(r, g, {});
  EXPECT_TRUE(busy.passed()) << busy.first_divergence;
  ASSERT_FALSE(busy.notes.empty());
  EXPECT_EQ(busy.notes.back(), "median step time 0.257 s vs golden 0.01 s (ratio 25.7) not gated: the run's machine "
                               "was busy (load 2.40 per core)");

  r.resources.load_per_core = 0.5;
  r.resources.steal_fraction = 0.2;
  Verdict stolen = compare_records(r, g, {});
  EXPECT_TRUE(stolen.passed());
  EXPECT_NE(stolen.notes.back().find("lost 20% of its CPU to steal"), std::string::npos) << stolen.notes.back();

  r.resources.steal_fraction = 0.0;
  EXPECT_FALSE(compare_records(r, g, {}).passed());  // quiet machines: the gate holds

  r.resources.runner_class = "Intel Xeon x64";
  Verdict other = compare_records(r, g, {});
  EXPECT_TRUE(other.passed());
  EXPECT_EQ(other.notes.back(), "resources not compared: runner class Intel Xeon x64 vs golden AMD EPYC x2 (set "
                                "LOCKSTEP_RUNNER_CLASS to name a class of runners)");
}

TEST(Compare, OtherSeedIsExit2) {
  RunRecord g = make_record({1.0});
  RunRecord r = g;
  r.seed = 7;
  r.seed_overridden = true;
  try {
    compare_records(r, g, {});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kBadInput);
    EXPECT_NE(std::string(e.what()).find("seed 7 (overridden by LOCKSTEP_SEED) differs from the golden's seed 42"),
              std::string::npos);
  }
}

TEST(Compare, EmptyGoldenIsExit2) {
  RunRecord g = make_record({});
  g.series.clear();
  EXPECT_THROW(compare_records(make_record({1.0}), g, {}), Error);
}

TEST(Compare, DataDivergenceComesBeforeTraining) {
  RunRecord g = make_record({2.5, 2.25});
  g.probes = {make_probe(0, 0.5), make_probe(1, 0.5), make_probe(2, 0.5)};
  RunRecord r = g;
  r.probes[2] = make_probe(2, 0.75, std::string(32, 'e'));
  r.series["loss"].values[0] = 3.0;
  Verdict v = compare_records(r, g, {});
  EXPECT_EQ(v.first_divergence.rfind("data batch 2: probes.inputs.", 0), 0u) << v.first_divergence;
}

TEST(Compare, BitLevelOnlyDataChange) {
  RunRecord g = make_record({2.5});
  g.probes = {make_probe(0, 0.5)};
  RunRecord r = g;
  r.probes[0].inputs.xxh3_128 = std::string(32, 'f');
  r.probes[0].inputs.mean = 0.5 * (1 + 1e-9);
  // Same stack: exact, the mean moved and the hash differs -> fail.
  Verdict same = compare_records(r, g, {});
  EXPECT_FALSE(same.passed());
  const Finding* f = find(same, "probes[0].xxh3_128");
  ASSERT_NE(f, nullptr);
  EXPECT_NE(f->detail.find("bit-level only"), std::string::npos) << f->detail;
  // Cross stack: statistics within tolerance, the hash change is a note.
  r.fingerprint["torch.version"].value = "2.11.0";
  Verdict cross = compare_records(r, g, {});
  EXPECT_TRUE(cross.passed());
  ASSERT_EQ(cross.notes.size(), 1u);
  EXPECT_NE(cross.notes[0].find("bit-level only"), std::string::npos);
}

TEST(Compare, GradNormNamesTheFirstParameter) {
  RunRecord g = make_record({2.5, 2.25, 2.0});
  g.series["grad_norm/fc.weight"] = Series{Series::Dtype::kFloat64, {1, 1, 1}, {}, {}, {}, 0, {}};
  g.series["grad_norm/conv.weight"] = Series{Series::Dtype::kFloat64, {1, 1, 1}, {}, {}, {}, 0, {}};
  RunRecord r = g;
  r.series["grad_norm/fc.weight"].values[2] = 1.5;
  r.series["grad_norm/conv.weight"].values[1] = 1.5;
  r.series["grad_norm"].values[1] = 1.5;
  Verdict v = compare_records(r, g, {});
  EXPECT_NE(v.first_divergence.find("first parameter gradient to diverge: conv.weight at step 1"),
            std::string::npos)
      << v.first_divergence;
}

TEST(Compare, FirstBitDifferenceIgnoresFingerprint) {
  RunRecord a = make_record({2.5, 2.25});
  RunRecord b = a;
  b.fingerprint["git.dirty"] = {"x.cpp", false};
  EXPECT_EQ(first_bit_difference(a, b), "");
  b.series["loss"].values[1] = 2.0;
  EXPECT_EQ(first_bit_difference(b, a).rfind("train step 1: loss", 0), 0u);
}

// A trainer's declared data files (trainer.inputs): the files that changed,
// were added or removed are named; the per-file fields alone choose nothing.
TEST(Compare, AChangedTrainerDataFileIsAnInputChangeNamingTheFile) {
  RunRecord golden = make_record({2.5, 2.25});
  golden.fingerprint["trainer.inputs_xxh3"] = {std::string(32, 'a'), false, true};
  golden.fingerprint["trainer.input.data/train.bin"] = {std::string(32, '1'), false};
  golden.fingerprint["trainer.input.data/val.bin"] = {std::string(32, '2'), false};
  RunRecord run = golden;
  run.fingerprint["trainer.inputs_xxh3"].value = std::string(32, 'b');
  run.fingerprint["trainer.input.data/train.bin"].value = std::string(32, '3');
  run.fingerprint.erase("trainer.input.data/val.bin");
  run.fingerprint["trainer.input.data/test.bin"] = {std::string(32, '4'), false};
  Verdict v = compare_records(run, golden, {});
  EXPECT_EQ(v.exit_code(), ExitCode::kRegression);
  EXPECT_EQ(v.lane, Lane::kSameStack);
  EXPECT_EQ(v.first_divergence, "input changed: data files of trainer.inputs: data/test.bin added, data/train.bin "
                                "changed, data/val.bin removed (xxh3 " + std::string(32, 'a') + " → " +
                                    std::string(32, 'b') + ")");
}

// Inputs are not the stack: a changed data file never chooses the lane and
// always fails, first line naming it, whatever the values say.
TEST(Compare, AChangedInputFailsOnTheSameStackNamingItFirst) {
  RunRecord golden = make_record({2.5, 2.25});
  golden.fingerprint["data.file_xxh3"] = {std::string(32, 'a'), false, true};
  golden.fingerprint["data.path"] = {"wine_data.csv", false, false};
  golden.fingerprint["config.values_xxh3"] = {std::string(16, 'c'), false, true};
  RunRecord run = golden;
  run.fingerprint["data.file_xxh3"].value = std::string(32, 'b');
  Verdict v = compare_records(run, golden, {});
  EXPECT_EQ(v.exit_code(), ExitCode::kRegression);
  EXPECT_EQ(v.lane, Lane::kSameStack);  // the values are still held bit for bit
  EXPECT_EQ(v.first_divergence, "input changed: data file wine_data.csv, xxh3 " + std::string(32, 'a') + " → " +
                                    std::string(32, 'b'));
  ASSERT_EQ(v.findings.size(), 1u);  // every value is identical: the input alone fails
  EXPECT_EQ(v.findings[0].section, Section::kInput);
  ASSERT_FALSE(v.env_diffs.empty());
  EXPECT_TRUE(v.env_diffs[0].input);
  EXPECT_FALSE(v.env_diffs[0].relevant);

  // The statistics moved too: the input still comes first, the batch after.
  run.probes = {make_probe(0, 1.0)};
  golden.probes = {make_probe(0, 1.5)};
  Verdict moved = compare_records(run, golden, {});
  EXPECT_EQ(moved.first_divergence.rfind("input changed: data file wine_data.csv, xxh3 " + std::string(32, 'a') +
                                             " → " + std::string(32, 'b') + "; the values first moved at data batch 0: ",
                                         0),
            0u)
      << moved.first_divergence;
  EXPECT_EQ(moved.findings.front().section, Section::kInput);
  EXPECT_EQ(moved.findings[1].section, Section::kData);
  EXPECT_EQ(moved.findings[1].index, 0);
}

TEST(Compare, AnInputTheGoldenPredatesIsANoteNotAFailure) {
  // Made by a release older than the first to record the field (one newer
  // than this run's table: as new as the run).
  RunRecord golden = make_record({2.5, 2.25});
  golden.fingerprint["lockstep.version"] = {"0.1.0", false};
  RunRecord run = golden;
  run.fingerprint["lockstep.version"] = {"0.2.0", false};
  run.fingerprint["tokenizer_xxh3"] = {std::string(16, 'c'), false, true};
  Verdict v = compare_records(run, golden, {});
  EXPECT_TRUE(v.passed()) << v.first_divergence;
  EXPECT_EQ(v.lane, Lane::kSameStack);
  ASSERT_FALSE(v.notes.empty());
  EXPECT_EQ(v.notes[0], "the golden predates the input field tokenizer_xxh3 (run: cccccccccccccccc); re-bless to pin it");
}

// An input field every release records cannot be predated: a golden that
// lacks it, however old it says it is, or with no version at all, fails.
TEST(Compare, AGoldenClaimingNoReleaseOrNoneCannotPredateAnInput) {
  RunRecord golden = make_record({2.5, 2.25});
  RunRecord run = golden;
  run.fingerprint["lockstep.version"] = {"0.1.0", false};
  run.fingerprint["config.values_xxh3"] = {std::string(16, 'c'), false, true};
  Verdict none = compare_records(run, golden, {});
  EXPECT_EQ(none.exit_code(), ExitCode::kRegression);
  EXPECT_EQ(none.first_divergence,
            "the golden lacks the input field config.values_xxh3, which every lockstep release records, as it records "
            "lockstep.version, which the golden lacks too: taken out by hand; re-bless it");
  golden.fingerprint["lockstep.version"] = {"0.0.9", false};
  Verdict older = compare_records(run, golden, {});
  EXPECT_EQ(older.exit_code(), ExitCode::kRegression);
  EXPECT_EQ(older.first_divergence,
            "the golden lacks the input field config.values_xxh3, which every lockstep release records (the golden "
            "says it was made by lockstep 0.0.9, which is no release: the first is 0.1.0): taken out by hand; "
            "re-bless it");
  golden.fingerprint["lockstep.version"] = {"1.x", false};
  EXPECT_EQ(compare_records(run, golden, {}).exit_code(), ExitCode::kRegression);
}

// A golden made by the run's own lockstep version cannot predate what
// that version records: an input field or the init statistics it lacks
// were taken out by hand, and the comparison fails.
TEST(Compare, AGoldenOfTheRunsOwnVersionPredatesNothing) {
  RunRecord golden = make_record({2.5, 2.25});
  golden.fingerprint["lockstep.version"] = {"0.1.0", false};
  RunRecord run = golden;
  run.fingerprint["config.values_xxh3"] = {std::string(16, 'c'), false, true};
  Verdict v = compare_records(run, golden, {});
  EXPECT_EQ(v.exit_code(), ExitCode::kRegression);
  EXPECT_EQ(v.first_divergence,
            "the golden lacks the input field config.values_xxh3, which lockstep 0.1.0 (the version that made it) "
            "always records: taken out by hand; re-bless it");
  RunRecord with_init = golden;
  with_init.init["fc.weight"] = {0.0, 1.0, std::string(32, 'a')};
  Verdict init = compare_records(with_init, golden, {});
  EXPECT_EQ(init.exit_code(), ExitCode::kRegression);
  EXPECT_NE(init.first_divergence.find("the golden has no init statistics, though lockstep 0.1.0 (the version that "
                                       "made it) records them: taken out by hand; re-bless it"),
            std::string::npos) << init.first_divergence;
  // Made by another version: a note, as before.
  with_init.fingerprint["lockstep.version"].value = "0.2.0";
  EXPECT_TRUE(compare_records(with_init, golden, {}).passed());
}

TEST(Compare, AChangedInputAcrossStacksStillFails) {
  RunRecord golden = make_record({2.5, 2.25});
  golden.fingerprint["model.torchscript_xxh3"] = {std::string(32, 'a'), false, true};
  RunRecord run = golden;
  run.fingerprint["torch.version"].value = "2.11.0";
  run.fingerprint["model.torchscript_xxh3"].value = std::string(32, 'd');
  Verdict v = compare_records(run, golden, {});
  EXPECT_EQ(v.lane, Lane::kCrossStack);
  EXPECT_EQ(v.lane_reason,
            "1 determinism-relevant fingerprint field(s) differ (torch.version 1.13.0 → 2.11.0): configured tolerances "
            "apply");
  EXPECT_EQ(v.exit_code(), ExitCode::kRegression);
  EXPECT_EQ(v.first_divergence.rfind("input changed: TorchScript model (code and parameters), xxh3 ", 0), 0u)
      << v.first_divergence;
}

// Failures are listed in causal order: by step, and within a step the
// learning rate before the loss before the gradients.
TEST(Compare, FailuresAreListedInCausalOrder) {
  RunRecord golden = make_record({2.5, 2.25, 2.0});
  golden.series["lr"] = Series{Series::Dtype::kFloat64, {0.1, 0.1, 0.1}, {}, {}, {}, 0, {}};
  golden.series["param_norm"] = Series{Series::Dtype::kFloat64, {3, 3, 3}, {}, {}, {}, 0, {}};
  golden.series["grad_norm/fc.weight"] = Series{Series::Dtype::kFloat64, {1, 1, 1}, {}, {}, {}, 0, {}};
  RunRecord run = golden;
  run.series["lr"].values = {0.1, 0.2, 0.2};            // step 1
  run.series["loss"].values[2] = 1.0;                  // step 2
  run.series["grad_norm"].values = {1.0, 2.0, 2.0};    // step 1
  run.series["grad_norm/fc.weight"].values = {1, 2, 2};  // step 1
  run.series["param_norm"].values = {3, 4, 4};         // step 1
  Verdict v = compare_records(run, golden, {});
  std::vector<std::string> order;
  for (const auto& f : v.findings) order.push_back(f.subject + "@" + std::to_string(f.index));
  EXPECT_EQ(order, (std::vector<std::string>{"lr@1", "grad_norm/fc.weight@1", "grad_norm@1", "param_norm@1", "loss@2"}));
  EXPECT_EQ(v.first_divergence.rfind("train step 1: lr", 0), 0u) << v.first_divergence;
}

TEST(Compare, AnotherSmokesGoldenIsNamedBeforeItsSeed) {
  RunRecord golden = make_record({2.5});
  RunRecord run = golden;
  run.smoke = "wine-mlp";
  run.seed = 7;
  try {
    compare_records(run, golden, {}, {"r.json", "g.json"});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kBadInput);
    EXPECT_EQ(std::string(e.what()), "r.json: a run of smoke 'wine-mlp', but g.json is of smoke 'unit': records of "
                                     "different smokes are never compared");
  }
}

// An import made without --name is smoke "imported": the refusal says how
// to name it.
TEST(Compare, AnImportWithoutANameIsToldToGiveOne) {
  RunRecord golden = make_record({2.5});
  RunRecord run = golden;
  run.smoke = "imported";
  try {
    compare_records(run, golden, {}, {"i.json", "g.json"});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "i.json: a run of smoke 'imported', but g.json is of smoke 'unit': records of "
                                     "different smokes are never compared (`lockstep import` names its record's smoke "
                                     "'imported' unless --name gives the smoke's name: import again with --name unit)");
  }
}


// A record-borne name reaches the terminal without its control characters.
TEST(TextReport, ControlCharactersInNamesArePrintedEscaped) {
  RunRecord golden = make_record({2.5, 2.25});
  golden.series["evil\x1b[2J"] = Series{Series::Dtype::kFloat64, {1.0, 1.0}, {}, {}, {}, 0, {}};
  RunRecord run = golden;
  run.series["evil\x1b[2J"].values[1] = 3.0;
  std::string text = render_text(compare_records(run, golden, {}), false);
  EXPECT_EQ(text.find('\x1b'), std::string::npos) << text;
  EXPECT_NE(text.find("[train] evil\\x1b[2J: step 1: golden 1, run 3"), std::string::npos) << text;
}

// A seed changed in the config is a changed input (exit 1), not a refusal.
TEST(Compare, ASeedChangedInTheConfigIsAChangedInput) {
  RunRecord golden = make_record({2.5, 2.25});
  golden.fingerprint["config.values_xxh3"] = {std::string(16, 'a'), false, true};
  RunRecord run = golden;
  run.seed = 43;
  run.fingerprint["config.values_xxh3"].value = std::string(16, 'b');
  run.series["loss"].values[0] = 2.0;
  Verdict v = compare_records(run, golden, {});
  EXPECT_EQ(v.exit_code(), ExitCode::kRegression);
  EXPECT_EQ(v.first_divergence.rfind("input changed: smoke config unit", 0), 0u) << v.first_divergence;
}

// A golden whose seed.base was edited by hand, its config values hash the
// run's, contradicts itself: exit 2 naming the field, never a pass.
TEST(Compare, AGoldenClaimingAnotherSeedUnderTheSameConfigIsRefused) {
  RunRecord golden = make_record({2.5, 2.25});
  golden.fingerprint["config.values_xxh3"] = {std::string(16, 'a'), false, true};
  RunRecord run = golden;
  golden.seed = 1;
  try {
    compare_records(run, golden, {});
    FAIL() << "expected a refusal";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kBadInput);
    EXPECT_EQ(std::string(e.what()),
              "golden: seed.base: expected " + std::to_string(run.seed) + ", the seed of the config values it was made "
              "from (its config.values_xxh3 is the run's), got 1: the golden contradicts itself (edited by hand?); "
              "re-bless");
  }
}

// Records that keep the config's fields name the ones that changed.
TEST(Compare, AChangedConfigNamesItsFields) {
  RunRecord golden = make_record({2.5, 2.25});
  golden.fingerprint["config.values_xxh3"] = {std::string(16, 'a'), false, true};
  golden.config = {{"optimizer.lr", "0.01"}, {"seed", "1"}, {"steps", "2"}, {"model.name", "\"mlp\""}};
  RunRecord run = golden;
  run.fingerprint["config.values_xxh3"].value = std::string(16, 'b');
  run.config["optimizer.lr"] = "0.011";
  run.config["seed"] = "7";
  run.config.erase("model.name");
  Verdict v = compare_records(run, golden, {});
  EXPECT_EQ(v.exit_code(), ExitCode::kRegression);
  EXPECT_EQ(v.first_divergence, "input changed: smoke config unit: model.name \"mlp\" → (missing), optimizer.lr 0.01 "
                                "→ 0.011, seed 1 → 7 (xxh3 " + std::string(16, 'a') + " → " + std::string(16, 'b') + ")");
  for (int i = 0; i < 6; ++i) run.config["x" + std::to_string(i)] = "1";
  v = compare_records(run, golden, {});
  EXPECT_NE(v.first_divergence.find(", and 5 more (xxh3 "), std::string::npos) << v.first_divergence;
  // A golden made before records kept the fields: the hash only.
  golden.config.clear();
  v = compare_records(run, golden, {});
  EXPECT_EQ(v.first_divergence.rfind("input changed: smoke config unit (a field that determines the values", 0), 0u)
      << v.first_divergence;
}

// A planted change (run --perturb, --lr-scale) is said as one, not as an
// edit of the smoke config, also against a golden without the config's
// fields; a planted change beside an edit lists both as fields.
TEST(Compare, APlantedChangeIsSaidAsOne) {
  RunRecord golden = make_record({2.5, 2.25});
  golden.fingerprint["config.values_xxh3"] = {std::string(16, 'a'), false, true};
  golden.config = {{"optimizer.lr", "0.01"}};
  RunRecord run = golden;
  run.fingerprint["config.values_xxh3"].value = std::string(16, 'b');
  run.config["perturb"] = "\"parameter\"";
  const std::string planted = "input changed: the run was made with a planted change (perturb \"parameter\": lockstep "
                              "run --perturb / --lr-scale), which the golden was not (xxh3 " +
                              std::string(16, 'a') + " → " + std::string(16, 'b') + ")";
  EXPECT_EQ(compare_records(run, golden, {}).first_divergence, planted);
  RunRecord old = golden;
  old.config.clear();
  EXPECT_EQ(compare_records(run, old, {}).first_divergence, planted);
  run.config["optimizer.lr"] = "0.011";
  EXPECT_EQ(compare_records(run, golden, {}).first_divergence,
            "input changed: smoke config unit: optimizer.lr 0.01 → 0.011, perturb (missing) → \"parameter\" (xxh3 " +
                std::string(16, 'a') + " → " + std::string(16, 'b') + ")");
}

// An argument list that changed in one element names the element: a long
// command line cut at 64 bytes would hide where it differs.
TEST(Compare, AChangedArgumentListNamesTheArgument) {
  RunRecord golden = make_record({2.5, 2.25});
  golden.fingerprint["config.values_xxh3"] = {std::string(16, 'a'), false, true};
  golden.config = {{"trainer.command",
                    "[\"/usr/bin/python3\",\"train.py\",\"--steps\",\"{steps}\",\"--data\",\"{data}/digits.csv.gz\"]"}};
  RunRecord run = golden;
  run.fingerprint["config.values_xxh3"].value = std::string(16, 'b');
  run.config["trainer.command"] =
      "[\"/usr/bin/python3\",\"train.py\",\"--steps\",\"{steps}\",\"--data\",\"{config_dir}/digits.csv.gz\"]";
  Verdict v = compare_records(run, golden, {});
  EXPECT_EQ(v.first_divergence, "input changed: smoke config unit: trainer.command[5] \"{data}/digits.csv.gz\" → "
                                "\"{config_dir}/digits.csv.gz\" (xxh3 " + std::string(16, 'a') + " → " +
                                std::string(16, 'b') + ")");
  // Arguments added, removed or replaced by others of another count: what
  // differs between the parts both lists share at either end.
  const std::string base = "[\"/usr/bin/python3\",\"train.py\",\"--steps\",\"{steps}\",\"--seed\",\"{seed}\"]";
  const std::map<std::string, std::string> cases = {
      {"[\"/usr/bin/python3\",\"train.py\",\"--steps\",\"{steps}\",\"--lr\",\"0.051\",\"--seed\",\"{seed}\"]",
       "trainer.command[4] added \"--lr\", \"0.051\""},
      {"[\"/usr/bin/python3\",\"train.py\",\"--seed\",\"{seed}\"]", "trainer.command[2] removed \"--steps\", \"{steps}\""},
      {"[\"/usr/bin/python3\",\"other.py\",\"--fast\",\"--seed\",\"{seed}\"]",
       "trainer.command[1] \"train.py\", \"--steps\", \"{steps}\" → \"other.py\", \"--fast\""}};
  golden.config["trainer.command"] = base;
  for (const auto& [command, change] : cases) {
    run.config["trainer.command"] = command;
    v = compare_records(run, golden, {});
    EXPECT_EQ(v.first_divergence, "input changed: smoke config unit: " + change + " (xxh3 " + std::string(16, 'a') +
                                      " → " + std::string(16, 'b') + ")");
  }
}

// A config whose only changed field is where its data lives, the data's
// content unchanged, is the same input: a note, and no input is listed.
TEST(Compare, AMovedDataFileIsTheSameInput) {
  RunRecord golden = make_record({2.5, 2.25});
  golden.fingerprint["config.values_xxh3"] = {std::string(16, 'a'), false, true};
  golden.fingerprint["data.file_xxh3"] = {std::string(32, 'c'), false, true};
  golden.config = {{"data.path", "\"{data}/wine.csv\""}, {"seed", "1"}};
  RunRecord run = golden;
  run.fingerprint["config.values_xxh3"].value = std::string(16, 'b');
  run.config["data.path"] = "\"wine.csv\"";
  Verdict v = compare_records(run, golden, {});
  EXPECT_TRUE(v.passed()) << v.first_divergence;
  EXPECT_TRUE(v.env_diffs.empty());
  EXPECT_EQ(v.notes.front(), "data.path moved: \"{data}/wine.csv\" → \"wine.csv\"; its content is unchanged, so the input "
                             "is the same");
  run.fingerprint["data.file_xxh3"].value = std::string(32, 'd');  // the content moved too: a changed input
  EXPECT_EQ(compare_records(run, golden, {}).exit_code(), ExitCode::kRegression);
}

// The precision guard: a golden whose series a source rounded is refused
// under an exact rule or a tolerance below half its step, naming the series.
TEST(Compare, ARoundedGoldenNeedsATolerancePastItsRounding) {
  RunRecord golden = testing::make_record({2.5, 2.25}, {1.2345, 1.2346});
  golden.series["grad_norm"].rounded = 1e-4;
  RunRecord run = testing::make_record({2.5, 2.25}, {1.23451, 1.23462});
  TolerancePolicy exact;
  exact.series["grad_norm"] = Tolerance::exact();
  try {
    compare_records(run, golden, exact, {"run.json", "golden.json"});
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kBadInput);
    std::string m = e.what();
    EXPECT_NE(m.find("golden.json"), std::string::npos) << m;
    EXPECT_NE(m.find("series.grad_norm.rounded"), std::string::npos) << m;
    EXPECT_NE(m.find("rounded to 0.0001 by their source"), std::string::npos) << m;
    EXPECT_NE(m.find("an atol of at least 5e-05"), std::string::npos) << m;
  }
  TolerancePolicy tight;
  tight.series["grad_norm"] = Tolerance::close(1e-6, 1e-6);
  EXPECT_THROW(compare_records(run, golden, tight), Error);
  TolerancePolicy enough;
  enough.series["grad_norm"] = Tolerance::close(1e-4, 0);
  enough.same_stack_exact = false;
  EXPECT_EQ(compare_records(run, golden, enough).exit_code(), ExitCode::kPass);
}

// A change the loss and the norms hide (torchtitan's case: the loss held,
// the weight hashes moved): a bit-exact lane names the step the bytes
// moved; a tolerance lane says so in a note.
TEST(Compare, PerStepDigestsNameTheStepTheBytesMovedWhereTheLossHeld) {
  RunRecord g = make_record({2.5, 2.25, 2.0});
  const std::string a(32, 'a'), b(32, 'b'), c(32, 'c');
  g.digests = {{}, {a, a, a}, {b, b, b}};
  RunRecord r = g;
  r.digests.params[1] = c;
  Verdict v = compare_records(r, g, {});
  ASSERT_FALSE(v.passed());
  const Finding* f = find(v, "digests.params");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->index, 1);
  EXPECT_EQ(f->detail, "the parameters' bytes (after the update) first differ at step 1: golden " + a + ", run " + c +
                           " (XXH3-128 over every parameter)");
  EXPECT_EQ(v.first_divergence.rfind("train step 1: digests.params", 0), 0u) << v.first_divergence;
  EXPECT_EQ(v.values_checked, 6u + 6u);  // two series of three steps, two digests of three steps
  // The gradients moved first, at the same step: named before the update.
  r.digests.grads[1] = c;
  EXPECT_EQ(compare_records(r, g, {}).first_divergence.rfind("train step 1: digests.grads", 0), 0u);
  // Another stack: the bytes move by design.
  r.fingerprint["torch.version"].value = "2.6.0";
  Verdict cross = compare_records(r, g, {});
  EXPECT_TRUE(cross.passed());
  EXPECT_NE(std::find(cross.notes.begin(), cross.notes.end(),
                      "digests.grads differ from train step 1 (expected outside a bit-exact lane)"),
            cross.notes.end());
  // A golden made before digests: nothing to compare, nothing failed.
  RunRecord old = g;
  old.digests = {};
  EXPECT_TRUE(compare_records(r, old, {}).passed());
}

}  // namespace
}  // namespace lockstep

namespace lockstep {
namespace {

// An equivalence lane of another world size holds other per-rank series
// by design ("rank0/loss" beside the all-reduced loss): they are left out
// with a note and the global series held to the rule; the same per-rank
// series on both sides are compared as any series.
TEST(CompareVariant, ALaneOfAnotherWorldSizeLeavesThePerRankSeriesOut) {
  RunRecord base = testing::make_record({2.5, 2.25});
  RunRecord lane = base;
  lane.series["rank0/loss"] = lane.series["loss"];
  lane.series["rank1/loss"] = lane.series["loss"];
  lane.series["loss"].values[1] = 2.25 * (1 + 1e-6);
  const CompareLabels labels{"lane ranks2", "base run", "base run", "lane ranks2"};
  Verdict v = compare_variant(lane, base, Tolerance::close(0, 1e-5), /*same_batches=*/false, labels);
  EXPECT_TRUE(v.passed()) << v.first_divergence;
  EXPECT_NE(std::find(v.notes.begin(), v.notes.end(),
                      "per-rank series not compared: lane ranks2 holds rank0/loss, rank1/loss, the base run none "
                      "(another world size); the global series are compared"),
            v.notes.end());

  RunRecord base2 = lane;
  base2.series["loss"] = base.series["loss"];
  lane.series["rank1/loss"].values[0] = 3.0;  // same world size: compared
  v = compare_variant(lane, base2, Tolerance::close(0, 1e-5), false, labels);
  EXPECT_FALSE(v.passed());
  EXPECT_EQ(v.first_divergence.rfind("train step 0: rank1/loss", 0), 0u) << v.first_divergence;
}

// A lane that calls the modules with other shapes (micro-batches) has
// traces that locate nothing: left out, with a note saying where the two
// first part, shapes included.
TEST(CompareVariant, ALaneWhoseModulesSeeOtherShapesLeavesTheTracesOutAndSaysWhere) {
  RunRecord base = testing::make_record({2.5, 2.25});
  ModuleTraceEntry e;
  e.module = "fc1";
  e.input_xxh3 = std::string(32, 'a');
  e.output.xxh3_128 = std::string(32, 'b');
  e.output.dtype = "float32";
  e.output.shape = {32, 16};
  base.module_trace.steps = 1;
  base.module_trace.entries = {e};
  RunRecord lane = base;
  lane.module_trace.entries[0].output.shape = {16, 16};
  const CompareLabels labels{"lane split2", "base run", "base run", "lane split2"};
  Verdict v = compare_variant(lane, base, Tolerance::close(0, 1e-5), /*same_batches=*/false, labels);
  EXPECT_TRUE(v.passed()) << v.first_divergence;
  EXPECT_NE(std::find(v.notes.begin(), v.notes.end(),
                      "module traces not compared: lane split2 calls the modules with other shapes or in another "
                      "order (entry 0: fc1 (forward, train step 0) out float32 [32, 16] in the base run, fc1 "
                      "(forward, train step 0) out float32 [16, 16] in lane split2), so they cannot locate a difference"),
            v.notes.end())
      << ::testing::PrintToString(v.notes);
}

}  // namespace
}  // namespace lockstep
