#include "sim/serving/arrivals.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <string_view>

#include "sim/base/error.h"
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

namespace {

std::vector<Request> draw_poisson(const ServingConfig& s, std::uint64_t seed) {
  return poisson_arrivals(s.arrivals, s.duration.value(), seed);
}
std::vector<Request> draw_trace(const ServingConfig& s, std::uint64_t) {
  return read_arrival_trace(s.arrivals.file, s.duration.value(), s.arrivals.format);
}
std::vector<Request> draw_closed_loop(const ServingConfig& s, std::uint64_t seed) { return closed_loop_requests(s.arrivals, seed); }

double mean_length(const TokenLengths& t) { return 0.5 * (static_cast<double>(t.min) + static_cast<double>(t.max)); }

// Each rate times its period, the rate changes included.
ArrivalProcess::Load expected_poisson(const ServingConfig& c) {
  double n = 0.0;
  double t = 0.0;
  double rate = c.arrivals.rate;
  const double end = c.duration.value();
  for (const RateChange& change : c.arrivals.rate_changes) {
    const double until = std::min(change.at, end);
    if (until > t) n += rate * (until - t);
    t = std::max(t, until);
    rate = change.rate;
  }
  if (end > t) n += rate * (end - t);
  return {n, mean_length(c.arrivals.output_tokens), "serving.arrivals.rate x serving.duration"};
}
// At most one request a line; its lengths are known once it is read.
ArrivalProcess::Load expected_trace(const ServingConfig& c) {
  const std::string text = read_text_file(c.arrivals.file);
  return {static_cast<double>(std::count(text.begin(), text.end(), '\n') + 1), 1.0, "the lines of serving.arrivals.file"};
}
ArrivalProcess::Load expected_closed_loop(const ServingConfig& c) {
  return {static_cast<double>(c.arrivals.requests), mean_length(c.arrivals.output_tokens),
          "serving.arrivals.requests = " + std::to_string(c.arrivals.requests)};
}

}  // namespace

const std::vector<ArrivalProcess>& arrival_processes() {
  struct Functions {
    std::vector<Request> (*draw)(const ServingConfig&, std::uint64_t);
    ArrivalProcess::Load (*expected)(const ServingConfig&);
  };
  // By kArrivalProcesses' index: poisson, trace, concurrency.
  static constexpr Functions kFunctions[] = {
      {&draw_poisson, &expected_poisson}, {&draw_trace, &expected_trace}, {&draw_closed_loop, &expected_closed_loop}};
  static_assert(std::size(kFunctions) == std::size(kArrivalProcesses), "a process for each of kArrivalProcesses, in its order");
  static const std::vector<ArrivalProcess> processes = [] {
    std::vector<ArrivalProcess> out;
    for (std::size_t i = 0; i < std::size(kFunctions); ++i) {
      out.push_back({kArrivalProcesses[i].name, kFunctions[i].draw, kFunctions[i].expected});
    }
    return out;
  }();
  return processes;
}

const ArrivalProcess& arrival_process(std::string_view name) {
  for (const auto& p : arrival_processes()) {
    if (p.name == name) return p;
  }
  throw InternalError("unknown arrival process \"" + std::string(name) + "\"");
}

std::vector<Request> arrivals(const ServingConfig& s, std::uint64_t scenario_seed) {
  return arrival_process(s.arrivals.process).draw(s, arrival_seed(scenario_seed));
}

}  // namespace ess
