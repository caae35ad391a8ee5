#include "kernels/bench/gemm_shapes.h"
#include "kernels/bench/options.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdint>
#include <fstream>
#include <span>
#include <sstream>
#include <system_error>

namespace ess::bench {

namespace {

constexpr std::array<std::string_view, 3> kForms = {"dense", "per_head", "grouped"};
constexpr std::array<std::string_view, 4> kDtypes = {"fp32", "bf16", "fp16", "fp8"};
// Dimensions up to 2^31 - 1: cuBLASLt takes them as 64-bit, but no weight is anywhere near.
constexpr std::int64_t kMaxDimension = (std::int64_t{1} << 31) - 1;

std::vector<std::string_view> split(std::string_view line) {
  std::vector<std::string_view> fields;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = line.find(',', start);
    fields.push_back(line.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start));
    if (comma == std::string_view::npos) return fields;
    start = comma + 1;
  }
}

}  // namespace

GemmShapesFile parse_gemm_shapes(std::string_view text, const std::string& origin) {
  GemmShapesFile out;
  bool header = false;
  std::size_t rows = 0;
  std::size_t line_no = 0;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    start = end + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    const auto fail = [&](const std::string& message) {
      throw GemmShapesError(origin + ":" + std::to_string(line_no) + ": " + message);
    };
    if (line.empty() || line.front() == '#') continue;
    if (!header) {
      if (line != kGemmShapesHeader) {
        fail("expected the header \"" + std::string(kGemmShapesHeader) + "\", got \"" + std::string(line) + "\"");
      }
      header = true;
      continue;
    }
    const std::vector<std::string_view> f = split(line);
    if (f.size() != 7) fail("expected 7 comma-separated fields (" + std::string(kGemmShapesHeader) + "), got " +
                            std::to_string(f.size()));
    for (const std::string_view field : f) {
      if (field.empty()) fail("empty field in \"" + std::string(line) + "\"");
    }
    const auto integer = [&](std::string_view field, const char* name) {
      std::int64_t v = 0;
      const auto [p, ec] = std::from_chars(field.data(), field.data() + field.size(), v);
      if (ec != std::errc() || p != field.data() + field.size() || v < 1 || v > kMaxDimension) {
        fail(std::string(name) + ": expected an integer in [1, 2^31), got \"" + std::string(field) + "\"");
      }
      return v;
    };
    (void)integer(f[1], "tp");
    const std::int64_t n = integer(f[4], "n");
    const std::int64_t k = integer(f[5], "k");
    if (std::find(kForms.begin(), kForms.end(), f[3]) == kForms.end()) {
      fail("form: expected one of " + join_names(kForms) + ", got \"" + std::string(f[3]) + "\"");
    }
    if (std::find(kDtypes.begin(), kDtypes.end(), f[6]) == kDtypes.end()) {
      fail("dtype: expected one of " + join_names(kDtypes) + ", got \"" + std::string(f[6]) + "\"");
    }
    ++rows;
    if (f[3] == "per_head") {
      out.left_out.push_back(std::string(f[0]) + " " + std::string(f[2]) + " (per_head " + std::to_string(n) + " x " +
                             std::to_string(k) + ")");
      continue;
    }
    const bool present = std::any_of(out.shapes.begin(), out.shapes.end(),
                                     [&](const GemmShape& s) { return s.n == n && s.k == k; });
    if (!present) out.shapes.push_back(GemmShape{std::string(f[0]), std::string(f[2]), n, k});
  }
  if (!header) throw GemmShapesError(origin + ": no header \"" + std::string(kGemmShapesHeader) + "\" (empty file?)");
  if (rows == 0) throw GemmShapesError(origin + ": no GEMM rows after the header");
  return out;
}

GemmShapesFile read_gemm_shapes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw GemmShapesError(path + ": cannot be read");
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw GemmShapesError(path + ": read error");
  return parse_gemm_shapes(text.str(), path);
}

}  // namespace ess::bench
