#include "sim/serving/arrivals.h"

#include <charconv>
#include <cmath>
#include <limits>
#include <string_view>

#include "sim/config/config_error.h"
#include "sim/config/json_text.h"
#include "sim/base/rng.h"
#include "sim/serving/trace_formats.h"

namespace ess {

namespace {

// Stream numbers of the arrival generator's children.
constexpr std::uint64_t kTimesStream = 1;
constexpr std::uint64_t kPromptStream = 2;
constexpr std::uint64_t kOutputStream = 3;
// Mixed into the scenario seed so that arrivals share no stream with other components.
constexpr std::uint64_t kArrivalSalt = 0x5E4C1A7712C0FFEEULL;

std::int64_t draw_length(Rng& rng, const TokenLengths& t) {
  if (t.fixed()) return t.min;
  return t.min + static_cast<std::int64_t>(rng.below(static_cast<std::uint64_t>(t.max - t.min + 1)));
}

}  // namespace

std::uint64_t arrival_seed(std::uint64_t scenario_seed) { return Rng(scenario_seed ^ kArrivalSalt).next(); }

std::vector<Request> poisson_arrivals(const ArrivalConfig& a, double duration, std::uint64_t seed) {
  const Rng root(seed);
  Rng times = root.fork(kTimesStream);
  Rng prompts = root.fork(kPromptStream);
  Rng outputs = root.fork(kOutputStream);
  std::vector<Request> out;
  double t = 0.0;
  double rate = a.rate;
  std::size_t next_change = 0;
  while (t < duration) {
    const double segment_end = next_change < a.rate_changes.size() ? a.rate_changes[next_change].at : duration;
    const auto advance = [&] {
      t = segment_end;
      if (next_change < a.rate_changes.size()) rate = a.rate_changes[next_change++].rate;
    };
    if (rate <= 0.0) {
      advance();
      continue;
    }
    // Inversion: -ln(1 - u) / rate, u in [0, 1), so the gap is finite and >= 0.
    const double gap = -std::log1p(-times.uniform()) / rate;
    if (t + gap >= segment_end) {
      advance();  // memoryless: the process restarts at the change with the new rate
      continue;
    }
    t += gap;
    Request r;
    r.id = static_cast<std::int64_t>(out.size());
    r.arrival = t;
    r.prompt_tokens = draw_length(prompts, a.prompt_tokens);
    r.output_tokens = draw_length(outputs, a.output_tokens);
    out.push_back(r);
  }
  return out;
}

std::vector<Request> closed_loop_requests(const ArrivalConfig& a, std::uint64_t seed) {
  const Rng root(seed);
  Rng prompts = root.fork(kPromptStream);
  Rng outputs = root.fork(kOutputStream);
  std::vector<Request> out(static_cast<std::size_t>(a.requests));
  for (std::size_t i = 0; i < out.size(); ++i) {
    Request& r = out[i];
    r.id = static_cast<std::int64_t>(i);
    r.arrival = static_cast<std::int64_t>(i) < a.concurrency ? 0.0 : kNotSent;
    r.prompt_tokens = draw_length(prompts, a.prompt_tokens);
    r.output_tokens = draw_length(outputs, a.output_tokens);
  }
  return out;
}

std::vector<Request> parse_arrival_trace(const std::string& text, const std::string& origin, double duration) {
  return parse_trace("ess-csv", text, origin, duration);
}

std::vector<Request> read_arrival_trace(const std::string& path, double duration, std::string_view format) {
  return parse_trace(format, read_text_file(path), path, duration);
}

std::vector<Request> arrivals(const ServingConfig& s, std::uint64_t scenario_seed) {
  if (s.arrivals.process == "trace") return read_arrival_trace(s.arrivals.file, s.duration.value(), s.arrivals.format);
  if (s.arrivals.closed_loop()) return closed_loop_requests(s.arrivals, arrival_seed(scenario_seed));
  return poisson_arrivals(s.arrivals, s.duration.value(), arrival_seed(scenario_seed));
}

}  // namespace ess
