#include "calibration/csv_table.h"

#include <cstdio>

namespace ess::measurement {

std::string range_text(const IntRange& r) {
  return "an integer from " + std::to_string(r.min) + " to " + std::to_string(r.max) + " (" + r.what + ")";
}

std::string shown(std::string_view s) {
  constexpr std::size_t kShown = 40;
  std::string out;
  for (std::size_t i = 0; i < s.size() && i < kShown; ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", c);
      out += hex;
    }
  }
  if (s.size() > kShown) out += "...";
  return out;
}

std::vector<CsvRow> parse_csv(std::string_view text, const std::string& path) {
  std::vector<CsvRow> rows;
  CsvRow row;
  row.line = 1;
  std::string field;
  bool quoted = false;
  bool any = false;
  std::size_t line = 1;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c == '"') {
        if (i + 1 < text.size() && text[i + 1] == '"') {
          field += '"';
          ++i;
        } else {
          quoted = false;
        }
      } else {
        if (c == '\n') ++line;
        field += c;
      }
      continue;
    }
    if (c == '#' && rows.empty() && !any && field.empty()) {
      // A comment line before the header (the transcribed tables' provenance): skipped whole.
      while (i + 1 < text.size() && text[i + 1] != '\n' && text[i + 1] != '\r') ++i;
      continue;
    }
    if (c == '"') {
      quoted = true;
      any = true;
    } else if (c == ',') {
      row.fields.push_back(std::move(field));
      field.clear();
      any = true;
    } else if (c == '\n' || c == '\r') {
      if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ++i;
      if (any || !field.empty()) {
        row.fields.push_back(std::move(field));
        rows.push_back(std::move(row));
      }
      field.clear();
      row = CsvRow{};
      any = false;
      ++line;
      row.line = line;
    } else {
      field += c;
      any = true;
    }
  }
  if (quoted) throw MeasurementError(path, "line " + std::to_string(row.line), "unterminated quoted field");
  if (any || !field.empty()) {
    row.fields.push_back(std::move(field));
    rows.push_back(std::move(row));
  }
  return rows;
}

}  // namespace ess::measurement
