#include "sim/sweep/plot_script.h"

#include "sim/sweep/plot_text.h"

namespace ess::plot {

namespace {

// Series colours: Paul Tol's "bright" scheme, told apart by colour-blind readers too, and a point
// shape each (gnuplot's defaults include a pale yellow).
const std::string kLinetypes =
    "set linetype 1 lc rgb '#4477aa' pt 7\nset linetype 2 lc rgb '#ee6677' pt 5\n"
    "set linetype 3 lc rgb '#228833' pt 9\nset linetype 4 lc rgb '#ccbb44' pt 11\n"
    "set linetype 5 lc rgb '#66ccee' pt 13\nset linetype 6 lc rgb '#aa3377' pt 15\n"
    "set linetype 7 lc rgb '#555555' pt 2\nset linetype 8 lc rgb '#ee7733' pt 3\nset linetype cycle 8\n";

// A gnuplot double-quoted string of two lines (backslash escapes are read inside).
std::string quote_lines(const std::string& first, const std::string& second) {
  std::string out = "\"";
  for (const char c : one_line(first) + '\n' + one_line(second)) {
    if (c == '\n') {
      out += "\\n";
    } else {
      if (c == '"' || c == '\\') out += '\\';
      out += c;
    }
  }
  return out + "\"";
}

}  // namespace

std::string make_script(const std::string& name, const std::string& title, const std::string& data_columns,
                        const std::string& settings, const std::string& plot, PlotFormat format, const Layout& layout) {
  const std::string size = std::to_string(layout.width) + "," + std::to_string(layout.height);
  std::string s = "# ess-sim plot: " + one_line(title) + "\n" +
                  "# Re-render with `gnuplot " + name + ".gp` in this directory. Data: " + name + ".dat, columns " +
                  data_columns + ".\n";
  bool first = true;
  if (format != PlotFormat::svg) {
    s += "# pngcairo where this gnuplot has it (antialiased), else the libgd png terminal.\n"
         "if (strstrt(' '.GPVAL_TERMINALS.' ', ' pngcairo ') > 0) {\n"
         "  set terminal pngcairo size " + size + " noenhanced font 'Sans,10'\n"
         "} else {\n"
         "  set terminal png size " + size + " noenhanced\n"
         "}\n"
         "set output '" + name + ".png'\n" + settings + plot;
    first = false;
  }
  if (format != PlotFormat::png) {
    s += "set terminal svg size " + size + " noenhanced font 'Sans,10' background '#ffffff'\n"
         "set output '" + name + ".svg'\n";
    s += first ? settings + plot : "replot\n";
  }
  return s + "set output\n";
}

std::vector<std::string> images_of(const std::string& name, PlotFormat format) {
  std::vector<std::string> out;
  if (format != PlotFormat::svg) out.push_back(name + ".png");
  if (format != PlotFormat::png) out.push_back(name + ".svg");
  return out;
}

std::string common_settings(const std::string& title, const std::string& xlabel, const std::string& ylabel,
                            const std::string& subtitle) {
  return "set encoding utf8\n"
         "set title " + (subtitle.empty() ? quote(title) : quote_lines(title, subtitle)) + " font ',12'\n"
         "set xlabel " + quote(xlabel) + "\n"
         "set ylabel " + quote(ylabel) + "\n"
         "set grid\n"
         "set key outside right top Left reverse\n" +
         kLinetypes;
}

std::string footnote(const std::string& text) {
  return "set label 100 " + quote(text) + " at screen 0.01, screen 0.012 left font ',9'\n";
}

std::string footnote_above(const std::string& text, int height) {
  return "set label 101 " + quote(text) + " at screen 0.01, screen " + num(28.0 / height) + " left font ',9'\n";
}

std::string clauses(const std::vector<std::string>& parts) { return "plot " + join(parts, ", \\\n     ") + "\n"; }

}  // namespace ess::plot
