// Contract: what ess-bench writes (kernels/bench: the measurements JSON, here fed with synthetic
// samples of every kind, including the partial documents written after each suite and on a fatal
// error) is what `ess-sim calibrate` reads (calibration/measurements.h), point for point.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "calibration/measurements.h"
#include "kernels/bench/measurements.h"
#include "kernels/bench/progress.h"
#include "kernels/bench/stats.h"
#include "kernels/bench/sweep.h"
#include "tests/kernels/h200_environment.h"

namespace b = ess::bench;

namespace {

// Times from a few microseconds up, as a GPU measures them.
b::Stats stats_of(double median_s) {
  const std::vector<double> t = {median_s * 0.97, median_s, median_s, median_s * 1.02, median_s * 1.05};
  return b::compute_stats(t);
}

b::Environment h200() {
  b::Environment e = ess::test::h200_environment();
  e.driver = "580.159.03";
  e.cuda_driver_api = "13.0";
  e.cuda_runtime = "13.0";
  e.cublas = "13.1.0";
  return e;
}

// One or more samples of every kind ess-bench writes.
std::vector<b::Sample> every_kind() {
  std::vector<b::Sample> s;
  for (const std::int64_t m : {1, 8, 64}) {
    s.push_back(b::gemm_sample(m, 2112, 7168, b::GemmDtype::bf16, stats_of(8e-6 + 1e-7 * static_cast<double>(m))));
    s.push_back(b::gemm_sample(m, 24576, 1536, b::GemmDtype::fp8, stats_of(20e-6)));
    s.push_back(b::gemm_sample(m, 4096, 4096, b::GemmDtype::fp16, stats_of(12e-6)));
  }
  s.push_back(b::norm_sample(b::NormKind::rms, 64, 7168, stats_of(4e-6)));
  s.push_back(b::norm_sample(b::NormKind::layer, 1, 512, stats_of(3e-6)));
  for (const std::int64_t bytes : {4096, 1 << 20, 64 << 20}) {
    s.push_back(b::copy_sample(b::CopyDirection::h2d, b::HostMemory::pinned, bytes, stats_of(2e-6 + static_cast<double>(bytes) / 5e10)));
    s.push_back(b::copy_sample(b::CopyDirection::d2h, b::HostMemory::pageable, bytes, stats_of(3e-6 + static_cast<double>(bytes) / 2e10)));
    s.push_back(b::copy_sample(b::CopyDirection::bidirectional, b::HostMemory::pinned, bytes, stats_of(4e-6 + static_cast<double>(bytes) / 4e10)));
  }
  s.push_back(b::gather_sample(b::Direction::h2d, b::GatherMethod::per_row, 16, 656, 16, stats_of(40e-6)));
  s.push_back(b::gather_sample(b::Direction::h2d, b::GatherMethod::per_run, 16, 656, 12, stats_of(30e-6)));
  s.push_back(b::gather_sample(b::Direction::d2h, b::GatherMethod::uva_kernel, 1024, 656, 0, stats_of(25e-6)));
  s.push_back(b::interference_sample(b::GemmPoint{64, 129280, 7168}, 4096, 656, stats_of(400e-6), stats_of(450e-6)));
  s.push_back(b::d2d_sample(1 << 20, stats_of(3e-6)));
  s.push_back(b::p2p_sample(0, 1, 1 << 20, stats_of(5e-6)));
  s.push_back(b::allreduce_sample(2, 1 << 20, stats_of(20e-6)));
  s.push_back(b::alltoall_sample(2, 1 << 20, stats_of(25e-6)));
  return s;
}

std::string document(const std::vector<b::Sample>& samples, const b::SuiteProgress& progress) {
  b::Environment env = h200();
  env.method = b::method_text(b::default_sweep(), env.l2_bytes, {}) + progress.text();
  return b::measurements_json(env, samples);
}

std::size_t count_kind(const std::vector<b::Sample>& samples, const std::string& kind) {
  std::size_t n = 0;
  for (const auto& s : samples) n += s.kind == kind ? 1 : 0;
  return n;
}

}  // namespace

TEST_CASE("every kind ess-bench writes is read by calibrate, point for point", "[contract]") {
  const std::vector<b::Sample> samples = every_kind();
  b::SuiteProgress progress({b::Suite::gemm, b::Suite::norm});
  progress.start(b::Suite::gemm);
  progress.complete();
  progress.start(b::Suite::norm);
  progress.complete();
  const std::string text = document(samples, progress);
  const ess::MeasurementSet set = ess::read_measurement_text(text, "measurements.json", ess::ReadOptions{});
  REQUIRE(set.inputs.size() == 1);
  CHECK(set.inputs[0].format == "ess-bench");
  CHECK(set.inputs[0].gpu == "NVIDIA H200");
  CHECK(set.gemm.size() == count_kind(samples, "gemm"));
  CHECK(set.norm.size() == count_kind(samples, "norm"));
  CHECK(set.gather.size() + set.copy.size() >= count_kind(samples, "gather"));
  CHECK(set.interference.size() == 1);
  CHECK(set.allreduce.size() == 1);
  CHECK(set.alltoall.size() == 1);
  CHECK(set.p2p.size() == 1);
  // The fused q_a||kv_a GEMM arrives with its shape, dtype and median time.
  bool fused = false;
  for (const ess::GemmPoint& p : set.gemm) {
    if (p.shape.n == 2112 && p.shape.k == 7168 && p.shape.m == 8) {
      fused = true;
      CHECK(p.shape.dtype == ess::DType::bf16);
      CHECK(p.seconds == Approx(8.8e-6).epsilon(1e-9));
    }
  }
  CHECK(fused);
}

TEST_CASE("a checkpoint after a failed suite is a document calibrate reads", "[contract]") {
  // What ess-bench writes when a CUDA error ends the copy suite: the gemm and norm samples and
  // the copies measured before the error, the status in environment.method.
  std::vector<b::Sample> samples;
  for (const auto& s : every_kind()) {
    if (s.kind == "gemm" || s.kind == "norm" || s.kind == "copy") samples.push_back(s);
  }
  b::SuiteProgress progress({b::Suite::gemm, b::Suite::norm, b::Suite::copy, b::Suite::gather, b::Suite::d2d});
  progress.start(b::Suite::gemm);
  progress.complete();
  progress.start(b::Suite::norm);
  progress.complete();
  progress.start(b::Suite::copy);
  progress.fail("copy_bench.cpp:88: cudaMemcpyAsync(...) failed: an illegal memory access was encountered");
  const std::string text = document(samples, progress);
  CHECK_THAT(text, Catch::Contains("Suites completed: gemm, norm. Failed: copy (copy_bench.cpp:88"));
  CHECK_THAT(text, Catch::Contains("Not run: gather, d2d."));
  const ess::MeasurementSet set = ess::read_measurement_text(text, "partial.json", ess::ReadOptions{});
  CHECK(set.gemm.size() == count_kind(samples, "gemm"));
  CHECK(set.norm.size() == 2);
  CHECK_FALSE(set.copy.empty());
}

TEST_CASE("the suite status must stay inside environment.method", "[contract]") {
  // calibrate refuses environment keys it does not know, so a status object beside "method" (the
  // obvious way to record suites) would make every partial file unreadable: this is why
  // SuiteProgress writes into the method sentence. The reader must keep refusing it.
  b::SuiteProgress progress({b::Suite::gemm});
  const std::string text = document(every_kind(), progress);
  std::string with_key = text;
  const std::string anchor = "\"method\": ";
  const auto at = with_key.find(anchor);
  REQUIRE(at != std::string::npos);
  with_key.insert(at, "\"suites\": {\"completed\": []},\n    ");
  CHECK_THROWS_AS(ess::read_measurement_text(with_key, "m.json", ess::ReadOptions{}), ess::MeasurementError);
  CHECK_NOTHROW(ess::read_measurement_text(text, "m.json", ess::ReadOptions{}));
}
