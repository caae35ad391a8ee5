#include "models/gemm_table.h"
#include "sim/base/error.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace ess {

void GemmTable::add(std::int64_t m, std::int64_t n, std::int64_t k, DType dtype, double seconds) {
  if (m < 1 || n < 1 || k < 1 || !(seconds > 0.0)) {
    throw InputError("a measured GEMM needs m, n, k >= 1 and a time > 0 (got m " + std::to_string(m) +
                     ", n " + std::to_string(n) + ", k " + std::to_string(k) + ")");
  }
  auto& v = shapes[Key{n, k, dtype}];
  const auto it = std::lower_bound(v.begin(), v.end(), m, [](const auto& p, std::int64_t x) { return p.first < x; });
  if (it != v.end() && it->first == m) {
    throw InputError("GEMM m " + std::to_string(m) + ", n " + std::to_string(n) + ", k " +
                     std::to_string(k) + " " + std::string(to_string(dtype)) + " is measured twice");
  }
  v.insert(it, {m, seconds});
}

std::optional<GemmTableHit> gemm_table_lookup(const GemmTable& t, std::int64_t m, std::int64_t n, std::int64_t k,
                                              DType dtype) {
  const auto s = t.shapes.find(GemmTable::Key{n, k, dtype});
  if (s == t.shapes.end() || s->second.empty()) return std::nullopt;
  const auto& v = s->second;
  if (m <= v.front().first) return GemmTableHit{v.front(), v.front()};
  if (m >= v.back().first) return GemmTableHit{v.back(), v.back()};
  const auto up = std::lower_bound(v.begin(), v.end(), m, [](const auto& p, std::int64_t x) { return p.first < x; });
  if (up->first == m) return GemmTableHit{*up, *up};
  return GemmTableHit{*(up - 1), *up};
}

}  // namespace ess
