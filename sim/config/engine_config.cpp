#include "sim/config/engine_config.h"

#include <string>
#include <vector>

namespace ess {

EngineConfig read_engine(ObjectReader& r) {
  EngineConfig e;
  e.name = r.text("name");
  (void)r.optional_text("description");
  e.version = r.text("version");
  std::vector<std::string> kernels;
  for (const MlaKernel& k : mla_kernels()) kernels.emplace_back(k.name);
  e.mla_kernel = find_mla_kernel(r.choice("mla_kernel", kernels));
  // A gap above 1 ms would be a host-bound step, not a kernel's launch: out of range.
  e.kernel_gap = r.seconds("kernel_gap", Range::closed(0.0, 1e-3));
  r.finish();
  return e;
}

}  // namespace ess
