// SuiteProgress (kernels/bench/progress.h): the status sentence a checkpoint writes into
// environment.method. (That calibrate reads such files is tests/contract/.)
#include "kernels/bench/progress.h"

#include <catch2/catch.hpp>

TEST_CASE("suite progress: what completed, failed, was running and did not run", "[kernels][progress]") {
  ess::bench::SuiteProgress p({ess::bench::Suite::gemm, ess::bench::Suite::norm, ess::bench::Suite::copy});
  CHECK(p.text() == " Suites completed: none. Not run: gemm, norm, copy.");
  p.start(ess::bench::Suite::gemm);
  CHECK(p.text() == " Suites completed: none. Running when written: gemm. Not run: norm, copy.");
  p.complete();
  p.start(ess::bench::Suite::norm);
  p.fail("wrong kernel");
  CHECK(p.text() == " Suites completed: gemm. Failed: norm (wrong kernel). Not run: copy.");
  CHECK_FALSE(p.all_completed());
  p.start(ess::bench::Suite::copy);
  p.complete();
  CHECK(p.not_finished().empty());
  CHECK(p.completed().size() == 2);
  p.fail("nothing running");  // no suite running: nothing recorded
  CHECK(p.failed().size() == 1);
}
