#include "sim/sweep/plot_text.h"

#include <cctype>
#include <cstdio>

namespace ess::plot {

std::string num(double v) {
  char text[40];
  std::snprintf(text, sizeof text, "%.10g", v);
  return text;
}

std::string join(const std::vector<std::string>& parts, const std::string& sep) {
  std::string out;
  for (std::size_t i = 0; i < parts.size(); ++i) out += (i > 0 ? sep : "") + parts[i];
  return out;
}

std::string and_list(const std::vector<std::string>& items) {
  if (items.size() <= 1) return join(items, "");
  return join(std::vector<std::string>(items.begin(), items.end() - 1), ", ") + " and " + items.back();
}

std::string one_line(std::string s) {
  for (char& c : s) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = ' ';
  }
  return s;
}

std::string quote(const std::string& s) {
  std::string out = "'";
  for (const char c : one_line(s)) {
    out += c;
    if (c == '\'') out += '\'';
  }
  return out + "'";
}

std::string scalar_text(const Json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

std::string file_part(const std::string& text) {
  std::string out;
  for (const char ch : text) {
    const bool kept = std::isalnum(static_cast<unsigned char>(ch)) != 0 || ch == '.' || ch == '_' || ch == '+' ||
                      ch == '=' || ch == '-';
    out += kept ? ch : '_';
  }
  return out;
}

}  // namespace ess::plot
