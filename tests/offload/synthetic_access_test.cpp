#include "sim/offload/synthetic_access.h"
#include "sim/base/error.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <map>
#include <stdexcept>
#include <tuple>
#include <vector>

using ess::SyntheticAccess;
using ess::SyntheticAccessParams;
using Positions = std::vector<std::int64_t>;

namespace {

SyntheticAccessParams small_params() {
  SyntheticAccessParams p;
  p.layers = 3;
  p.top_k = 512;
  p.recent_window = 32;
  p.retention = {0.9, 0.5, 0.2};
  p.seed = 42;
  return p;
}

// The non-recent part of a selection: positions below context - recent.
Positions non_recent(const Positions& selected, std::int64_t context, std::int64_t recent) {
  Positions out;
  for (const std::int64_t p : selected) {
    if (p < context - recent) out.push_back(p);
  }
  return out;
}

std::size_t overlap(const Positions& a, const Positions& b) {
  Positions common;
  std::set_intersection(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(common));
  return common.size();
}

// Mean fraction of one step's non-recent picks picked again at the next, over `requests` and
// steps first_step .. first_step + steps - 1, context growing by one token per step.
double mean_overlap(SyntheticAccess& model, int layer, int requests, int first_step, int steps,
                    std::int64_t context) {
  const std::int64_t recent = model.params().recent_window;
  double sum = 0.0;
  int pairs = 0;
  for (int r = 0; r < requests; ++r) {
    Positions previous;
    for (int s = 0; s < steps; ++s) {
      const std::int64_t ctx = context + s;
      Positions selected;
      model.select(first_step + s, layer, r, ctx, selected);
      Positions now = non_recent(selected, ctx, recent);
      if (s > 0) {
        sum += static_cast<double>(overlap(previous, now)) / static_cast<double>(previous.size());
        ++pairs;
      }
      previous = std::move(now);
    }
  }
  return sum / pairs;
}

}  // namespace

TEST_CASE("selections are sorted, unique, of size min(top_k, context), within the context") {
  SyntheticAccessParams p;  // defaults: top_k 2048, recent window 64
  p.layers = 2;
  SyntheticAccess model(p);
  const std::vector<std::int64_t> contexts{0, 1, 63, 64, 65, 2047, 2048, 2049, 2100, 4096, 40000, 40001};
  for (int layer = 0; layer < 2; ++layer) {
    for (std::size_t i = 0; i < contexts.size(); ++i) {
      const std::int64_t context = contexts[i];
      Positions selected{-7};  // replaced, not appended to
      model.select(static_cast<int>(i), layer, 0, context, selected);
      INFO("context " << context);
      REQUIRE(static_cast<std::int64_t>(selected.size()) == std::min<std::int64_t>(2048, context));
      REQUIRE(std::adjacent_find(selected.begin(), selected.end(),
                                 [](std::int64_t a, std::int64_t b) { return a >= b; }) ==
              selected.end());
      if (!selected.empty()) {
        REQUIRE(selected.front() >= 0);
        REQUIRE(selected.back() < context);
      }
      // The recent window: the min(64, context) newest positions.
      const std::int64_t recent = std::min<std::int64_t>(64, context);
      for (std::int64_t q = context - recent; q < context; ++q) {
        REQUIRE(std::binary_search(selected.begin(), selected.end(), q));
      }
    }
  }
}

TEST_CASE("the recent window is always selected, over many steps") {
  SyntheticAccess model(small_params());
  Positions selected;
  for (int step = -5; step < 40; ++step) {
    const std::int64_t context = 3000 + 3 * step;  // also contexts growing by several tokens
    model.select(step, 1, 2, context, selected);
    REQUIRE(selected.size() == 512);
    for (std::int64_t q = context - 32; q < context; ++q) {
      REQUIRE(std::binary_search(selected.begin(), selected.end(), q));
    }
  }
}

TEST_CASE("the same seed gives the same selections and another seed different ones") {
  SyntheticAccessParams p = small_params();
  SyntheticAccess a(p);
  SyntheticAccess b(p);
  p.seed = 43;
  SyntheticAccess c(p);
  Positions sa;
  Positions sb;
  Positions sc;
  bool any_difference = false;
  for (int step = 0; step < 5; ++step) {
    a.select(step, 0, 0, 10000 + step, sa);
    b.select(step, 0, 0, 10000 + step, sb);
    c.select(step, 0, 0, 10000 + step, sc);
    REQUIRE(sa == sb);
    any_difference = any_difference || sa != sc;
  }
  CHECK(any_difference);
}

TEST_CASE("selections do not depend on the order of calls across requests and layers") {
  SyntheticAccess forward(small_params());
  SyntheticAccess backward(small_params());
  std::map<std::tuple<int, int, int>, Positions> seen;
  Positions selected;
  for (int step = -3; step < 6; ++step) {
    for (int layer = 0; layer < 3; ++layer) {
      for (int r = 0; r < 4; ++r) {
        forward.select(step, layer, r, 5000 + step, selected);
        seen[{step, layer, r}] = selected;
      }
    }
  }
  for (int step = -3; step < 6; ++step) {
    for (int r = 3; r >= 0; --r) {
      for (int layer = 2; layer >= 0; --layer) {
        backward.select(step, layer, r, 5000 + step, selected);
        REQUIRE(selected == seen.at({step, layer, r}));
      }
    }
  }
  // Different requests (and layers) are different streams.
  CHECK(seen.at({0, 0, 0}) != seen.at({0, 0, 1}));
  CHECK(seen.at({0, 0, 0}) != seen.at({0, 1, 0}));
}

TEST_CASE("consecutive decode steps share about their layer's retention of their non-recent picks") {
  SyntheticAccess model(small_params());
  const double expected[] = {0.9, 0.5, 0.2};
  for (int layer = 0; layer < 3; ++layer) {
    const double measured = mean_overlap(model, layer, 4, 0, 30, 20000);
    INFO("layer " << layer << " retention " << expected[layer] << " measured " << measured);
    CHECK(measured == Approx(expected[layer]).margin(0.02));
  }
  // The check discriminates: layer 1's overlap is nowhere near layer 0's retention.
  SyntheticAccess again(small_params());
  CHECK_FALSE(mean_overlap(again, 1, 4, 0, 30, 20000) == Approx(0.9).margin(0.02));
}

TEST_CASE("warm-up steps (negative) share about prefill_retention of their picks") {
  SyntheticAccessParams p = small_params();
  p.prefill_retention = 0.3;
  SyntheticAccess model(p);
  CHECK(mean_overlap(model, 0, 4, -32, 30, 20000) == Approx(0.3).margin(0.02));
}

TEST_CASE("long-range distances follow the documented power law") {
  // Non-recent picks have x = d + 1 >= recent + 1 = 1025, up to the context 2^20 + 1, about ten
  // octaves. With exponent 1 each octave holds 1/log2((2^20 + 1) / 1025) = 0.1 of the picks;
  // with exponent 0 (uniform) the farther half of the context holds about half of them.
  // 20 picks per step over >= 1024 positions per octave: exclusions barely matter.
  auto fractions = [](double exponent) {
    SyntheticAccessParams p;
    p.layers = 1;
    p.top_k = 1044;
    p.recent_window = 1024;
    p.retention = {0.0};
    p.distance_exponent = exponent;
    SyntheticAccess model(p);
    const std::int64_t context = std::int64_t{1} << 20;
    Positions selected;
    double near_octave = 0;
    double far_octave = 0;
    double far_half = 0;
    double total = 0;
    for (int step = 0; step < 300; ++step) {
      model.select(step, 0, 0, context, selected);
      for (const std::int64_t pos : selected) {
        const std::int64_t x = context - pos;  // d + 1
        if (x <= 1024) continue;               // the recent window
        total += 1;
        if (x >= 1025 && x < 2050) near_octave += 1;
        if (x >= (std::int64_t{1} << 19) && x < (std::int64_t{1} << 20)) far_octave += 1;
        if (x > context / 2) far_half += 1;
      }
    }
    return std::tuple{near_octave / total, far_octave / total, far_half / total};
  };
  const auto [near1, far1, half1] = fractions(1.0);
  CHECK(near1 == Approx(0.1).margin(0.012));
  CHECK(far1 == Approx(0.1).margin(0.012));
  CHECK(half1 == Approx(0.1).margin(0.012));  // the last octave is the far half
  const auto [near0, far0, half0] = fractions(0.0);
  CHECK(near0 < 0.01);
  CHECK(half0 == Approx(0.5).margin(0.03));
  (void)far0;
}

TEST_CASE("the default retention profile follows its documented formula") {
  SyntheticAccessParams p;  // 61 layers, best 0.984 at depth 0.45, edge 0.80
  const std::vector<double> r = ess::default_retention_profile(p);
  REQUIRE(r.size() == 61);
  // Layer 27 has depth 27/60 = 0.45: the best. Layer 60 (depth 1) is the far end: edge.
  CHECK(r[27] == Approx(0.984).epsilon(1e-12));
  CHECK(r[60] == Approx(0.80).epsilon(1e-12));
  // Layer 1: u = ((1/60 - 0.45) / 0.55)^2 = 0.620757, v = 0.016 * 12.5^u = 0.076741.
  CHECK(r[1] == Approx(0.923259).margin(1e-6));
  // Volatile layers at depths 0, 0.25, 0.6, 0.9 -> layers 0, 15, 36, 54.
  CHECK(r[0] == 0.47);
  CHECK(r[15] == 0.60);
  CHECK(r[36] == 0.52);
  CHECK(r[54] == 0.70);
  CHECK(*std::max_element(r.begin(), r.end()) == Approx(0.984));
  // Used when no retention is given; a given one is kept as is.
  CHECK(SyntheticAccess(p).retention() == r);
  p.layers = 2;
  p.retention = {0.1, 0.2};
  CHECK(SyntheticAccess(p).retention() == std::vector<double>{0.1, 0.2});
  p.layers = 1;
  p.retention.clear();
  CHECK(ess::default_retention_profile(p).size() == 1);
}

TEST_CASE("bad parameters and broken call contracts are refused") {
  using Change = void (*)(SyntheticAccessParams&);
  const std::vector<Change> changes{
      [](SyntheticAccessParams& p) { p.layers = 0; },
      [](SyntheticAccessParams& p) { p.top_k = 0; },
      [](SyntheticAccessParams& p) { p.recent_window = -1; },
      [](SyntheticAccessParams& p) { p.distance_exponent = -0.5; },
      [](SyntheticAccessParams& p) { p.retention = {0.9, 0.5}; },
      [](SyntheticAccessParams& p) { p.retention = {0.9, 1.5, 0.2}; },
      [](SyntheticAccessParams& p) { p.prefill_retention = -0.1; },
      [](SyntheticAccessParams& p) { p.volatile_layers = {{1.2, 0.5}}; },
  };
  for (const Change change : changes) {
    SyntheticAccessParams p = small_params();
    change(p);
    CHECK_THROWS_AS(SyntheticAccess(p), ess::InternalError);
  }

  SyntheticAccess model(small_params());
  Positions out;
  CHECK_THROWS_WITH(model.select(0, 3, 0, 100, out), Catch::Contains("layer 3"));
  CHECK_THROWS_AS(model.select(0, -1, 0, 100, out), ess::InternalError);
  CHECK_THROWS_AS(model.select(0, 0, -1, 100, out), ess::InternalError);
  CHECK_THROWS_AS(model.select(0, 0, 0, -1, out), ess::InternalError);
  model.select(4, 0, 0, 100, out);
  CHECK_THROWS_WITH(model.select(4, 0, 0, 101, out), Catch::Contains("steps must increase"));
  CHECK_THROWS_AS(model.select(3, 0, 0, 101, out), ess::InternalError);
  CHECK_NOTHROW(model.select(4, 0, 1, 101, out));  // another request has its own order
}
