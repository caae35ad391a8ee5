#include "calibration/format_helpers.h"

#include <cctype>
#include <cmath>

#include "models/check.h"
#include "sim/config/did_you_mean.h"

namespace ess::measurement {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool gpu_matches(const std::string& gpu, const ReadOptions& o) {
  return o.gpu.empty() || lower(gpu).find(lower(o.gpu)) != std::string::npos;
}

bool keep_gpu(const std::string& gpu, const ReadOptions& o, MeasurementInput& in) {
  if (gpu_matches(gpu, o)) return true;
  ++in.skipped["rows of another GPU"];
  return false;
}

std::string joined(const std::set<std::string>& s) {
  std::string j;
  for (const auto& x : s) j += (j.empty() ? "" : ", ") + x;
  return j;
}

void one_gpu(const std::set<std::string>& gpus, MeasurementInput& in) {
  if (gpus.size() > 1) {
    throw MeasurementError(in.path, "", "has rows from several GPUs (" + joined(gpus) + "); choose one with --gpu");
  }
  in.gpu = joined(gpus);
}

double positive_number(const CsvTable& t, const CsvRow& r, std::size_t col, double max, const char* unit) {
  const double v = t.number(r, col);
  if (!(v > 0.0 && v <= max)) {
    t.fail(r, col, "expected a number > 0 and at most " + check::number(max) + " " + unit + ", got \"" + shown(t.text(r, col)) + "\"");
  }
  return v;
}

double checked_time(const CsvTable& t, const CsvRow& r, std::size_t col, double seconds) {
  if (!(seconds >= kMinSeconds && seconds <= kMaxSeconds)) {
    t.fail(r, col, "gives a kernel time of " + check::number(seconds) + " s, outside 1 ns to 1 hour");
  }
  return seconds;
}

void check_agrees(const CsvTable& t, const CsvRow& r, std::size_t col, double derived, double expected,
                  double tolerance, const std::string& what) {
  if (!(std::abs(derived - expected) <= tolerance * std::abs(expected))) {
    t.fail(r, col, "is " + shown(t.text(r, col)) + " but " + what + " gives " + check::number(expected) + " (more than " +
                       check::number(tolerance * 100.0) + "% apart: a typing error?)");
  }
}

std::string choice(const CsvTable& t, const CsvRow& r, std::size_t col, const std::vector<std::string>& allowed) {
  const std::string& s = t.text(r, col);
  if (std::find(allowed.begin(), allowed.end(), s) == allowed.end()) {
    t.fail(r, col, "unknown value \"" + shown(s) + "\"" + did_you_mean(s, allowed) + " (expected " + quoted_list(allowed) + ")");
  }
  return s;
}

}  // namespace ess::measurement
