// The gnuplot script of a sweep chart (sim/sweep/plot_*.cpp): terminals per format, the settings
// every chart shares (title, labels, grid, legend, colours) and its small print.
#pragma once

#include <string>
#include <vector>

#include "sim/sweep/plot.h"

namespace ess::plot {

// Image sizes in pixels: wide enough for a legend outside the plot area.
inline constexpr int kLineWidth = 1280;
inline constexpr int kLineHeight = 800;
inline constexpr int kBarPixels = 40;  // per bar slot, so labels under 40 bars stay apart

struct Layout {
  int width = kLineWidth;
  int height = kLineHeight;
};

// The script: a header, then for each format a terminal, the settings and the plot (the second
// format replots), so that `gnuplot NAME.gp` in the chart's directory re-renders it.
[[nodiscard]] std::string make_script(const std::string& name, const std::string& title, const std::string& data_columns,
                                      const std::string& settings, const std::string& plot, PlotFormat format,
                                      const Layout& layout);
// NAME.png and/or NAME.svg.
[[nodiscard]] std::vector<std::string> images_of(const std::string& name, PlotFormat format);
// Title, axis labels, grid, legend and series colours; `subtitle`, when given, is the title's
// second line (a split chart's fixed values, --where).
[[nodiscard]] std::string common_settings(const std::string& title, const std::string& xlabel, const std::string& ylabel,
                                          const std::string& subtitle = "");
// A line of small print at the bottom of the image.
[[nodiscard]] std::string footnote(const std::string& text);
// A second line of small print, above the first, in an image `height` pixels tall.
[[nodiscard]] std::string footnote_above(const std::string& text, int height);
// "plot A, B, ...", a clause a line.
[[nodiscard]] std::string clauses(const std::vector<std::string>& parts);

}  // namespace ess::plot
