// The one SVG chart writer of lockstep's pages: data coordinates mapped to
// the plot area exactly, one decimal per coordinate, non-finite points left
// out of a line, and every text and attribute XML-escaped.
#include "core/svg_chart.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

namespace lockstep {
namespace {

TEST(XmlEscape, EntitiesForbiddenControlsAndBidiControls) {
  EXPECT_EQ(xml_escape("a<b & \"c\" 'd'>\x01"), "a&lt;b &amp; &quot;c&quot; &apos;d&apos;&gt;");
  EXPECT_EQ(xml_escape("x\xe2\x80\xae" "y"), "x\\u202ey");  // a right-to-left override, shown
}

TEST(SvgCoord, OneDecimalWithoutATrailingZero) {
  EXPECT_EQ(svg_coord(12.0), "12");
  EXPECT_EQ(svg_coord(12.25), "12.2");  // printf rounds half to even on the binary value
  EXPECT_EQ(svg_coord(0.04), "0");
  EXPECT_EQ(svg_coord(-0.04), "0");
  EXPECT_EQ(svg_coord(-3.5), "-3.5");
}

// 100 x 50 with margins 10 (left), 10 (right), 5 (top), 5 (bottom): the
// plot area is x 10..90, y 5..45.
TEST(SvgChart, MapsDataToThePlotArea) {
  SvgChart chart({100, 50, 10, 10, 5, 5}, "loss <run>", "trend");
  chart.x_range(0, 4);
  chart.y_range(-1, 1);
  EXPECT_EQ(chart.px(0), 10);
  EXPECT_EQ(chart.px(4), 90);
  EXPECT_EQ(chart.px(1), 30);
  EXPECT_EQ(chart.py(1), 5);
  EXPECT_EQ(chart.py(-1), 45);
  EXPECT_EQ(chart.py(0), 25);
  chart.polyline({{0, 1}, {1, NAN}, {2, 0}, {INFINITY, 0}, {4, -1}}, "#1f77b4", 1.5, "4 2");
  chart.text(2, 10, "a < b", 10, "#d62728", "end");
  EXPECT_EQ(chart.finish(),
            "<svg class=\"trend\" width=\"100\" height=\"50\" viewBox=\"0 0 100 50\" role=\"img\" "
            "aria-label=\"loss &lt;run&gt;\"><polyline points=\"10,5 50,25 90,45 \" fill=\"none\" stroke=\"#1f77b4\" "
            "stroke-width=\"1.5\" stroke-dasharray=\"4 2\"/><text x=\"2\" y=\"10\" font-size=\"10\" fill=\"#d62728\" "
            "text-anchor=\"end\">a &lt; b</text></svg>");
}

TEST(SvgChart, OnePointRangesSitAtTheLeftAndBottom) {
  SvgChart chart({100, 50, 10, 10, 5, 5}, "x");
  chart.x_range(3, 3);
  chart.y_range(2, 2);
  EXPECT_EQ(chart.px(3), 10);
  EXPECT_EQ(chart.py(2), 45);
}

TEST(SvgChart, MarksBandsAndCircles) {
  SvgChart chart({100, 50, 10, 10, 5, 5}, "");
  chart.x_range(0, 8);
  chart.y_range(0, 4);
  chart.vlines({2, 4}, "#7f7f7f");
  chart.vlines({}, "#9467bd");  // nothing to mark: no element
  chart.hline(1, "#d62728", "4 3");
  chart.circle({4, 2}, 3, "f", "night 5: <fail>");
  chart.polygon({{0, 4}, {8, 4}, {8, 0}}, "#ddd");
  EXPECT_EQ(chart.finish(),
            "<svg width=\"100\" height=\"50\" viewBox=\"0 0 100 50\" role=\"img\">"
            "<path d=\"M30 5V45M50 5V45\" stroke=\"#7f7f7f\" stroke-width=\"1\"/>"
            "<line x1=\"10\" x2=\"90\" y1=\"35\" y2=\"35\" stroke=\"#d62728\" stroke-dasharray=\"4 3\"/>"
            "<circle cx=\"50\" cy=\"25\" r=\"3\" class=\"f\"><title>night 5: &lt;fail&gt;</title></circle>"
            "<polygon points=\"10,5 90,5 90,45 \" fill=\"#ddd\"/></svg>");
}

}  // namespace
}  // namespace lockstep
