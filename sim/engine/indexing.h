// An int index (GPU, lane, step, as SimGrid and the plans count them) as a container subscript.
#pragma once

#include <cstddef>

namespace ess {

[[nodiscard]] inline std::size_t idx(int i) { return static_cast<std::size_t>(i); }

}  // namespace ess
