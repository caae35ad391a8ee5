#include "models/row_gather.h"

#include "models/check.h"
#include "models/roofline.h"

namespace ess {

KernelCost row_gather(const RowGatherShape& shape, const Hardware& hw) {
  check::at_least("row_gather", "rows_in", shape.rows_in, 0);
  check::at_least("row_gather", "rows_out", shape.rows_out, 0);
  check::positive("row_gather", "row_bytes_in", shape.row_bytes_in, "B");
  check::positive("row_gather", "row_bytes_out", shape.row_bytes_out, "B");
  validate_roofline_params(hw.kernels.memory_bound, "hardware.kernels.memory_bound");

  const Bytes bytes(static_cast<double>(shape.rows_in) * shape.row_bytes_in + static_cast<double>(shape.rows_out) * shape.row_bytes_out);
  return with_params(memory_bound_kernel(bytes, hw.gpu.hbm_bandwidth, hw.kernels.memory_bound), ParamSet::memory_bound);
}

}  // namespace ess
