#include "sim/config/engine_config.h"

#include <string>

namespace ess {

EngineConfig read_engine(ObjectReader& r) {
  EngineConfig e;
  e.name = r.text("name");
  (void)r.optional_text("description");
  e.version = r.text("version");
  e.mla_kernel = find_mla_kernel(r.choice("mla_kernel", mla_kernel_names()));
  // A gap above 1 ms would be a host-bound step, not a kernel's launch: out of range.
  e.kernel_gap = r.seconds("kernel_gap", Range::closed(0.0, 1e-3));
  e.eplb = r.choice("eplb", {"on", "off"}) == "on";
  r.finish();
  return e;
}

}  // namespace ess
