#include "models/elementwise.h"

#include <stdexcept>
#include <string>
#include <string_view>

#include "models/check.h"
#include "models/roofline.h"

namespace ess {

namespace {

}  // namespace

KernelCost elementwise(const ElementwiseShape& shape, const Hardware& hw) {
  check::at_least("elementwise", "elements", shape.elements, 1);
  check::at_least("elementwise", "inputs", shape.inputs, 0);
  check::at_least("elementwise", "outputs", shape.outputs, 1);
  validate_roofline_params(hw.kernels.memory_bound, "hardware.kernels.memory_bound");

  const auto elements = static_cast<double>(shape.elements);
  const double tensors = static_cast<double>(shape.inputs) + static_cast<double>(shape.outputs);
  const Bytes bytes(elements * tensors * bytes_per_element(shape.dtype));
  return with_params(memory_bound_kernel(bytes, hw.gpu.hbm_bandwidth, hw.kernels.memory_bound), ParamSet::memory_bound);
}

}  // namespace ess
