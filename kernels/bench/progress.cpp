#include "kernels/bench/progress.h"

#include <algorithm>

namespace ess::bench {

void SuiteProgress::complete() {
  if (running_) completed_.push_back(*running_);
  running_.reset();
}

void SuiteProgress::fail(const std::string& why) {
  if (running_) failed_.emplace_back(*running_, why);
  running_.reset();
}

std::vector<Suite> SuiteProgress::not_finished() const {
  std::vector<Suite> out;
  for (const Suite s : planned_) {
    const bool done = std::find(completed_.begin(), completed_.end(), s) != completed_.end() ||
                      std::any_of(failed_.begin(), failed_.end(), [s](const auto& f) { return f.first == s; });
    if (!done) out.push_back(s);
  }
  return out;
}

std::string SuiteProgress::text() const {
  const auto names = [](const std::vector<Suite>& suites) {
    std::string out;
    for (const Suite s : suites) out += (out.empty() ? "" : ", ") + std::string(to_string(s));
    return out;
  };
  std::string t = " Suites completed: " + (completed_.empty() ? std::string("none") : names(completed_)) + ".";
  if (!failed_.empty()) {
    t += " Failed: ";
    for (std::size_t i = 0; i < failed_.size(); ++i) {
      t += (i > 0 ? "; " : "") + std::string(to_string(failed_[i].first)) + " (" + failed_[i].second + ")";
    }
    t += ".";
  }
  if (running_) t += " Running when written: " + std::string(to_string(*running_)) + ".";
  std::vector<Suite> waiting = not_finished();
  if (running_) waiting.erase(std::remove(waiting.begin(), waiting.end(), *running_), waiting.end());
  if (!waiting.empty()) t += " Not run: " + names(waiting) + ".";
  return t;
}

}  // namespace ess::bench
