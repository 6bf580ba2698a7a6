// One SVG chart as lockstep's HTML pages draw it (the comparison report and
// review, calibrate's spread page, the nightly history): a plot area inside
// margins, data coordinates mapped linearly to pixels, polylines, a filled
// band, marker lines, circles with hover text and labels; coordinates
// written with one decimal, every text XML-escaped. A page transforms its
// values first where it wants another scale (log10 of an error, the
// history's log10(1 + 99 u)).
//
//   SvgChart chart({560, 150, 36, 8, 8, 18}, "loss: share of the tolerance used");
//   chart.x_range(0, n - 1);
//   chart.y_range(lo, hi);
//   chart.polyline({{0, 1.5}, {1, 1.25}}, "#1f77b4");         // data coordinates
//   chart.text(2, chart.py(hi) + 8, "1.5", 10);                 // pixels
//   std::string svg = chart.finish();                           // "<svg ...>...</svg>"
//
// Pure string building: no I/O, no exceptions beyond std::bad_alloc.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace lockstep {

/// `text` escaped for XML character data and attribute values (W3C XML 1.0
/// section 2.4): & < > " ' as entities, control characters XML forbids
/// dropped, Unicode bidirectional controls shown as \u escapes (\u202e), never obeyed.
std::string xml_escape(const std::string& text);

/// A number as an SVG coordinate: one decimal ("12.5"; "12" for 12.0),
/// enough for a pixel and small over thousands of points.
std::string svg_coord(double v);

/// An SVG line chart (see the top of this file).
class SvgChart {
 public:
  /// The picture's size and the plot area's margins, in pixels.
  struct Frame {
    double width, height, left, right, top, bottom;
  };
  /// A point in data coordinates.
  struct Point {
    double x, y;
  };

  /// Opens an <svg> of `frame`'s size with `label` as its accessible name
  /// (aria-label) and `css_class` as its class when not empty. The data
  /// ranges start as [0, 1].
  SvgChart(Frame frame, std::string_view label, std::string_view css_class = "");

  /// Data x from `x0` (the plot area's left edge) to `x1` (its right);
  /// x0 == x1 puts every point at the left edge.
  void x_range(double x0, double x1);
  /// Data y from `lo` (the plot area's bottom) to `hi` (its top); lo == hi
  /// puts every point at the bottom.
  void y_range(double lo, double hi);

  /// Pixel column of data x / pixel row of data y.
  double px(double x) const;
  double py(double y) const;
  const Frame& frame() const { return frame_; }

  /// A line through `points` in order, points with a non-finite
  /// coordinate left out; `dash` an SVG stroke-dasharray ("4 2") or "".
  void polyline(const std::vector<Point>& points, std::string_view stroke, double width = 1.5,
                std::string_view dash = "");
  /// A filled polygon through `points` (a band: its upper edge left to
  /// right, then its lower edge right to left).
  void polygon(const std::vector<Point>& points, std::string_view fill);
  /// A vertical line at data x from pixel row `y0` to `y1`.
  void vline(double x, double y0, double y1, std::string_view stroke, double width = 1);
  /// Vertical lines at each data x across the plot area, one SVG path.
  void vlines(const std::vector<double>& xs, std::string_view stroke, double width = 1);
  /// A horizontal line at data y across the plot area.
  void hline(double y, std::string_view stroke, std::string_view dash = "");
  /// The plot area's rectangle, filled and outlined.
  void plot_area(std::string_view fill, std::string_view stroke);
  /// A circle at a data point of radius `r` pixels, with `css_class` when
  /// not empty and `title` as its hover text.
  void circle(Point at, double r, std::string_view css_class, std::string_view title);
  /// `text` at pixel (x, y), `size` px; `fill` and `anchor` (SVG
  /// text-anchor: "start", "middle", "end") when not empty.
  void text(double x, double y, std::string_view text, double size, std::string_view fill = "",
            std::string_view anchor = "");

  /// The chart, closed.
  std::string finish() const;

 private:
  Frame frame_;
  double x0_ = 0, x1_ = 1, lo_ = 0, hi_ = 1;
  std::string out_;
};

}  // namespace lockstep
