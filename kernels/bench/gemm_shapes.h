// The shapes file of `ess-bench --gemm-shapes FILE`: the weight GEMMs the simulator issues for a
// scenario (sim/graph/weight_gemms.h), as `ess-sim validate --prepare` writes them to
// gemm-shapes.csv beside the runner configurations (validate/prepare.cpp). Plain CSV, so that
// ess-bench reads it on a bare GPU machine without a JSON library:
//
//   # comment lines start with '#'
//   model,tp,name,form,n,k,dtype
//   deepseek-v3.2-exp,1,q_a_kv_a,dense,2112,7168,bf16
//
// form is dense, per_head or grouped (weight_gemms.h); dtype is what the simulator prices the op
// in (ess-bench measures every dtype of its sweep regardless). ess-bench measures the dense and
// grouped rows as plain cuBLASLt GEMMs of (n, k) (a grouped row: one expert's weight) and leaves
// the per_head rows out (batched GEMMs, named in environment.method).
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/bench/sweep.h"

namespace ess::bench {

// A malformed shapes file: the message starts with "FILE:LINE: ".
class GemmShapesError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

inline constexpr std::string_view kGemmShapesHeader = "model,tp,name,form,n,k,dtype";

struct GemmShapesFile {
  std::vector<GemmShape> shapes;    // dense and grouped rows, each (n, k) once, in file order
  std::vector<std::string> left_out;  // "model name (per_head n x k)" for the rows not measured
};

// Parses the text; `origin` names it in errors. Throws GemmShapesError for a missing or other
// header, a row of another width, an empty field, a form or dtype not listed above, an n, k or tp
// that is not an integer in [1, 2^31), or no row at all.
[[nodiscard]] GemmShapesFile parse_gemm_shapes(std::string_view text, const std::string& origin);

// Reads and parses `path` (GemmShapesError also when it cannot be read).
[[nodiscard]] GemmShapesFile read_gemm_shapes(const std::string& path);

}  // namespace ess::bench
