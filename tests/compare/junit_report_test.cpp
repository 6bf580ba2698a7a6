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

TEST(JUnit, EscapesXml) {
  EXPECT_EQ(xml_escape("a<b & \"c\" 'd'>\x01"), "a&lt;b &amp; &quot;c&quot; &apos;d&apos;&gt;");
}

TEST(Markdown, FailingVerdictSummary) {
  std::string md = render_markdown(failing_verdict());
  EXPECT_EQ(md.rfind("### lockstep: `unit` ❌ FAIL (exit 1)\n\n**First divergence:** train step 1: loss", 0), 0u) << md;
  EXPECT_NE(md.find("| train | `loss` | step 1: golden 2.25, run 2,"), std::string::npos) << md;
  EXPECT_NE(md.find("1 of 2 series and probe fields within their rule; 4 values compared.\n"), std::string::npos) << md;
}

}  // namespace
}  // namespace lockstep
