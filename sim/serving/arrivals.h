// Request arrivals of a serving period: Poisson at a (piecewise-constant) rate from the scenario's
// seed, or the rows of a CSV trace. Pure functions, no SimGrid.
//
// Common random numbers: arrival times, prompt lengths and output lengths each have their own
// stream forked from arrival_seed(seed), so the same seed gives the same requests whatever the
// admission, controller or cache settings, and changing one length distribution does not move
// the arrival times.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "sim/config/serving_config.h"

namespace ess {

// The arrival of a closed loop's request not sent yet (the loop sends it when an earlier one finishes).
inline constexpr double kNotSent = -1.0;

struct Request {
  std::int64_t id = 0;        // 0, 1, ... in arrival order
  double arrival = 0.0;       // seconds since the start of the period; kNotSent: not sent (closed loop)
  std::int64_t prompt_tokens = 0;  // cached at arrival (prefilled elsewhere, PD-disaggregated)
  std::int64_t output_tokens = 0;  // tokens to decode here
};

// The seed of the arrival streams of a scenario with this seed (distinct from the cache
// simulation's and the routing's streams).
[[nodiscard]] std::uint64_t arrival_seed(std::uint64_t scenario_seed);

// Poisson arrivals during [0, duration), rate changes applied at their times (the process is
// memoryless, so it restarts at each change). Exponential gaps by inversion of our own uniform
// draws (sim/base/rng.h); lengths uniform over their integer range.
[[nodiscard]] std::vector<Request> poisson_arrivals(const ArrivalConfig& a, double duration, std::uint64_t seed);

// A trace in ess-sim's CSV: a header line "arrival_s,prompt_tokens,output_tokens", then one
// request per line (arrival seconds >= 0, non-decreasing; token counts integers >= 1). Rows
// arriving at or after `duration` are left out. ConfigError naming the file and line on any bad
// row. Other formats: sim/serving/trace_formats.h.
[[nodiscard]] std::vector<Request> parse_arrival_trace(const std::string& text, const std::string& origin, double duration);
[[nodiscard]] std::vector<Request> read_arrival_trace(const std::string& path, double duration,
                                                      std::string_view format = "ess-csv");

// A closed loop's requests (arrivals.process "concurrency"): `requests` of them with lengths drawn
// as Poisson arrivals draw theirs, the first `concurrency` sent at 0, the rest kNotSent.
[[nodiscard]] std::vector<Request> closed_loop_requests(const ArrivalConfig& a, std::uint64_t seed);

// An arrival process, the one serving.arrivals.process names (kArrivalProcesses' line of the same
// index; a process without a line, or a line without a process, does not compile). Adding one: its
// Named line and reader branch in sim/config/serving_config, its line here.
struct ArrivalProcess {
  std::string_view name;
  // Its requests, from the serving section and the arrival streams' seed (arrival_seed()).
  std::vector<Request> (*draw)(const ServingConfig& s, std::uint64_t seed);
  // What it will draw, before drawing it: serving's preflight (serving_preflight.h) refuses absurd loads.
  struct Load {
    double requests = 0.0;      // how many (the expectation of a random process)
    double output_tokens = 1.0;  // each, on average (1 where the lengths are not known before reading)
    std::string knob;           // the settings that decide the count
  };
  Load (*expected)(const ServingConfig& s);
};
[[nodiscard]] const std::vector<ArrivalProcess>& arrival_processes();
// The process called `name`; InternalError for an unknown one (the loader refuses those first).
[[nodiscard]] const ArrivalProcess& arrival_process(std::string_view name);

// The requests of a serving section (any process).
[[nodiscard]] std::vector<Request> arrivals(const ServingConfig& s, std::uint64_t scenario_seed);

}  // namespace ess
