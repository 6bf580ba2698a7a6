#include "compare/html_report.h"

#include <gtest/gtest.h>

#include "../record_builder.h"
#include "compare/compare.h"

namespace lockstep {
namespace {

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}

TEST(Html, PlotPerSeriesDivergenceMarkedNoNetwork) {
  RunRecord g = testing::make_record({2.5, 2.25, 2.0});
  g.probes = {testing::make_probe(0, 0.5), testing::make_probe(1, 0.5)};
  RunRecord r = g;
  r.series["loss"].values[1] = 2.0;
  r.probes[1] = testing::make_probe(1, 0.75, std::string(32, 'e'));
  Verdict v = compare_records(r, g, {});
  std::string html = render_html(v, r, g);
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_EQ(count(html, "<svg "), 4u);  // loss and grad_norm, each with its error plot
  EXPECT_NE(html.find("|run - golden| = 0 at every step"), std::string::npos);  // grad_norm
  EXPECT_NE(html.find("first failure: step 1"), std::string::npos);
  EXPECT_NE(html.find("<b>First divergence:</b> data batch 1"), std::string::npos) << html.substr(0, 600);
  EXPECT_EQ(count(html, "<tr><td>"), 2u);  // two probe rows
  EXPECT_NE(html.find("<td class=bad>differs</td>"), std::string::npos);
  EXPECT_EQ(html.find("http"), std::string::npos);  // self-contained
  EXPECT_EQ(html.find("<script"), std::string::npos);
}

// The module trace grid: one row per module path (escaped), one column per
// (step, phase), the first divergent cell marked.
// A golden without batch probes (imported curves) beside a run with them:
// not compared, said plainly, never a red count on a passing page.
TEST(Html, ProbesOnOneSideOnlyAreSaidNotComparedNotRed) {
  RunRecord g = testing::make_record({2.5, 2.25});
  RunRecord r = g;
  g.fingerprint = {{"import.source", {"jsonl /ci/loss.jsonl (xxh3 0123456789abcdef)", false}}};
  g.contract.clear();
  r.probes = {testing::make_probe(0, 1.0), testing::make_probe(1, 2.0)};
  Verdict v = compare_records(r, g, {});
  ASSERT_EQ(v.exit_code(), ExitCode::kPass) << v.first_divergence;
  std::string html = render_html(v, r, g);
  EXPECT_NE(html.find("<p>the golden holds no batch probes, the run 2: not compared</p>"), std::string::npos);
  EXPECT_EQ(html.find("batch count"), std::string::npos);
  // Provenance lines, escaped, under the labels (review's pending and current).
  std::string with = render_html(v, r, g, {"pending golden: made by check <ci>", "golden: blessed"});
  EXPECT_NE(with.find("<p><b>Provenance</b><br>pending golden: made by check &lt;ci&gt;<br>golden: blessed</p>"),
            std::string::npos);
}

TEST(Html, ModuleTraceGridMarksTheFirstDivergentCell) {
  RunRecord g = testing::make_record({2.5, 2.25});
  auto entry = [](int64_t step, TracePhase phase, const char* module, char hash) {
    ModuleTraceEntry e;
    e.step = step;
    e.phase = phase;
    e.module = module;
    e.input_xxh3 = std::string(32, '0');
    e.output.shape = {2};
    e.output.dtype = "float32";
    e.output.xxh3_128 = std::string(32, hash);
    return e;
  };
  g.module_trace.steps = 1;
  g.module_trace.entries = {entry(0, TracePhase::kForward, "conv", 'a'), entry(0, TracePhase::kForward, "<b>", 'b'),
                            entry(0, TracePhase::kBackward, "<b>", 'c')};
  RunRecord r = g;
  r.module_trace.entries[1].output.xxh3_128 = std::string(32, 'x');
  r.module_trace.entries[2].output.xxh3_128 = std::string(32, 'y');
  Verdict v = compare_records(r, g, {});
  std::string html = render_html(v, r, g);
  EXPECT_NE(html.find("<tr><th>module</th><th>step 0 forward</th><th>step 0 backward</th></tr>"), std::string::npos)
      << html;
  EXPECT_NE(html.find("<tr><td style=\"text-align:left\">conv</td><td class=ok>=</td><td>·</td></tr>"),
            std::string::npos);
  EXPECT_NE(html.find("<tr><td style=\"text-align:left\">&lt;b&gt;</td><td class=bad style=\"background:#fdd\">■ "
                      "≠</td><td class=bad>≠</td></tr>"),
            std::string::npos)
      << html;
  EXPECT_NE(html.find("<b>First divergent module:</b> train step 0, forward, &lt;b&gt;: input identical"),
            std::string::npos);
  EXPECT_EQ(html.find("<b>: input"), std::string::npos);  // never raw
}

// The "first failure" label stays inside the picture: above the plot area
// (never over a curve), left of its line at the last step, right of it at
// step 0.
TEST(Html, FirstFailureLabelStaysInsideThePlot) {
  RunRecord g = testing::make_record({2.5, 2.25, 2.0, 1.5});
  RunRecord first = g, last = g;
  first.series["loss"].values[0] = 2.0;
  last.series["loss"].values[3] = 1.0;
  std::string at0 = render_html(compare_records(first, g, {}), first, g);
  EXPECT_NE(at0.find("x=\"63\" y=\"12\" font-size=\"11\" fill=\"#d62728\" text-anchor=\"start\">first failure: step 0"),
            std::string::npos);
  std::string at3 = render_html(compare_records(last, g, {}), last, g);
  EXPECT_NE(at3.find("x=\"547\" y=\"12\" font-size=\"11\" fill=\"#d62728\" text-anchor=\"end\">first failure: step 3"),
            std::string::npos)
      << at3.substr(at3.find("first failure") - 200, 300);
}

// A long series is drawn thinned (each pixel column its smallest and
// largest value), a one-step spike included, with the first failure's
// neighbourhood at full resolution; a long probe table shows its first
// rows and the first differing batch, and says what it left out. The page
// stays small whatever the length.
TEST(Html, LongSeriesAndTablesStaySmall) {
  std::vector<double> loss(200000);
  for (size_t i = 0; i < loss.size(); ++i) loss[i] = 2.0 - 1e-6 * static_cast<double>(i);
  loss[1234] = 50.0;  // a spike of one step
  RunRecord g = testing::make_record(loss);
  for (int64_t b = 0; b < 5000; ++b) g.probes.push_back(testing::make_probe(b, 0.5));
  RunRecord r = g;
  r.series["loss"].values[150000] = 1.0;
  r.probes[4000] = testing::make_probe(4000, 0.75, std::string(32, 'e'));
  std::string html = render_html(compare_records(r, g, {}), r, g);
  EXPECT_LT(html.size(), 400000u);
  EXPECT_NE(html.find("200000 steps: each pixel column shows the smallest and largest value of its steps"),
            std::string::npos);
  EXPECT_NE(html.find("steps 149755 to 150244, every step (around the first failure):"), std::string::npos);
  EXPECT_NE(html.find("first failure: step 150000"), std::string::npos);
  EXPECT_NE(html.find(">50</text>"), std::string::npos);  // the spike sets the y axis: it was kept
  EXPECT_EQ(count(html, "<tr><td>"), 100u + 10u);          // the first 100 rows, batches 3995..4004
  EXPECT_NE(html.find("3895 more batch(es) not shown, bytes identical"), std::string::npos);
  EXPECT_NE(html.find("995 more batch(es) not shown, bytes identical"), std::string::npos);
}

TEST(Html, RecordBorneNamesAreEscaped) {
  RunRecord g = testing::make_record({2.5, 2.25});
  g.series["<script>alert(1)</script>"] = Series{Series::Dtype::kFloat64, {1.0, 1.0}, {}, {}, {}, 0, {}};
  RunRecord r = g;
  r.series["<script>alert(1)</script>"].values[0] = 2.0;
  std::string html = render_html(compare_records(r, g, {}), r, g);
  EXPECT_EQ(html.find("<script>"), std::string::npos);
  EXPECT_NE(html.find("&lt;script&gt;alert(1)&lt;/script&gt;"), std::string::npos);
}

TEST(Html, EquivalenceLanesAreATableBesideTheGoldenComparison) {
  RunRecord g = testing::make_record({2.5, 2.25});
  Verdict v = compare_records(g, g, {});
  v.lanes = {{"<b>", "trainer args --accum 2", "bit for bit", true, false, "train step 0: loss", 4}};
  std::string html = render_html(v, g, g);
  EXPECT_NE(html.find("<h2>Equivalence lanes</h2><table><tr><th>lane</th><th>changes</th><th>held</th><th>result</th></tr>"
                      "<tr><td>&lt;b&gt;</td><td>trainer args --accum 2</td><td>bit for bit</td><td class=bad>differs: "
                      "train step 0: loss</td></tr></table>"),
            std::string::npos) << html;
}

}  // namespace
}  // namespace lockstep
