// What a kernel cost model returns: the time and why.
#pragma once

#include <string_view>

#include "models/units.h"

namespace ess {

enum class Bound { compute, memory, overhead };

[[nodiscard]] constexpr std::string_view to_string(Bound b) {
  switch (b) {
    case Bound::compute: return "compute";
    case Bound::memory: return "memory";
    case Bound::overhead: return "overhead";
  }
  return "?";
}

struct KernelCost {
  Seconds time;      // total: max(compute, memory) + overhead, or measured (see `measured`)
  Seconds compute;   // compute-roof time (0 for bytes-only kernels)
  Seconds memory;    // memory-roof time
  Seconds overhead;  // fixed per-kernel time
  Flops flops;       // work counted by the model
  Bytes bytes;       // HBM traffic counted by the model
  Bound bound = Bound::memory;
  // True when `time` comes from measurements of this very shape (a profile's measured GEMM table,
  // models/gemm_table.h) rather than from the roofline terms above.
  bool measured = false;
};

}  // namespace ess
