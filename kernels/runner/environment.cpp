#include "kernels/runner/environment.h"

namespace ess::runner {

std::string format_cublas_version(int version) {
  return std::to_string(version / 10000) + "." + std::to_string(version % 10000 / 100) + "." +
         std::to_string(version % 100);
}

}  // namespace ess::runner
