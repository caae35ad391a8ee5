#include "sim/serving/arrivals.h"

#include <charconv>
#include <cmath>
#include <limits>
#include <string_view>

#include "sim/config/config_error.h"
#include "sim/config/json_text.h"
#include "sim/graph/rng.h"

namespace ess {

namespace {

// Stream numbers of the arrival generator's children.
constexpr std::uint64_t kTimesStream = 1;
constexpr std::uint64_t kPromptStream = 2;
constexpr std::uint64_t kOutputStream = 3;
// Mixed into the scenario seed so that arrivals share no stream with other components.
constexpr std::uint64_t kArrivalSalt = 0x5E4C1A7712C0FFEEULL;
constexpr double kMaxTraceTokens = 2147483648.0;

std::int64_t draw_length(Rng& rng, const TokenLengths& t) {
  if (t.fixed()) return t.min;
  return t.min + static_cast<std::int64_t>(rng.below(static_cast<std::uint64_t>(t.max - t.min + 1)));
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> split(std::string_view line) {
  std::vector<std::string_view> out;
  while (true) {
    const auto comma = line.find(',');
    out.push_back(trim(line.substr(0, comma)));
    if (comma == std::string_view::npos) break;
    line.remove_prefix(comma + 1);
  }
  return out;
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

std::vector<Request> parse_arrival_trace(const std::string& text, const std::string& origin, double duration) {
  std::vector<Request> out;
  std::size_t pos = 0;
  std::size_t line_no = 0;
  bool header = false;
  double last = 0.0;
  const auto fail = [&](const std::string& message) {
    throw ConfigError(origin, "", "line " + std::to_string(line_no) + ": " + message);
  };
  while (pos < text.size()) {
    const auto end = text.find('\n', pos);
    const std::string_view line = trim(std::string_view(text).substr(pos, end == std::string::npos ? std::string::npos : end - pos));
    pos = end == std::string::npos ? text.size() : end + 1;
    ++line_no;
    if (line.empty() || line.front() == '#') continue;
    const auto cells = split(line);
    if (!header) {
      if (cells.size() != 3 || cells[0] != "arrival_s" || cells[1] != "prompt_tokens" || cells[2] != "output_tokens") {
        fail("expected the header \"arrival_s,prompt_tokens,output_tokens\", got \"" + std::string(line) + "\"");
      }
      header = true;
      continue;
    }
    if (cells.size() != 3) fail("expected 3 comma-separated values (arrival_s,prompt_tokens,output_tokens), got " + std::to_string(cells.size()));
    double arrival = 0.0;
    const auto [ap, aec] = std::from_chars(cells[0].data(), cells[0].data() + cells[0].size(), arrival);
    if (aec != std::errc() || ap != cells[0].data() + cells[0].size() || !std::isfinite(arrival) || arrival < 0.0) {
      fail("arrival_s must be a number of seconds >= 0, got \"" + std::string(cells[0]) + "\"");
    }
    if (arrival < last) fail("arrival_s must not decrease (" + std::string(cells[0]) + " after " + std::to_string(last) + ")");
    last = arrival;
    std::int64_t tokens[2] = {0, 0};
    for (int k = 0; k < 2; ++k) {
      const auto cell = cells[static_cast<std::size_t>(k + 1)];
      const auto [p, ec] = std::from_chars(cell.data(), cell.data() + cell.size(), tokens[k]);
      if (ec != std::errc() || p != cell.data() + cell.size() || tokens[k] < 1 || static_cast<double>(tokens[k]) > kMaxTraceTokens) {
        fail(std::string(k == 0 ? "prompt_tokens" : "output_tokens") + " must be an integer in [1, 2147483648], got \"" +
             std::string(cell) + "\"");
      }
    }
    if (arrival >= duration) continue;
    Request r;
    r.id = static_cast<std::int64_t>(out.size());
    r.arrival = arrival;
    r.prompt_tokens = tokens[0];
    r.output_tokens = tokens[1];
    out.push_back(r);
  }
  if (!header) throw ConfigError(origin, "", "empty trace: expected the header \"arrival_s,prompt_tokens,output_tokens\"");
  return out;
}

std::vector<Request> read_arrival_trace(const std::string& path, double duration) {
  return parse_arrival_trace(read_text_file(path), path, duration);
}

std::vector<Request> arrivals(const ServingConfig& s, std::uint64_t scenario_seed) {
  if (s.arrivals.process == "trace") return read_arrival_trace(s.arrivals.file, s.duration.value());
  return poisson_arrivals(s.arrivals, s.duration.value(), arrival_seed(scenario_seed));
}

}  // namespace ess
