#include "models/elementwise.h"

#include <stdexcept>
#include <string>
#include <string_view>

#include "models/roofline.h"

namespace ess {

namespace {

void require_at_least(std::int64_t value, std::int64_t min, std::string_view field) {
  if (value < min) {
    throw std::invalid_argument("elementwise: " + std::string(field) + " must be >= " +
                                std::to_string(min) + " (got " + std::to_string(value) + ")");
  }
}

}  // namespace

KernelCost elementwise(const ElementwiseShape& shape, const Hardware& hw) {
  require_at_least(shape.elements, 1, "elements");
  require_at_least(shape.inputs, 0, "inputs");
  require_at_least(shape.outputs, 1, "outputs");
  validate_roofline_params(hw.kernels.memory_bound, "hardware.kernels.memory_bound");

  const auto elements = static_cast<double>(shape.elements);
  const double tensors = static_cast<double>(shape.inputs) + static_cast<double>(shape.outputs);
  const Bytes bytes(elements * tensors * bytes_per_element(shape.dtype));
  return memory_bound_kernel(bytes, hw.gpu.hbm_bandwidth, hw.kernels.memory_bound);
}

}  // namespace ess
