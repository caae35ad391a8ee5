// The norm measurements' host side: bf16 rounding, the double reference the CUDA kernels must
// match before they are timed, the match criterion, and the kernels' launch shape
// (kernels/bench/norm_reference.h, kernels/bench/norm_launch.h).
#include "kernels/bench/norm_reference.h"

#include <catch2/catch.hpp>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "kernels/bench/norm_launch.h"

using ess::bench::bf16_bits_to_float;
using ess::bench::compare_outputs;
using ess::bench::float_to_bf16_bits;
using ess::bench::NormKind;
using ess::bench::norm_launch;
using ess::bench::norm_reference;

TEST_CASE("bf16: conversion rounds to nearest with ties to even", "[kernels][norm]") {
  CHECK(float_to_bf16_bits(1.0f) == 0x3F80);
  CHECK(float_to_bf16_bits(-2.0f) == 0xC000);
  // bf16 has 7 mantissa bits, so next to 1 it steps by 2^-7 = 0.0078125.
  // 1 + 2^-8 is halfway between 0x3F80 and 0x3F81: ties to the even 0x3F80
  CHECK(float_to_bf16_bits(1.00390625f) == 0x3F80);
  // 1 + 3 x 2^-8 is halfway between 0x3F81 and 0x3F82: ties to the even 0x3F82
  CHECK(float_to_bf16_bits(1.01171875f) == 0x3F82);
  // just above halfway rounds up
  CHECK(float_to_bf16_bits(1.00390625f + 0x1p-20f) == 0x3F81);
  CHECK(float_to_bf16_bits(INFINITY) == 0x7F80);
  // FLT_MAX (0x7F7FFFFF) is past halfway to bf16's largest finite value 0x7F7F: infinity
  CHECK(float_to_bf16_bits(FLT_MAX) == 0x7F80);
  CHECK(std::isnan(bf16_bits_to_float(float_to_bf16_bits(NAN))));
  CHECK(bf16_bits_to_float(0x3F80) == 1.0f);
  // 0x4049: exponent 1, mantissa 0x49 / 128 = 0.5703125 -> 2 x 1.5703125 = 3.140625
  CHECK(bf16_bits_to_float(0x4049) == 3.140625f);
}

TEST_CASE("norm reference: RMSNorm worked by hand", "[kernels][norm]") {
  // x = 1 2 3 4: mean of squares (1 + 4 + 9 + 16) / 4 = 7.5; y = x / sqrt(7.5) (eps 0, weight 1)
  const std::vector<float> x = {1, 2, 3, 4};
  const std::vector<float> w = {1, 1, 1, 1};
  std::vector<double> y(4);
  norm_reference(NormKind::rms, 1, 4, x, w, {}, 0.0, y);
  CHECK(y[0] == Approx(0.3651483716701107).epsilon(1e-14));
  CHECK(y[1] == Approx(0.7302967433402214).epsilon(1e-14));
  CHECK(y[2] == Approx(1.0954451150103321).epsilon(1e-14));
  CHECK(y[3] == Approx(1.4605934866804429).epsilon(1e-14));
}

TEST_CASE("norm reference: LayerNorm worked by hand", "[kernels][norm]") {
  // x = 1 2 3 4: mean 2.5, variance (2.25 + 0.25 + 0.25 + 2.25) / 4 = 1.25;
  // y = (x - 2.5) / sqrt(1.25) x 2 + 1 (eps 0, weight 2, bias 1)
  const std::vector<float> x = {1, 2, 3, 4};
  const std::vector<float> w = {2, 2, 2, 2};
  const std::vector<float> b = {1, 1, 1, 1};
  std::vector<double> y(4);
  norm_reference(NormKind::layer, 1, 4, x, w, b, 0.0, y);
  CHECK(y[0] == Approx(-1.6832815729997477).epsilon(1e-14));
  CHECK(y[1] == Approx(0.10557280900008414).epsilon(1e-14));
  CHECK(y[2] == Approx(1.8944271909999157).epsilon(1e-14));
  CHECK(y[3] == Approx(3.6832815729997477).epsilon(1e-14));
}

TEST_CASE("norm reference: rows are normalised independently and eps counts", "[kernels][norm]") {
  // row 1 = 10 x row 0: without eps the RMSNorm outputs are equal
  const std::vector<float> x = {1, 2, 3, 4, 10, 20, 30, 40};
  const std::vector<float> w = {1, 1, 1, 1};
  std::vector<double> y(8);
  norm_reference(NormKind::rms, 2, 4, x, w, {}, 0.0, y);
  for (int i = 0; i < 4; ++i) CHECK(y[static_cast<std::size_t>(i)] == Approx(y[static_cast<std::size_t>(i) + 4]).epsilon(1e-14));
  // eps = 7.5 doubles the mean square of row 0: y = x / sqrt(15)
  norm_reference(NormKind::rms, 2, 4, x, w, {}, 7.5, y);
  CHECK(y[0] == Approx(1.0 / std::sqrt(15.0)).epsilon(1e-14));
}

TEST_CASE("norm reference: wrong sizes are rejected", "[kernels][norm][errors]") {
  const std::vector<float> x(8, 1.0f);
  const std::vector<float> w(4, 1.0f);
  std::vector<double> y(8);
  CHECK_THROWS_AS(norm_reference(NormKind::rms, 2, 4, x, std::vector<float>(3, 1.0f), {}, 0.0, y), std::invalid_argument);
  CHECK_THROWS_AS(norm_reference(NormKind::layer, 2, 4, x, w, {}, 0.0, y), std::invalid_argument);  // no bias
  CHECK_THROWS_AS(norm_reference(NormKind::rms, 3, 4, x, w, {}, 0.0, y), std::invalid_argument);
  CHECK_THROWS_AS(norm_reference(NormKind::rms, 0, 4, {}, w, {}, 0.0, {}), std::invalid_argument);
}

TEST_CASE("norm check: relative error 1e-2 with an absolute floor of 1e-3", "[kernels][norm]") {
  const std::vector<double> expected = {1.0, -2.0, 0.0};
  // bound for 1.0: 0.01 x 1 + 0.001 = 0.011; error 0.0101 -> ratio 0.918: passes
  auto c = compare_outputs(std::vector<float>{1.0101f, -2.0f, 0.0f}, expected, 1e-2, 1e-3);
  CHECK(c.ok);
  CHECK(c.worst_index == 0);
  CHECK(c.worst_ratio == Approx(0.0101 / 0.011).epsilon(1e-5));
  // error 0.012 > 0.011: fails, and points at element 0
  c = compare_outputs(std::vector<float>{1.012f, -2.0f, 0.0f}, expected, 1e-2, 1e-3);
  CHECK_FALSE(c.ok);
  CHECK(c.worst_index == 0);
  CHECK(c.got == Approx(1.012).epsilon(1e-6));
  // bound for -2.0: 0.021; -2.0205 is within, -2.0215 is not
  CHECK(compare_outputs(std::vector<float>{1.0f, -2.0205f, 0.0f}, expected, 1e-2, 1e-3).ok);
  c = compare_outputs(std::vector<float>{1.0f, -2.0215f, 0.0f}, expected, 1e-2, 1e-3);
  CHECK_FALSE(c.ok);
  CHECK(c.worst_index == 1);
  // near zero only the absolute floor applies: 0.0009 passes, 0.0011 fails
  CHECK(compare_outputs(std::vector<float>{1.0f, -2.0f, 0.0009f}, expected, 1e-2, 1e-3).ok);
  CHECK_FALSE(compare_outputs(std::vector<float>{1.0f, -2.0f, 0.0011f}, expected, 1e-2, 1e-3).ok);
  // a NaN always fails
  c = compare_outputs(std::vector<float>{1.0f, NAN, 0.0f}, expected, 1e-2, 1e-3);
  CHECK_FALSE(c.ok);
  CHECK(c.worst_index == 1);
  CHECK_THROWS_AS(compare_outputs(std::vector<float>{1.0f}, expected, 1e-2, 1e-3), std::invalid_argument);
}

TEST_CASE("norm launch: one warp per row up to 1024 wide", "[kernels][norm]") {
  // 512 / 8 = 64 vectors: 2 per lane; 4 rows per 128-thread block; 5 tokens -> 2 blocks
  auto l = norm_launch(5, 512);
  CHECK(l.threads_per_row == 32);
  CHECK(l.block_threads == 128);
  CHECK(l.rows_per_block == 4);
  CHECK(l.vectors_per_thread == 2);
  CHECK(l.blocks == 2);
  // 1024 / 8 = 128 vectors: 4 per lane
  l = norm_launch(1, 1024);
  CHECK(l.threads_per_row == 32);
  CHECK(l.vectors_per_thread == 4);
  CHECK(l.blocks == 1);
  // 768 / 8 = 96 vectors: 3 per lane, rounded up to the instantiated 4
  CHECK(norm_launch(1, 768).vectors_per_thread == 4);
}

TEST_CASE("norm launch: one block per row above 1024 wide", "[kernels][norm]") {
  // 1032 / 8 = 129 vectors: round_up(129, 32) = 160 threads, 1 vector each
  auto l = norm_launch(7, 1032);
  CHECK(l.threads_per_row == 160);
  CHECK(l.block_threads == 160);
  CHECK(l.rows_per_block == 1);
  CHECK(l.vectors_per_thread == 1);
  CHECK(l.blocks == 7);
  // 7168 / 8 = 896 vectors: 896 threads
  CHECK(norm_launch(1, 7168).block_threads == 896);
  CHECK(norm_launch(1, 7168).vectors_per_thread == 1);
  // 16384 / 8 = 2048 vectors: 1024 threads, 2 each
  CHECK(norm_launch(1, 16384).block_threads == 1024);
  CHECK(norm_launch(1, 16384).vectors_per_thread == 2);
  // 24576 / 8 = 3072: 3 each, rounded up to 4
  CHECK(norm_launch(1, 24576).vectors_per_thread == 4);
}

TEST_CASE("norm launch: every row is covered exactly once", "[kernels][norm]") {
  for (std::int64_t hidden = 8; hidden <= 32768; hidden += 8) {
    const auto l = norm_launch(3, hidden);
    const std::int64_t vectors = hidden / 8;
    INFO("hidden " << hidden);
    REQUIRE(static_cast<std::int64_t>(l.threads_per_row) * l.vectors_per_thread >= vectors);
    REQUIRE(l.block_threads % 32 == 0);
    REQUIRE(l.block_threads <= 1024);
    REQUIRE(l.block_threads == l.threads_per_row * l.rows_per_block);
    REQUIRE(l.blocks * l.rows_per_block >= 3);
  }
}

TEST_CASE("norm launch: impossible shapes are rejected", "[kernels][norm][errors]") {
  CHECK_THROWS_AS(norm_launch(1, 100), std::invalid_argument);    // not a multiple of 8
  CHECK_THROWS_AS(norm_launch(1, 0), std::invalid_argument);
  CHECK_THROWS_AS(norm_launch(1, 32776), std::invalid_argument);  // > 1024 x 4 x 8
  CHECK_THROWS_AS(norm_launch(0, 512), std::invalid_argument);
  CHECK(ess::bench::to_string(NormKind::layer) == "layer");
}
