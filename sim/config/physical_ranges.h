// Physical bounds of the quantities a scenario may set, shared by the hardware, model and scenario
// readers. Every bound is far wider than any real part, so no real configuration is refused, but
// narrow enough that every time derived from them stays finite on the simulated clock.
#pragma once

#include <cstdint>

#include "sim/config/reader.h"

namespace ess {

// Requests per GPU: at most 2^20, so that every later product (tokens x layers x bytes) stays exact
// and far from overflow (workload.batch_per_gpu, serving batch limits and table grids).
inline constexpr std::int64_t kMaxBatchPerGpu = 1 << 20;
// Tokens of a context (workload.context_length, cache pool sizes): 2^31, so that every later
// product (tokens x layers x bytes) stays exact and far from overflow.
inline constexpr double kMaxContextLength = 2147483648.0;
// New tokens per GPU in one step (prefill.tokens_per_gpu, serving.prefill.tokens_per_gpu,
// workload.prefill_chunk.tokens): 2^20, 64x the largest prefill batch engines run.
inline constexpr std::int64_t kMaxTokensPerStep = 1 << 20;

// Physical bounds of every hardware quantity, far wider than any real part but narrow enough that
// every derived time stays a finite, representable number on the simulated clock (a kernel at
// 1e-308 efficiency or a 1e300 s overhead would overflow it). Base units: s, B, B/s, FLOP/s.
// Efficiencies: a kernel reaching under 0.1% of a roof is a measurement or unit error.
inline Range efficiency() { return Range::closed(1e-3, 1.0); }
// Fixed per-kernel, per-call and per-message latencies: 0 to 10 ms (a kernel launch is ~2-5 us,
// an RDMA round trip ~2-10 us, a PCIe call ~2 us; 10 ms is three orders of magnitude above).
inline Range latency() { return Range::closed(0.0, 10e-3); }
// Links and memories: 1 MB/s (a slow management NIC) to 1 EB/s (200,000x an H200's HBM; tests use
// the top of the range to make a roof vanish). Only the lower bound protects the clock.
inline Range link_bandwidth() { return Range::closed(1e6, 1e18); }
// Peak compute: 1 GFLOP/s to 1 ZFLOP/s per GPU (an H200 is ~2e15 FLOP/s at FP8; the same remark).
inline Range peak_rate() { return Range::closed(1e9, 1e21); }
// Memory capacities: up to 1 PB per GPU or socket (a capacity too small for anything is a
// capacity error, not a clock hazard, so any positive size is accepted).
inline Range capacity() { return Range::closed(1.0, 1e15); }
// Roofline ramps (the work at which a kernel reaches half its roof): up to 1 PFLOP and 1 TB.
inline Range flop_ramp() { return Range::closed(0.0, 1e15); }
inline Range byte_ramp() { return Range::closed(0.0, 1e12); }
// NVMe and other storage tiers: reads of 1 MB/s to 1 PB/s, latencies up to 1 s (a spinning disk
// seeks in ~10 ms).
inline Range storage_latency() { return Range::closed(0.0, 1.0); }
// Bytes per cached token per layer: 1 B to 1 MiB (DeepSeek's latent entry is 656 B).
inline Range token_bytes() { return Range::closed(1.0, 1048576.0); }

}  // namespace ess
