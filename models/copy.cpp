#include "models/copy.h"

#include <array>
#include <sstream>
#include <stdexcept>
#include <string>

#include "models/check.h"
#include "sim/base/error.h"

namespace ess {

namespace {

constexpr std::array<std::string_view, 2> kDirectionNames = {"h2d", "d2h"};
constexpr std::array<CopyDirection, 2> kDirections = {CopyDirection::h2d, CopyDirection::d2h};

[[noreturn]] void fail(const std::string& field, const std::string& expected, double got,
                       std::string_view unit) {
  std::ostringstream msg;
  msg << field << " must be " << expected << " (got " << got << unit << ")";
  throw InputError(msg.str());
}

}  // namespace

std::span<const std::string_view> copy_direction_names() { return kDirectionNames; }

std::optional<CopyDirection> parse_copy_direction(std::string_view name) {
  for (std::size_t i = 0; i < kDirectionNames.size(); ++i) {
    if (kDirectionNames[i] == name) return kDirections[i];
  }
  return std::nullopt;
}

Seconds copy_time(CopyDirection dir, Bytes total, std::int64_t chunks, const PcieSpec& pcie) {
  if (!(total.value() >= 0.0)) {
    fail("copy_time: total", ">= 0 B", total.value(), " B");
  }
  if (chunks < 1) {
    throw InputError("copy_time: chunks must be >= 1 (got " + std::to_string(chunks) +
                     ")");
  }
  const bool h2d = dir == CopyDirection::h2d;
  const std::string prefix = h2d ? "hardware.pcie.h2d_" : "hardware.pcie.d2h_";
  const BytesPerSecond bandwidth = h2d ? pcie.h2d_bandwidth : pcie.d2h_bandwidth;
  const Seconds call_overhead = h2d ? pcie.h2d_call_overhead : pcie.d2h_call_overhead;
  if (!(bandwidth.value() > 0.0)) {
    fail(prefix + "bandwidth", "> 0 B/s", bandwidth.value(), " B/s");
  }
  if (!(call_overhead.value() >= 0.0)) {
    fail(prefix + "call_overhead", ">= 0 s", call_overhead.value(), " s");
  }
  if (!(pcie.latency.value() >= 0.0)) {
    fail("hardware.pcie.latency", ">= 0 s", pcie.latency.value(), " s");
  }

  return static_cast<double>(chunks) * call_overhead + pcie.latency + total / bandwidth;
}

BytesPerSecond effective_bandwidth(CopyDirection dir, Bytes total, std::int64_t chunks,
                                   const PcieSpec& pcie) {
  const Seconds t = copy_time(dir, total, chunks, pcie);
  // An empty copy moves nothing; returning 0 also avoids 0/0 when overheads and latency are 0.
  if (total.value() == 0.0) return BytesPerSecond(0.0);
  return total / t;
}

}  // namespace ess

namespace ess {

BytesPerSecond gather_rate(CopyDirection dir, const PcieSpec& pcie) {
  const bool h2d = dir == CopyDirection::h2d;
  const BytesPerSecond bandwidth = h2d ? pcie.h2d_bandwidth : pcie.d2h_bandwidth;
  const double efficiency = h2d ? pcie.gather_h2d_efficiency : pcie.gather_d2h_efficiency;
  check::positive("", h2d ? "hardware.pcie.h2d_bandwidth" : "hardware.pcie.d2h_bandwidth", bandwidth.value(), "B/s");
  if (!(efficiency > 0.0 && efficiency <= 1.0)) {
    throw InputError(std::string(h2d ? "hardware.pcie.gather_h2d_efficiency" : "hardware.pcie.gather_d2h_efficiency") +
                     " must be in (0, 1] (got " + check::number(efficiency) + ")");
  }
  return bandwidth * efficiency;
}

Seconds gather_time(CopyDirection dir, Bytes total, const PcieSpec& pcie) {
  check::non_negative("gather_time", "total", total.value(), "B");
  check::non_negative("", "hardware.pcie.latency", pcie.latency.value(), "s");
  return pcie.latency + total / gather_rate(dir, pcie);
}

}  // namespace ess
