#include "core/svg_chart.h"

#include <cmath>
#include <cstdio>

#include "core/error.h"

namespace lockstep {

std::string xml_escape(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  std::string bidi;
  for (size_t i = 0; i < text.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    if (size_t n = bidi_control_at(text, i, &bidi)) {  // shown, never obeyed
      out += bidi;
      i += n - 1;
      continue;
    }
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default:
        // XML 1.0 allows only TAB, LF, CR below 0x20.
        if (c < 0x20 && c != '\t' && c != '\n' && c != '\r') break;
        out += static_cast<char>(c);
    }
  }
  return out;
}

std::string svg_coord(double v) {
  char buf[32];
  int n = std::snprintf(buf, sizeof buf, "%.1f", v);
  std::string out(buf, n > 0 ? static_cast<size_t>(n) : 0);
  if (out.size() > 2 && out.compare(out.size() - 2, 2, ".0") == 0) out.resize(out.size() - 2);  // "12", not "12.0"
  return out == "-0" ? "0" : out;
}

namespace {

// ` name="value"` with the value escaped; nothing for an empty value.
std::string attribute(std::string_view name, std::string_view value) {
  if (value.empty()) return "";
  return " " + std::string(name) + "=\"" + xml_escape(std::string(value)) + "\"";
}

}  // namespace

SvgChart::SvgChart(Frame frame, std::string_view label, std::string_view css_class) : frame_(frame) {
  out_ = "<svg" + attribute("class", css_class) + " width=\"" + svg_coord(frame.width) + "\" height=\"" +
         svg_coord(frame.height) + "\" viewBox=\"0 0 " + svg_coord(frame.width) + " " + svg_coord(frame.height) +
         "\" role=\"img\"" + attribute("aria-label", label) + ">";
}

void SvgChart::x_range(double x0, double x1) { x0_ = x0, x1_ = x1; }

void SvgChart::y_range(double lo, double hi) { lo_ = lo, hi_ = hi; }

double SvgChart::px(double x) const {
  double span = frame_.width - frame_.left - frame_.right;
  return frame_.left + (x1_ != x0_ ? span * (x - x0_) / (x1_ - x0_) : 0);
}

double SvgChart::py(double y) const {
  double span = frame_.height - frame_.top - frame_.bottom;
  return frame_.top + span * (hi_ != lo_ ? 1 - (y - lo_) / (hi_ - lo_) : 1);
}

void SvgChart::polyline(const std::vector<Point>& points, std::string_view stroke, double width, std::string_view dash) {
  out_ += "<polyline points=\"";
  for (const Point& p : points)
    if (std::isfinite(p.x) && std::isfinite(p.y)) out_ += svg_coord(px(p.x)) + "," + svg_coord(py(p.y)) + " ";
  out_ += "\" fill=\"none\"" + attribute("stroke", stroke) + " stroke-width=\"" + svg_coord(width) + "\"" +
          attribute("stroke-dasharray", dash) + "/>";
}

void SvgChart::polygon(const std::vector<Point>& points, std::string_view fill) {
  out_ += "<polygon points=\"";
  for (const Point& p : points)
    if (std::isfinite(p.x) && std::isfinite(p.y)) out_ += svg_coord(px(p.x)) + "," + svg_coord(py(p.y)) + " ";
  out_ += "\"" + attribute("fill", fill) + "/>";
}

void SvgChart::vline(double x, double y0, double y1, std::string_view stroke, double width) {
  out_ += "<line x1=\"" + svg_coord(px(x)) + "\" x2=\"" + svg_coord(px(x)) + "\" y1=\"" + svg_coord(y0) + "\" y2=\"" +
          svg_coord(y1) + "\"" + attribute("stroke", stroke) + " stroke-width=\"" + svg_coord(width) + "\"/>";
}

void SvgChart::vlines(const std::vector<double>& xs, std::string_view stroke, double width) {
  if (xs.empty()) return;
  std::string d;
  for (double x : xs)
    d += "M" + svg_coord(px(x)) + " " + svg_coord(frame_.top) + "V" + svg_coord(frame_.height - frame_.bottom);
  out_ += "<path d=\"" + d + "\"" + attribute("stroke", stroke) + " stroke-width=\"" + svg_coord(width) + "\"/>";
}

void SvgChart::hline(double y, std::string_view stroke, std::string_view dash) {
  out_ += "<line x1=\"" + svg_coord(frame_.left) + "\" x2=\"" + svg_coord(frame_.width - frame_.right) + "\" y1=\"" +
          svg_coord(py(y)) + "\" y2=\"" + svg_coord(py(y)) + "\"" + attribute("stroke", stroke) +
          attribute("stroke-dasharray", dash) + "/>";
}

void SvgChart::plot_area(std::string_view fill, std::string_view stroke) {
  out_ += "<rect x=\"" + svg_coord(frame_.left) + "\" y=\"" + svg_coord(frame_.top) + "\" width=\"" +
          svg_coord(frame_.width - frame_.left - frame_.right) + "\" height=\"" +
          svg_coord(frame_.height - frame_.top - frame_.bottom) + "\"" + attribute("fill", fill) +
          attribute("stroke", stroke) + "/>";
}

void SvgChart::circle(Point at, double r, std::string_view css_class, std::string_view title) {
  out_ += "<circle cx=\"" + svg_coord(px(at.x)) + "\" cy=\"" + svg_coord(py(at.y)) + "\" r=\"" + svg_coord(r) + "\"" +
          attribute("class", css_class) + "><title>" + xml_escape(std::string(title)) + "</title></circle>";
}

void SvgChart::text(double x, double y, std::string_view text, double size, std::string_view fill,
                    std::string_view anchor) {
  out_ += "<text x=\"" + svg_coord(x) + "\" y=\"" + svg_coord(y) + "\" font-size=\"" + svg_coord(size) + "\"" +
          attribute("fill", fill) + attribute("text-anchor", anchor) + ">" + xml_escape(std::string(text)) + "</text>";
}

std::string SvgChart::finish() const { return out_ + "</svg>"; }

}  // namespace lockstep
