#include "sim/sweep/ledger.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string_view>

#include "sim/config/config_error.h"
#include "sim/config/json_text.h"
#include "sim/io/atomic_file.h"
#include "sim/io/read_file.h"

namespace ess {

namespace {

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\r')) s.pop_back();
  std::size_t start = 0;
  while (start < s.size() && (s[start] == '\n' || s[start] == ' ')) ++start;
  return s.substr(start);
}

bool contains(const std::string& text, const char* what) { return text.find(what) != std::string::npos; }

// The summary value at a dotted path, or null; a "serving." path reads the serving run's object.
nlohmann::ordered_json summary_value(const nlohmann::ordered_json& results, const std::string& path) {
  constexpr std::string_view kServing = "serving.";
  const bool serving = path.compare(0, kServing.size(), kServing) == 0;
  const auto summary = results.find(serving ? "serving" : "summary");
  if (summary == results.end()) return nullptr;
  const nlohmann::ordered_json* node = &*summary;
  std::size_t start = serving ? kServing.size() : 0;
  while (true) {
    const auto dot = path.find('.', start);
    const std::string key = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (!node->is_object()) return nullptr;
    const auto it = node->find(key);
    if (it == node->end()) return nullptr;
    node = &*it;
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return node->is_number() ? *node : nlohmann::ordered_json(nullptr);
}

std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\n\r") == std::string::npos) return text;
  std::string out = "\"";
  for (const char c : text) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::string csv_value(const nlohmann::ordered_json& v) {
  if (v.is_null()) return "";
  if (v.is_string()) return csv_field(v.get<std::string>());
  return csv_field(v.dump());
}

void sort_by_point(std::vector<nlohmann::ordered_json>& records) {
  std::stable_sort(records.begin(), records.end(), [](const auto& a, const auto& b) {
    return a.at("point").template get<std::size_t>() < b.at("point").template get<std::size_t>();
  });
}

}  // namespace

PointOutcome classify_run(int exit_code, int signal, const std::string& out, const std::string& err) {
  PointOutcome o;
  std::string message = trim(err);
  if (message.rfind("error: ", 0) == 0) message = message.substr(7);
  o.reason_message = message;
  if (signal != 0) {
    o.status = "failed";
    o.reason_code = "signal_" + std::to_string(signal);
    if (o.reason_message.empty()) o.reason_message = "killed by signal " + std::to_string(signal);
    return o;
  }
  if (exit_code == 0) {
    auto parsed = nlohmann::ordered_json::parse(out, nullptr, false);
    // A decode run's results have a "summary", a serving run's (a scenario with "serving") a
    // "serving" object instead.
    if (parsed.is_discarded() || !parsed.is_object() || (!parsed.contains("summary") && !parsed.contains("serving")) ||
        parsed.value("schema", std::string()) != "ess-sim/results/v1") {
      o.status = "failed";
      o.reason_code = "bad_output";
      o.reason_message = "exit 0 but stdout is not results.json (" + std::to_string(out.size()) + " bytes)";
      return o;
    }
    o.status = "ok";
    o.reason_message.clear();
    o.results = std::move(parsed);
    return o;
  }
  if (exit_code == 2) {
    // The messages of CapacityError (sim/memory/memory_plan.cpp) and ResourceError
    // (sim/engine/preflight.cpp); every other exit 2 is input the loader or preflight rejected.
    if (contains(message, "does not fit") || contains(message, "not even one request per GPU fits")) {
      o.status = "out_of_memory";
    } else if (message.rfind("this run would need about", 0) == 0 || message.rfind("this run would take about", 0) == 0) {
      o.status = "resource_limit";
    } else {
      o.status = "invalid";
      o.reason_code = "invalid_scenario";
      return o;
    }
    o.reason_code = o.status;
    return o;
  }
  o.status = "failed";
  o.reason_code = exit_code == 3 ? "internal_error" : "exit_" + std::to_string(exit_code);
  if (o.reason_message.empty()) o.reason_message = "exited with status " + std::to_string(exit_code);
  return o;
}

nlohmann::ordered_json ledger_record(const SweepSpec& spec, const SweepPoint& point, const PointOutcome& outcome,
                                     const std::string& scenario_sha256, double wall_s) {
  nlohmann::ordered_json r;
  r["point"] = point.index;
  r["axes"] = point.axes_json();
  r["status"] = outcome.status;
  r["reason"] = outcome.status == "ok" ? nlohmann::ordered_json(nullptr)
                                       : nlohmann::ordered_json{{"code", outcome.reason_code},
                                                                {"message", outcome.reason_message}};
  for (const auto& m : spec.metrics) r[m.column] = summary_value(outcome.results, m.path);
  r["scenario_sha256"] = scenario_sha256.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(scenario_sha256);
  r["ess_sim_version"] = outcome.results.contains("ess_sim_version") ? outcome.results["ess_sim_version"]
                                                                      : nlohmann::ordered_json(ESS_SIM_VERSION);
  // Milliseconds are all a wall time is good for; the only field that differs between runs.
  r["wall_s"] = static_cast<double>(static_cast<long long>(wall_s * 1000.0 + 0.5)) / 1000.0;
  return r;
}

std::string ledger_line(const nlohmann::ordered_json& record) {
  return record.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

LedgerContent read_ledger(const std::filesystem::path& path) {
  LedgerContent c;
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return c;
  std::string text;
  if (const auto problem = read_whole_file(path, text); problem != ReadProblem::none) {
    throw ConfigError(path.string(), "", "cannot read the ledger: " + describe(problem));
  }
  std::size_t pos = 0;
  std::size_t line_no = 0;
  while (pos < text.size()) {
    ++line_no;
    const auto nl = text.find('\n', pos);
    const bool last = nl == std::string::npos || nl + 1 == text.size();
    const std::string line = text.substr(pos, nl == std::string::npos ? std::string::npos : nl - pos);
    auto parsed = nlohmann::ordered_json::parse(line, nullptr, false);
    const bool good = !parsed.is_discarded() && parsed.is_object() && parsed.contains("point") &&
                      parsed["point"].is_number_unsigned() && parsed.contains("status") && parsed["status"].is_string();
    if (nl == std::string::npos || (!good && last)) {
      c.torn_tail = true;  // a write cut short by a kill
      break;
    }
    if (!good) {
      throw ConfigError(path.string(), "", "line " + std::to_string(line_no) +
                                               " is not a ledger record (a JSON object with \"point\" and \"status\")");
    }
    c.records.push_back(std::move(parsed));
    pos = nl + 1;
    c.valid_bytes = pos;
  }
  return c;
}

LedgerAppender::LedgerAppender(const std::filesystem::path& path) : path_(path) {
  fd_ = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0666);
  if (fd_ < 0) throw OutputError(path, "cannot open " + path.string() + ": " + std::strerror(errno));
}

LedgerAppender::~LedgerAppender() {
  if (fd_ >= 0) ::close(fd_);
}

void LedgerAppender::append(const std::string& line) {
  // One write() per record: with O_APPEND the line lands whole at the end of the file, so a kill
  // leaves at most one torn last line, which read_ledger ignores.
  const ssize_t n = ::write(fd_, line.data(), line.size());
  if (n < 0 || static_cast<std::size_t>(n) != line.size()) {
    throw OutputError(path_, "cannot append to " + path_.string() + ": " + (n < 0 ? std::strerror(errno) : "short write"));
  }
  if (::fsync(fd_) != 0) throw OutputError(path_, "cannot sync " + path_.string() + ": " + std::strerror(errno));
}

std::string sorted_ledger_text(std::vector<nlohmann::ordered_json> records) {
  sort_by_point(records);
  std::string text;
  for (const auto& r : records) text += ledger_line(r);
  return text;
}

std::string ledger_csv(const SweepSpec& spec, std::vector<nlohmann::ordered_json> records) {
  sort_by_point(records);
  std::string text = "point";
  for (const auto& a : spec.axes) text += "," + csv_field(a.path);
  text += ",status,reason_code,reason";
  for (const auto& m : spec.metrics) text += "," + m.column;
  text += ",scenario_sha256,ess_sim_version\n";
  for (const auto& r : records) {
    text += std::to_string(r.at("point").get<std::size_t>());
    const auto axes = r.value("axes", nlohmann::ordered_json::object());
    for (const auto& a : spec.axes) text += "," + csv_value(axes.contains(a.path) ? axes[a.path] : nlohmann::ordered_json());
    text += "," + csv_value(r.value("status", nlohmann::ordered_json()));
    const auto reason = r.value("reason", nlohmann::ordered_json());
    std::string code;
    std::string first_line;
    if (reason.is_object()) {
      code = reason.value("code", std::string());
      first_line = reason.value("message", std::string());
      first_line = first_line.substr(0, first_line.find('\n'));
    }
    text += "," + csv_field(code) + "," + csv_field(first_line);
    for (const auto& m : spec.metrics) text += "," + csv_value(r.value(m.column, nlohmann::ordered_json()));
    text += "," + csv_value(r.value("scenario_sha256", nlohmann::ordered_json()));
    text += "," + csv_value(r.value("ess_sim_version", nlohmann::ordered_json())) + "\n";
  }
  return text;
}

std::string sweep_spec_copy(const SweepSpec& spec, std::size_t shard_index, std::size_t shard_count) {
  nlohmann::ordered_json j;
  j["schema"] = kSweepDirSchema;
  j["spec_sha256"] = spec.sha256;
  j["shard"] = std::to_string(shard_index) + "/" + std::to_string(shard_count);
  j["spec"] = nlohmann::ordered_json::parse(spec.document.dump());
  return j.dump(2) + "\n";
}

}  // namespace ess
