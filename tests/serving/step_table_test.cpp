// The step tables' lookups worked out by hand: quadratic interpolation along the chunk-token axis,
// and a padded CUDA-graph step less its padding rows' host time.
#include <catch2/catch.hpp>

#include "sim/serving/step_table.h"

using namespace ess;

TEST_CASE("a chunk table interpolates its tokens axis through three points: exact for a quadratic, where the chord overshoots",
          "[serving][table]") {
  // time = t^2 / 1e6 s at chunk tokens t, the same at both cached points; utilisation 0.5.
  const std::vector<std::int64_t> tokens = {256, 512, 1024, 2048};
  std::vector<StepPoint> points;
  for (const auto t : tokens) {
    const double v = static_cast<double>(t * t) / 1e6;
    points.push_back({v, 0.5, 0.01 * v});
    points.push_back({v, 0.5, 0.01 * v});
  }
  const StepTable table(tokens, {0, 4096}, points);
  for (const double t : {300.0, 384.0, 768.0, 1500.0}) {
    INFO(t);
    CHECK(table.at_quadratic(t, 1000).time == Approx(t * t / 1e6));
    CHECK(table.at_quadratic(t, 1000).sigma == Approx(0.01 * t * t / 1e6));
    CHECK(table.at_quadratic(t, 1000).utilization == Approx(0.5));
    CHECK(table.at(t, 1000).time > t * t / 1e6 * 1.01);  // the chord: more than 1% over
  }
  // On the grid and outside it, as the bilinear lookup (clamped).
  CHECK(table.at_quadratic(512, 0).time == Approx(0.262144));
  CHECK(table.at_quadratic(100, 0).time == table.at(100, 0).time);
  CHECK(table.at_quadratic(4096, 0).time == table.at(4096, 0).time);
  // Two batch rows: linear.
  const StepTable two({256, 512}, {1}, {{1.0, 0.5}, {2.0, 0.5}});
  CHECK(two.at_quadratic(384, 1).time == Approx(1.5));
}

TEST_CASE("a padded CUDA-graph step is the table at the graph's batch less the padding rows' host time", "[serving][table]") {
  StepModel m;
  m.gpu = StepTable({1, 16}, {1, 1000}, {{0.010, 0.9}, {0.010, 0.9}, {0.025, 0.8}, {0.025, 0.8}});
  // 12 requests replay the graph of 16: 4 padding rows at 100 us of host time each come off.
  const StepPoint p = m.at_graph(12, 16, 500, 0.0, 100e-6);
  CHECK(p.time == Approx(0.025 - 4 * 100e-6));
  CHECK(p.utilization * p.time == Approx(0.8 * 0.025));  // the same busy compute
  // No padding, or an engine whose host time is overlapped (0 per request): the table's point.
  CHECK(m.at_graph(16, 16, 500, 0.0, 100e-6).time == Approx(0.025));
  CHECK(m.at_graph(12, 16, 500, 0.0, 0.0).time == Approx(0.025));
}
