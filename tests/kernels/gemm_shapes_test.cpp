// The --gemm-shapes file reader (kernels/bench/gemm_shapes.h): what it keeps, and every error
// with its line. (That it reads what prepare writes is tests/contract/runner_contract_test.cpp.)
#include "kernels/bench/gemm_shapes.h"

#include <catch2/catch.hpp>
#include <string>

TEST_CASE("gemm shapes file: dense and grouped rows once each in file order, per-head rows left out",
          "[kernels][gemm_shapes]") {
  const auto f = ess::bench::parse_gemm_shapes(
      "# the weight GEMMs\r\n"
      "model,tp,name,form,n,k,dtype\r\n"
      "\n"
      "ds,1,q_a_kv_a,dense,2112,7168,fp8\n"
      "ds,1,q_absorb,per_head,65536,128,bf16\n"
      "ds,1,shared_gate_up,dense,4096,7168,fp8\n"
      "ds,1,experts_gate_up,grouped,4096,7168,fp8\n"
      "ds,1,experts_down,grouped,7168,2048,fp8",  // no final newline
      "shapes.csv");
  REQUIRE(f.shapes.size() == 3);
  CHECK(f.shapes[0].model == "ds");
  CHECK(f.shapes[0].layer == "q_a_kv_a");
  CHECK(f.shapes[0].n == 2112);
  CHECK(f.shapes[0].k == 7168);
  CHECK(f.shapes[1].layer == "shared_gate_up");  // experts_gate_up has its (n, k)
  CHECK(f.shapes[2].layer == "experts_down");
  REQUIRE(f.left_out.size() == 1);
  CHECK(f.left_out[0] == "ds q_absorb (per_head 65536 x 128)");
}

TEST_CASE("gemm shapes file: malformed files are refused with their line", "[kernels][gemm_shapes][errors]") {
  using ess::bench::GemmShapesError;
  using ess::bench::parse_gemm_shapes;
  const std::string header = "model,tp,name,form,n,k,dtype\n";
  CHECK(parse_gemm_shapes("# c\n" + header + "m,1,a,dense,64,128,bf16\nm,1,b,grouped,64,128,fp8\n", "f").shapes.size() == 1);
  const auto fails = [&](const std::string& text, const std::string& message) {
    CHECK_THROWS_WITH(parse_gemm_shapes(text, "f.csv"), Catch::Contains(message));
  };
  fails("", "no header");
  fails("model,name,n,k\n", "f.csv:1: expected the header");
  fails(header, "no GEMM rows");
  fails(header + "m,1,a,dense,64,128\n", "f.csv:2: expected 7 comma-separated fields");
  fails(header + "m,1,a,dense,0,128,bf16\n", "f.csv:2: n: expected an integer");
  fails(header + "m,1,a,dense,64,12x,bf16\n", "k: expected an integer");
  fails(header + "m,1,a,dense,64,2147483648,bf16\n", "k: expected an integer");
  fails(header + "m,1,a,batched,64,128,bf16\n", "form: expected one of dense, per_head, grouped");
  fails(header + "m,1,a,dense,64,128,int8\n", "dtype: expected one of");
  fails(header + "m,1,,dense,64,128,bf16\n", "empty field");
  CHECK_THROWS_AS(ess::bench::read_gemm_shapes("/no/such/file.csv"), GemmShapesError);
}
