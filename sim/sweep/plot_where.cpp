#include "sim/sweep/plot_where.h"

#include <algorithm>
#include <optional>

#include "sim/config/config_error.h"
#include "sim/config/did_you_mean.h"

namespace ess::plot {

namespace {

struct WhereClause {
  std::string text;                // PATH=VALUE as given
  std::string path;                // PATH
  std::string axis;                // the axis PATH names or lies in
  std::vector<std::string> keys;   // the keys of PATH below the axis (cache.pool_ratio: pool_ratio)
  std::string raw;                 // VALUE
  std::optional<Json> value;       // VALUE read as JSON, when it parses
};

WhereClause parse_where(const PlotInput& input, const std::string& text) {
  const std::string origin = "--where " + text;
  const auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0) {
    throw ConfigError(origin, "", "expected PATH=VALUE, a sweep axis and one of its values "
                                  "(--where hardware.preset=h200-sxm-measured, --where cache.pool_ratio=0.2)");
  }
  WhereClause w;
  w.text = text;
  w.path = text.substr(0, eq);
  w.raw = text.substr(eq + 1);
  if (Json::accept(w.raw)) w.value = Json::parse(w.raw);
  if (std::find(input.axes.begin(), input.axes.end(), w.path) != input.axes.end()) {
    w.axis = w.path;
  } else {
    // A key inside an object axis: the longest axis that PATH continues with a dot.
    for (const auto& a : input.axes) {
      if (w.path.size() > a.size() + 1 && w.path.compare(0, a.size(), a) == 0 && w.path[a.size()] == '.' &&
          a.size() > w.axis.size()) {
        w.axis = a;
      }
    }
    if (w.axis.empty()) {
      throw ConfigError(origin, "", "\"" + w.path + "\" is not an axis of the sweep" + did_you_mean(w.path, input.axes) +
                                        "; the axes are " + quoted_list(input.axes));
    }
    std::string rest = w.path.substr(w.axis.size() + 1);
    std::size_t start = 0;
    while (true) {
      const auto dot = rest.find('.', start);
      w.keys.push_back(rest.substr(start, dot == std::string::npos ? std::string::npos : dot - start));
      if (dot == std::string::npos) break;
      start = dot + 1;
    }
  }
  return w;
}

// The record's value at the clause's path, or none.
std::optional<Json> where_value(const WhereClause& w, const Record& r) {
  const auto& axes = r.at("axes");
  if (!axes.contains(w.axis)) return std::nullopt;
  Json v = Json::parse(axes.at(w.axis).dump());
  for (const auto& k : w.keys) {
    if (!v.is_object() || !v.contains(k)) return std::nullopt;
    v = Json(v[k]);
  }
  return v;
}

bool where_matches(const WhereClause& w, const Record& r) {
  const auto v = where_value(w, r);
  if (!v) return false;
  return (w.value && *v == *w.value) || (!v->is_object() && !v->is_array() && scalar_text(*v) == w.raw);
}

}  // namespace

std::pair<std::vector<Record>, std::string> apply_where(const PlotInput& input, const std::vector<std::string>& where) {
  std::vector<WhereClause> clauses;
  for (const auto& text : where) clauses.push_back(parse_where(input, text));
  for (const auto& w : clauses) {
    if (std::any_of(input.records.begin(), input.records.end(), [&](const Record& r) { return where_matches(w, r); })) continue;
    std::vector<std::string> values;
    for (const auto& r : input.records) {
      const auto v = where_value(w, r);
      if (!v) continue;
      const std::string t = v->is_string() ? v->get<std::string>() : v->dump();
      if (std::find(values.begin(), values.end(), t) == values.end()) values.push_back(t);
    }
    throw ConfigError("--where " + w.text, "", "no point of the sweep has " + w.path + " = " + w.raw +
                                                   (values.empty() ? std::string("; no point has " + w.path + " at all")
                                                                   : "; its values are " + quoted_list(values)));
  }
  std::vector<Record> kept;
  for (const auto& r : input.records) {
    bool ok = true;
    for (const auto& w : clauses) {
      // Clauses on one path: any of them.
      bool any = false;
      for (const auto& other : clauses) {
        if (other.path == w.path && where_matches(other, r)) any = true;
      }
      ok = ok && any;
    }
    if (ok) kept.push_back(r);
  }
  std::vector<std::string> texts;
  for (const auto& w : clauses) texts.push_back(w.text);
  if (kept.empty()) {
    throw ConfigError("--where " + join(texts, " --where "), "", "no point of the sweep matches all of them together");
  }
  return {std::move(kept), "where " + join(texts, ", ")};
}

}  // namespace ess::plot
