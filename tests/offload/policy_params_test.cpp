// Policy parameters (sim/offload/policy_params.h): bounds, spellings, defaults, the collection of a
// registry's declarations and the check of given values.
#include <catch2/catch.hpp>

#include <array>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "sim/base/error.h"
#include "sim/offload/eviction.h"
#include "sim/offload/policy_params.h"

namespace {

using ess::PolicyParam;
using ess::PolicyValues;

const PolicyParam kHalfOpen{"heat_decay", "decay", 0.9, 0.0, true, 1.0, false};  // (0, 1]
const PolicyParam kClosed{"window_size", "window", 4.0, 1.0, false, 64.0, false};  // [1, 64]

struct Line {
  std::string_view name;
  std::span<const PolicyParam> params;
};

}  // namespace

TEST_CASE("a policy parameter admits finite values within its bounds, open or closed") {
  CHECK_FALSE(kHalfOpen.admits(0.0));
  CHECK(kHalfOpen.admits(1e-9));
  CHECK(kHalfOpen.admits(1.0));
  CHECK_FALSE(kHalfOpen.admits(1.0000001));
  CHECK_FALSE(kHalfOpen.admits(std::nan("")));
  CHECK(kClosed.admits(1.0));
  CHECK(kClosed.admits(64.0));
  CHECK_FALSE(kClosed.admits(std::numeric_limits<double>::infinity()));
  CHECK(kHalfOpen.range() == "(0, 1]");
  CHECK(kClosed.range() == "[1, 64]");
  CHECK(kHalfOpen.option() == "heat-decay");
}

TEST_CASE("values: the one given, else the declared default, and a second set replaces the first") {
  PolicyValues v;
  CHECK(v.of(kHalfOpen) == 0.9);
  v.set("heat_decay", 0.5);
  v.set("heat_decay", 0.25);
  CHECK(v.of(kHalfOpen) == 0.25);
  CHECK(v.given().size() == 1);
  CHECK(v.of(kClosed) == 4.0);
}

TEST_CASE("a registry's parameters are collected once each, in registry order") {
  const std::array<PolicyParam, 1> a{kHalfOpen};
  const std::array<PolicyParam, 2> b{kClosed, kHalfOpen};  // shares heat_decay with a
  const std::array<Line, 3> lines{Line{"none", {}}, Line{"a", a}, Line{"b", b}};
  const auto declared = ess::declared_params(std::span<const Line>(lines));
  REQUIRE(declared.size() == 2);
  CHECK(declared[0]->name == "heat_decay");
  CHECK(declared[1]->name == "window_size");
  // The eviction registry declares heat's heat_decay, default 0.9 (the scenarios' cache.heat_decay).
  const auto eviction = ess::declared_params(ess::eviction_policies());
  REQUIRE(eviction.size() == 1);
  CHECK(eviction[0]->name == "heat_decay");
  CHECK(eviction[0]->default_value == 0.9);
}

TEST_CASE("given values are checked against the declarations: an undeclared name or a value out of range is a bug") {
  const std::vector<const PolicyParam*> declared{&kHalfOpen, &kClosed};
  PolicyValues v;
  v.set("window_size", 64.0);
  CHECK_NOTHROW(ess::check_values(declared, v, "pool"));
  v.set("heat_decay", 2.0);
  CHECK_THROWS_WITH(ess::check_values(declared, v, "pool"), "pool heat_decay must be in (0, 1], got 2");
  PolicyValues misspelt;
  misspelt.set("windowsize", 8.0);
  CHECK_THROWS_AS(ess::check_values(declared, misspelt, "pool"), ess::InternalError);
  CHECK_THROWS_WITH(ess::check_values(declared, misspelt, "pool"),
                    "pool has no parameter windowsize; declared: heat_decay, window_size");
}
