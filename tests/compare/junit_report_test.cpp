#include "compare/junit_report.h"

#include <gtest/gtest.h>

#include "../record_builder.h"
#include "compare/compare.h"
#include "compare/markdown_report.h"

namespace lockstep {
namespace {

Verdict failing_verdict() {
  RunRecord g = testing::make_record({2.5, 2.25});
  RunRecord r = g;
  r.series["loss"].values[1] = 2.0;
  return compare_records(r, g, {});
}

TEST(JUnit, OneTestcasePerMetricWithClassnameAndFailure) {
  std::string xml = render_junit({failing_verdict()});
  EXPECT_EQ(xml.rfind("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"lockstep\" tests=\"2\" failures=\"1\" errors=\"0\">\n", 0), 0u) << xml;
  EXPECT_NE(xml.find("<testcase classname=\"lockstep.unit.train\" name=\"grad_norm\" time=\"0\"/>"), std::string::npos) << xml;
  EXPECT_NE(xml.find("<testcase classname=\"lockstep.unit.train\" name=\"loss\" time=\"0\">\n      <failure message=\"step 1: golden 2.25, run 2, |err| 0.25, rel 0.111, 1048576 ulp; rule exact; 1 of 2 fail\" type=\"regression\">"),
            std::string::npos)
      << xml;
  EXPECT_NE(xml.find("first divergence: train step 1: loss"), std::string::npos) << xml;
}

// Each equivalence lane is a testcase of its own; a failing lane's
// comparison files its rows under the lane, never as a golden regression.
TEST(JUnit, EachEquivalenceLaneIsATestcaseAndALanesRowsAreFiledUnderIt) {
  RunRecord g = testing::make_record({2.5, 2.25});
  Verdict pass = compare_records(g, g, {});
  pass.lanes = {{"workers0", "set {\"data\":{\"workers\":0}}", "bit for bit", true, true, "bit for bit", 24}};
  std::string xml = render_junit({pass});
  EXPECT_NE(xml.find("<testcase classname=\"lockstep.unit.equivalence\" name=\"workers0\" time=\"0\"/>"),
            std::string::npos) << xml;
  EXPECT_NE(xml.find("tests=\"3\" failures=\"0\""), std::string::npos) << xml;
  Verdict lane = failing_verdict();
  lane.equivalence_lane = "accum2";
  lane.lanes = {{"accum2", "trainer args --accum 2", "within ulp <= 4", true, false, "train step 1: loss", 4},
                {"workers0", "trainer args --num-workers 0", "bit for bit", false, false,
                 "not judged: the golden comparison failed first", 0}};
  xml = render_junit({lane});
  EXPECT_NE(xml.find("<testcase classname=\"lockstep.unit.equivalence.accum2.train\" name=\"loss\" time=\"0\">"),
            std::string::npos) << xml;
  EXPECT_EQ(xml.find("classname=\"lockstep.unit.train\""), std::string::npos) << xml;
  EXPECT_NE(xml.find("<testcase classname=\"lockstep.unit.equivalence\" name=\"accum2\" time=\"0\">\n      <failure "
                     "message=\"accum2 (trainer args --accum 2), held within ulp &lt;= 4: train step 1: loss\""),
            std::string::npos) << xml;
  EXPECT_NE(xml.find("<testcase classname=\"lockstep.unit.equivalence\" name=\"workers0\" time=\"0\">\n      <skipped "
                     "message=\"workers0 (trainer args --num-workers 0), held bit for bit: not judged: the golden "
                     "comparison failed first\"/>"),
            std::string::npos) << xml;
  nlohmann::json j = to_json(lane);
  EXPECT_EQ(j["equivalence_lane"], "accum2");
  EXPECT_EQ(j["lanes"][1]["judged"], false);
  EXPECT_EQ(j["lanes"][0]["detail"], "train step 1: loss");
}

// A smoke that could not run is an <error> of its own type, with the reason
// and no comparison placeholders; a nondeterministic one a typed <failure>.
TEST(JUnit, SmokesThatCouldNotRunAreErrors) {
  Verdict env;
  env.smoke = "tokens-cuda";
  env.code = ExitCode::kEnvironment;
  env.findings.push_back({Section::kStructure, "run", -1, "exit 3: CUDA is not usable: no driver"});
  Verdict nondet;
  nondet.smoke = "wine";
  nondet.code = ExitCode::kNondeterministic;
  nondet.findings.push_back({Section::kStructure, "run", -1, "exit 4: runs 1 and 2 differ at train step 0"});
  std::string xml = render_junit({env, nondet});
  EXPECT_NE(xml.find("<testsuites name=\"lockstep\" tests=\"2\" failures=\"1\" errors=\"1\">"), std::string::npos) << xml;
  EXPECT_NE(xml.find("<testsuite name=\"tokens-cuda\" tests=\"1\" failures=\"0\" errors=\"1\">"), std::string::npos)
      << xml;
  EXPECT_NE(xml.find("<error message=\"exit 3: CUDA is not usable: no driver\" type=\"environment\">exit 3: CUDA is "
                     "not usable: no driver</error>"),
            std::string::npos)
      << xml;
  EXPECT_NE(xml.find("<failure message=\"exit 4: runs 1 and 2 differ at train step 0\" type=\"nondeterministic\">"),
            std::string::npos)
      << xml;
  EXPECT_EQ(xml.find("lane:"), std::string::npos) << xml;
}

TEST(Markdown, FailingVerdictSummary) {
  std::string md = render_markdown(failing_verdict());
  EXPECT_EQ(md.rfind("### lockstep: <code>unit</code> ❌ FAIL (exit 1)\n\n**First divergence:** train step 1: loss", 0), 0u) << md;
  EXPECT_NE(md.find("| train | <code>loss</code> | step 1: golden 2.25, run 2, &#124;err&#124; 0.25,"), std::string::npos) << md;
  EXPECT_NE(md.find("1 of 2 series and probe fields within their rule; 4 values compared.\n"), std::string::npos) << md;
}

// The lanes beside the golden comparison, one row each, escaped.
TEST(Markdown, EquivalenceLanesAreATableBesideTheGoldenComparison) {
  Verdict v = failing_verdict();
  v.lanes = {{"accum2", "trainer args --accum 2", "within ulp <= 4", true, true, "largest difference rel 1e-07 in loss at step 9", 4},
             {"w|0", "set {\"data\":{\"workers\":0}}", "bit for bit", false, false, "not run: the golden comparison failed first", 0}};
  std::string md = render_markdown(v);
  EXPECT_NE(md.find("\n| equivalence lane | changes | held | result |\n|---|---|---|---|\n"
                    "| <code>accum2</code> | trainer args --accum 2 | within ulp &lt;= 4 | ✅ largest difference rel 1e-07 "
                    "in loss at step 9 |\n"),
            std::string::npos) << md;
  EXPECT_NE(md.find("| <code>w&#124;0</code> |"), std::string::npos) << md;
  EXPECT_NE(md.find("| ⏭ not run: the golden comparison failed first |"), std::string::npos) << md;
}

// Names come from records (series, parameters, trainers' tags): none may
// reach a report as markup.
RunRecord hostile_pair(RunRecord& golden) {
  golden = testing::make_record({2.5, 2.25});
  const std::string evil = "<script>alert(1)</script>|`x`*_[a](b)";
  golden.series[std::string("nul\0esc\x1b", 7)] = Series{Series::Dtype::kFloat64, {1.0, 1.0}, {}, {}, {}, 0, {}};
  golden.series[evil] = Series{Series::Dtype::kFloat64, {1.0, 1.0}, {}, {}, {}, 0, {}};
  RunRecord run = golden;
  run.series[evil].values[0] = 2.0;
  return run;
}

TEST(Markdown, RecordBorneNamesAreEscaped) {
  RunRecord golden;
  RunRecord run = hostile_pair(golden);
  std::string md = render_markdown(compare_records(run, golden, {}));
  EXPECT_EQ(md.find("<script>"), std::string::npos) << md;
  EXPECT_EQ(md.find("`x`"), std::string::npos) << md;
  EXPECT_EQ(md.find('\0'), std::string::npos);
  EXPECT_EQ(md.find('\x1b'), std::string::npos);
  EXPECT_NE(md.find("&lt;script&gt;alert(1)&lt;/script&gt;&#124;&#96;x&#96;&#42;&#95;&#91;a&#93;(b)"), std::string::npos)
      << md;
  RunRecord g2;
  g2.series["loss_\xe2\x80\xae" "cod.exe"] = Series{Series::Dtype::kFloat64, {1.0}, {}, {}, {}, 0, {}};
  RunRecord r2 = g2;
  r2.series["loss_\xe2\x80\xae" "cod.exe"].values[0] = 2.0;
  std::string bidi = render_markdown(compare_records(r2, g2, {}));
  EXPECT_EQ(bidi.find("\xe2\x80\xae"), std::string::npos) << bidi;
  EXPECT_NE(bidi.find("loss&#95;&#92;u202ecod.exe"), std::string::npos) << bidi;
}

TEST(JUnit, RecordBorneNamesAreEscaped) {
  RunRecord golden;
  RunRecord run = hostile_pair(golden);
  std::string xml = render_junit({compare_records(run, golden, {})});
  EXPECT_EQ(xml.find("<script>"), std::string::npos) << xml;
  EXPECT_NE(xml.find("name=\"&lt;script&gt;alert(1)&lt;/script&gt;|`x`*_[a](b)\""), std::string::npos) << xml;
}

TEST(JUnit, ACrossStackPassSaysSoInPropertiesAndSystemOut) {
  RunRecord golden = testing::make_record({2.5, 2.25});
  RunRecord run = golden;
  run.fingerprint["torch.version"].value = "2.11.0";
  Verdict v = compare_records(run, golden, {});  // default tolerances across stacks
  ASSERT_TRUE(v.passed());
  EXPECT_EQ(verdict_headline(v), "PASS (cross-stack: 1 stack field differs, within tolerance)");
  std::string xml = render_junit({v});
  EXPECT_NE(xml.find("<property name=\"lockstep.verdict\" value=\"PASS (cross-stack: 1 stack field differs, within "
                     "tolerance)\"/>"),
            std::string::npos)
      << xml;
  EXPECT_NE(xml.find("<property name=\"lockstep.lane\" value=\"cross-stack\"/>"), std::string::npos) << xml;
  EXPECT_NE(xml.find("<system-out>lane: cross-stack (1 determinism-relevant fingerprint field(s) differ "
                     "(torch.version 1.13.0 → 2.11.0): configured tolerances apply)\n  torch.version: golden 1.13.0, "
                     "run 2.11.0\n</system-out>"),
            std::string::npos)
      << xml;
  std::string md = render_markdown(v);
  EXPECT_EQ(md.rfind("### lockstep: <code>unit</code> ✅ PASS (cross-stack: 1 stack field differs, within tolerance) (exit 0)", 0), 0u)
      << md;
}

}  // namespace
}  // namespace lockstep
