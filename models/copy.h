// PcieCopyEngine: cudaMemcpyAsync between pinned host memory and one GPU over its PCIe link,
// driven by the GPU's DMA copy engine (no SMs used).
//
//   time = chunks call_overhead(dir) + latency + total / bandwidth(dir)
//
// The total is split into `chunks` equal copies issued back to back on one stream: each call pays
// its fixed overhead, the DMA latency is paid once (the copies pipeline), and the bytes stream at
// the sustained bandwidth of one large copy. Parameters: hardware.pcie.{h2d,d2h}_bandwidth,
// hardware.pcie.latency, hardware.pcie.{h2d,d2h}_call_overhead. One GPU alone on its link: sharing
// of a PCIe switch uplink or CPU socket is modelled by the event simulation, not here.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "models/hardware.h"
#include "models/units.h"

namespace ess {

enum class CopyDirection { h2d, d2h };

[[nodiscard]] constexpr std::string_view to_string(CopyDirection d) {
  switch (d) {
    case CopyDirection::h2d: return "h2d";
    case CopyDirection::d2h: return "d2h";
  }
  return "?";
}

// Every CopyDirection name, in a fixed order (for error messages and "did you mean").
[[nodiscard]] std::span<const std::string_view> copy_direction_names();

// Parses "h2d" or "d2h"; nullopt for anything else.
[[nodiscard]] std::optional<CopyDirection> parse_copy_direction(std::string_view name);

// Time to copy `total` bytes (>= 0) in `chunks` (>= 1) equal cudaMemcpyAsync calls.
// Throws InputError on total < 0, chunks < 1, a bandwidth <= 0, or a negative latency
// or call overhead.
[[nodiscard]] Seconds copy_time(CopyDirection dir, Bytes total, std::int64_t chunks,
                                const PcieSpec& pcie);

// The size-dependent bandwidth the model implies: total / copy_time(dir, total, chunks, pcie).
// It approaches bandwidth(dir) for large single copies and falls for small or many-chunk copies.
// 0 B/s for total == 0. Same errors as copy_time.
[[nodiscard]] BytesPerSecond effective_bandwidth(CopyDirection dir, Bytes total,
                                                 std::int64_t chunks, const PcieSpec& pcie);

}  // namespace ess

namespace ess {

// UvaGather: a kernel whose threads read (h2d) or write (d2h) scattered rows of pinned host memory
// directly over PCIe (the ESS paper's FlashTrans). One launch moves every row, so there is no
// per-row call overhead, but it reaches only a fraction of the copy engine's bandwidth and it
// occupies hardware.pcie.gather_sm_fraction of the SMs while it runs.
//
//   time = latency + total / (bandwidth[dir] x gather_efficiency[dir])
//
// Throws InputError for total < 0 or parameters out of range.
[[nodiscard]] Seconds gather_time(CopyDirection dir, Bytes total, const PcieSpec& pcie);

// The rate a gather reaches on an otherwise idle link: bandwidth[dir] x gather_efficiency[dir].
[[nodiscard]] BytesPerSecond gather_rate(CopyDirection dir, const PcieSpec& pcie);

}  // namespace ess
