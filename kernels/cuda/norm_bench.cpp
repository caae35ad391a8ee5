// RMSNorm and LayerNorm (our kernels in device_kernels.cu) over tokens x hidden, bf16. Before any
// timing every kernel configuration is checked against the double-precision reference; a
// mismatch stops the run (a fast wrong kernel would calibrate the simulator wrongly).
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/bench/norm_reference.h"
#include "kernels/cuda/check.h"
#include "kernels/cuda/device_kernels.h"
#include "kernels/cuda/runner.h"

namespace ess::bench {

namespace {

constexpr std::int64_t kBf16Bytes = 2;
constexpr std::uint64_t kNormSeed = 0x6d726f6eULL;  // any fixed value
constexpr std::uint64_t kWeightSeed = kNormSeed + 1;
constexpr std::uint64_t kBiasSeed = kNormSeed + 2;

// 5 rows: with 4 rows per block in the warp-per-row kernels, the second block has 3 idle warps,
// which a bounds bug would trip over.
constexpr std::int64_t kCheckTokens = 5;

float eps_of(NormKind kind) {
  return static_cast<float>(kind == NormKind::rms ? kRmsEps : kLayerEps);
}

std::vector<float> download_bf16(const std::byte* device, std::int64_t count) {
  std::vector<std::uint16_t> bits(static_cast<std::size_t>(count));
  ESS_CUDA_CHECK(cudaMemcpy(bits.data(), device, static_cast<std::size_t>(count * kBf16Bytes),
                            cudaMemcpyDeviceToHost));
  std::vector<float> values;
  values.reserve(bits.size());
  for (const std::uint16_t b : bits) values.push_back(bf16_bits_to_float(b));
  return values;
}

void check_against_reference(Runner& r, NormKind kind, std::int64_t hidden) {
  const std::int64_t count = kCheckTokens * hidden;
  const DeviceBuffer x = r.random_device_buffer(count * kBf16Bytes, FillType::bf16, kNormSeed);
  const DeviceBuffer w = r.random_device_buffer(hidden * kBf16Bytes, FillType::bf16, kWeightSeed);
  const DeviceBuffer b = r.random_device_buffer(hidden * kBf16Bytes, FillType::bf16, kBiasSeed);
  const DeviceBuffer y(count * kBf16Bytes);
  launch_norm(kind, norm_launch(kCheckTokens, hidden), x.data(), w.data(), b.data(), y.data(),
              kCheckTokens, hidden, eps_of(kind), r.stream);
  ESS_CUDA_CHECK(cudaStreamSynchronize(r.stream));

  const std::vector<float> xs = download_bf16(x.data(), count);
  const std::vector<float> ws = download_bf16(w.data(), hidden);
  const std::vector<float> bs = download_bf16(b.data(), hidden);
  const std::vector<float> ys = download_bf16(y.data(), count);
  std::vector<double> expected(static_cast<std::size_t>(count));
  norm_reference(kind, kCheckTokens, hidden, xs, ws, bs,
                 kind == NormKind::rms ? kRmsEps : kLayerEps, expected);
  const Comparison c = compare_outputs(ys, expected, kNormRelTol, kNormAbsTol);
  if (!c.ok) {
    std::fprintf(stderr,
                 "ess-bench: %s norm kernel is wrong for hidden %lld: element %lld (row %lld) is "
                 "%.9g, the double reference %.9g (error %.3g x the bound |e| <= %g |ref| + %g)\n",
                 std::string(to_string(kind)).c_str(), static_cast<long long>(hidden),
                 static_cast<long long>(c.worst_index),
                 static_cast<long long>(c.worst_index / hidden), c.got, c.expected, c.worst_ratio,
                 kNormRelTol, kNormAbsTol);
    // The suite fails (main() records it and goes on with the next); its samples so far were checked.
    throw std::runtime_error(std::string(to_string(kind)) + " norm kernel is wrong for hidden " + std::to_string(hidden));
  }
  r.note(std::string(to_string(kind)) + " norm, hidden " + std::to_string(hidden) +
         ": matches the double reference on " + std::to_string(kCheckTokens) +
         " rows (worst error " + std::to_string(c.worst_ratio) + " x the bound)");
}

}  // namespace

void run_norm(Runner& r) {
  const Sweep& s = r.sweep;
  constexpr NormKind kKinds[] = {NormKind::rms, NormKind::layer};
  for (const NormKind kind : kKinds) {
    for (const std::int64_t hidden : s.norm_hidden) check_against_reference(r, kind, hidden);
  }

  const auto total = static_cast<std::int64_t>(2 * s.norm_hidden.size() * s.norm_tokens.size());
  std::int64_t index = 0;
  const TimingOptions timing{s.warmups, s.repetitions, true, std::nullopt};
  for (const NormKind kind : kKinds) {
    for (const std::int64_t hidden : s.norm_hidden) {
      const DeviceBuffer w =
          r.random_device_buffer(hidden * kBf16Bytes, FillType::bf16, kWeightSeed);
      const DeviceBuffer b = r.random_device_buffer(hidden * kBf16Bytes, FillType::bf16, kBiasSeed);
      for (const std::int64_t tokens : s.norm_tokens) {
        if (!r.time_left()) {
          r.skip("norm: " + std::to_string(total - index) + " of " + std::to_string(total) +
                 " samples (" + r.stop_reason() + ")");
          return;
        }
        const std::int64_t tensor = tokens * hidden * kBf16Bytes;
        const std::int64_t y_offset = round_up(tensor, kDefaultAlignment);
        const RotationPlan plan = rotation_plan(y_offset + tensor, r.l2_bytes);
        const DeviceBuffer arena =
            r.random_device_buffer(plan.total_bytes(), FillType::bf16, kNormSeed);
        const NormLaunch launch = norm_launch(tokens, hidden);
        const float eps = eps_of(kind);
        const auto enqueue = [&](std::int64_t i) {
          std::byte* slot = arena.data() + i % plan.copies * plan.slot_bytes;
          launch_norm(kind, launch, slot, w.data(), b.data(), slot + y_offset, tokens, hidden, eps,
                      r.stream);
        };
        const std::vector<double> t = r.timer.run(r.stream, enqueue, timing);
        r.add(norm_sample(kind, tokens, hidden, compute_stats(t)),
              std::string(to_string(kind)) + " " + std::to_string(tokens) + "x" +
                  std::to_string(hidden),
              index, total);
        ++index;
      }
    }
  }
}

}  // namespace ess::bench
