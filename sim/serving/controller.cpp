#include "sim/serving/controller.h"

#include <algorithm>
#include <cmath>

namespace ess {

double nearest_rank(std::vector<double> values, double p) {
  if (values.empty()) return 0.0;
  const auto n = values.size();
  const auto rank = std::clamp<std::size_t>(static_cast<std::size_t>(std::ceil(p * static_cast<double>(n))), 1, n);
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(rank - 1), values.end());
  return values[rank - 1];
}

BatchController::BatchController(const ControllerConfig& config, std::int64_t initial_cap, std::int64_t max_cap)
    : config_(config), cap_(config.enabled ? std::clamp<std::int64_t>(initial_cap, 1, max_cap) : max_cap), max_cap_(max_cap) {
  changes_.push_back({0.0, cap_, 0.0});
}

double BatchController::window_p99() const { return nearest_rank(std::vector<double>(window_.begin(), window_.end()), 0.99); }

void BatchController::observe(double time, double step_time, std::int64_t batch, bool cap_binding) {
  window_.push_back(step_time);
  if (static_cast<std::int64_t>(window_.size()) > config_.window) window_.pop_front();
  // Requests admitted before a cut are still decoding: wait until a whole window of steps ran
  // under the cap before judging it.
  if (batch > cap_) {
    since_change_ = 0;
    binding_steps_ = 0;
    return;
  }
  ++since_change_;
  if (cap_binding) ++binding_steps_;
  if (!config_.enabled || since_change_ < config_.window) return;
  const double p99 = window_p99();
  const double threshold = config_.headroom * config_.p99_target.value();
  std::int64_t next = cap_;
  if (p99 > threshold) {
    next = std::max<std::int64_t>(1, std::min(cap_ - 1, static_cast<std::int64_t>(std::floor(static_cast<double>(batch) * config_.decrease))));
  } else if (binding_steps_ * 2 >= since_change_) {
    next = std::min(max_cap_, cap_ + config_.increase);
  }
  if (next == cap_) return;
  cap_ = next;
  since_change_ = 0;
  binding_steps_ = 0;
  changes_.push_back({time, cap_, p99});
}

}  // namespace ess
