// MeasuredGemmTable: GEMM times measured on the GPU itself, used for the weight shapes they cover.
//
// A roofline cannot follow cuBLAS's kernel choices (tile shapes, split-K, wave quantisation): on
// Vidur's A100 data its k-fold error is 5-7% median and 20-45% at worst. Where a profile carries
// measurements of a weight shape (n, k, dtype), the GEMM model interpolates them instead:
//
//   m inside the measured range:  log t linear in log m between the two nearest measured m
//   m outside it:                 the roofline's shape anchored at the nearest measured m,
//                                 t(m) = t(m_edge) x roofline(m) / roofline(m_edge)
//
// Shapes the table does not cover use the roofline (hardware.kernels.gemm). The table lives in a
// hardware profile as hardware.kernels.gemm_measured (written by `ess-sim calibrate`).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <tuple>
#include <vector>

#include "models/dtype.h"

namespace ess {

struct GemmTable {
  // (n, k, dtype) -> measured (m, seconds), sorted by m, m unique.
  using Key = std::tuple<std::int64_t, std::int64_t, DType>;
  std::map<Key, std::vector<std::pair<std::int64_t, double>>> shapes;

  [[nodiscard]] bool empty() const { return shapes.empty(); }
  [[nodiscard]] std::size_t points() const {
    std::size_t n = 0;
    for (const auto& [k, v] : shapes) n += v.size();
    return n;
  }
  // Adds one measurement; throws InputError for m < 1, n < 1, k < 1, seconds <= 0 or a
  // repeated (n, k, dtype, m).
  void add(std::int64_t m, std::int64_t n, std::int64_t k, DType dtype, double seconds);
};

// The measured points bracketing m for the weight shape (n, k, dtype): (lower, upper) where
// lower.m <= m <= upper.m, both the same point when m is measured exactly or lies outside the
// measured range (then the nearest end). nullopt when the table does not cover the shape.
struct GemmTableHit {
  std::pair<std::int64_t, double> lower;
  std::pair<std::int64_t, double> upper;
};
[[nodiscard]] std::optional<GemmTableHit> gemm_table_lookup(const GemmTable& t, std::int64_t m, std::int64_t n,
                                                            std::int64_t k, DType dtype);

}  // namespace ess
