// Reading a Hardware profile (models/hardware.h) from a hardware preset merged with overrides.
#pragma once

#include "models/hardware.h"

namespace ess {

class ObjectReader;

// Reads a complete hardware description; every field is required (presets provide them all).
[[nodiscard]] Hardware read_hardware(ObjectReader& r);

}  // namespace ess
