#include "sim/sweep/points.h"

namespace ess {

std::vector<std::string> SweepPoint::overrides() const {
  std::vector<std::string> out;
  // As JSON, so that a string axis value "max" is --set x="max" and never read back as a number.
  for (const auto& [path, value] : axes) out.push_back(path + "=" + value.dump());
  return out;
}

std::string SweepPoint::label() const {
  std::string out;
  for (const auto& [path, value] : axes) {
    const auto dot = path.rfind('.');
    if (!out.empty()) out += ' ';
    out += (dot == std::string::npos ? path : path.substr(dot + 1)) + "=" + (value.is_string() ? value.get<std::string>() : value.dump());
  }
  return out;
}

nlohmann::ordered_json SweepPoint::axes_json() const {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  for (const auto& [path, value] : axes) j[path] = nlohmann::ordered_json::parse(value.dump());
  return j;
}

std::vector<SweepPoint> expand_points(const SweepSpec& spec) {
  std::size_t total = 1;
  std::vector<std::size_t> sizes;
  for (const auto& d : spec.dimensions) {
    sizes.push_back(spec.axes[d.front()].values.size());
    total *= sizes.back();
  }
  std::vector<SweepPoint> points;
  points.reserve(total);
  std::vector<std::size_t> at(spec.dimensions.size(), 0);  // index into each dimension
  for (std::size_t p = 0; p < total; ++p) {
    // Mixed-radix digits of p, the last dimension the least significant.
    std::size_t rest = p;
    for (std::size_t d = spec.dimensions.size(); d-- > 0;) {
      at[d] = rest % sizes[d];
      rest /= sizes[d];
    }
    std::vector<const nlohmann::json*> value_of(spec.axes.size(), nullptr);
    for (std::size_t d = 0; d < spec.dimensions.size(); ++d) {
      for (const std::size_t axis : spec.dimensions[d]) value_of[axis] = &spec.axes[axis].values[at[d]];
    }
    SweepPoint point;
    point.index = p;
    for (std::size_t a = 0; a < spec.axes.size(); ++a) point.axes.emplace_back(spec.axes[a].path, *value_of[a]);
    points.push_back(std::move(point));
  }
  return points;
}

}  // namespace ess
