// Which suites of one ess-bench run have completed, failed or not run yet, so that the
// measurements file can be written after every suite (and on a fatal CUDA error) as a valid,
// complete-so-far document that says what it holds. The status goes into environment.method
// (a free sentence in the schema), so a partial file reads like any other in calibration/.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kernels/bench/options.h"

namespace ess::bench {

class SuiteProgress {
 public:
  explicit SuiteProgress(std::vector<Suite> planned) : planned_(std::move(planned)) {}

  // The suite now running (its samples so far are kept if it fails).
  void start(Suite s) { running_ = s; }
  void complete();
  // The running suite failed with `why`; nothing happens when no suite is running.
  void fail(const std::string& why);

  [[nodiscard]] const std::vector<Suite>& completed() const { return completed_; }
  [[nodiscard]] const std::vector<std::pair<Suite, std::string>>& failed() const { return failed_; }
  [[nodiscard]] std::optional<Suite> running() const { return running_; }
  // Planned suites neither completed nor failed (the running one included).
  [[nodiscard]] std::vector<Suite> not_finished() const;
  [[nodiscard]] bool all_completed() const { return completed_.size() == planned_.size(); }

  // " Suites completed: gemm, norm. Failed: copy (why). Not run: gather, d2d." with each part
  // present only when it lists something (the first always: "completed: none" before any), and
  // "Running when written: X." for a checkpoint taken inside a suite.
  [[nodiscard]] std::string text() const;

 private:
  std::vector<Suite> planned_;
  std::vector<Suite> completed_;
  std::vector<std::pair<Suite, std::string>> failed_;
  std::optional<Suite> running_;
};

}  // namespace ess::bench
