// `ess-sim cost <op> --hardware H ...`: price one operation with the cost models.
#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "models/collective.h"
#include "models/copy.h"
#include "models/gemm.h"
#include "models/norm.h"
#include "sim/cli/commands.h"
#include "sim/config/config_error.h"
#include "sim/config/quantity.h"
#include "sim/config/scenario.h"

namespace ess {

namespace {

struct CostOptions {
  std::string hardware;
  bool json = false;
  std::int64_t m = 0, n = 0, k = 0;
  std::string dtype = "bf16";
  std::string kind = "rms";
  std::int64_t tokens = 0, hidden = 0;
  std::string direction;
  std::string bytes;
  std::int64_t chunks = 1;
  int gpus = 0;
};

// "1048576", "1MiB" or "64MB" -> bytes.
Bytes parse_bytes_argument(const std::string& text) {
  if (!text.empty() && text.find_first_not_of("0123456789") == std::string::npos) {
    return Bytes(std::stod(text));
  }
  const auto parsed = parse_quantity(text, Dimension::bytes);
  if (!parsed.value) throw ConfigError("--bytes " + text, "", parsed.error + " (or a plain number of bytes)");
  if (*parsed.value < 0) throw ConfigError("--bytes " + text, "", "must be >= 0");
  return Bytes(*parsed.value);
}

// Seconds with 4 significant digits in the largest unit that keeps the number >= 1.
std::string human_time(Seconds t) {
  const double s = t.value();
  const char* unit = "s";
  double v = s;
  if (s < 1e-6) {
    unit = "ns";
    v = s * 1e9;
  } else if (s < 1e-3) {
    unit = "us";
    v = s * 1e6;
  } else if (s < 1.0) {
    unit = "ms";
    v = s * 1e3;
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.4g %s", v, unit);
  return buf;
}

std::string human_count(double v, const char* unit) {
  char buf[64];
  const char* prefix = "";
  double x = v;
  if (v >= 1e12) {
    prefix = "T";
    x = v / 1e12;
  } else if (v >= 1e9) {
    prefix = "G";
    x = v / 1e9;
  } else if (v >= 1e6) {
    prefix = "M";
    x = v / 1e6;
  } else if (v >= 1e3) {
    prefix = "k";
    x = v / 1e3;
  }
  std::snprintf(buf, sizeof buf, "%.4g %s%s", x, prefix, unit);
  return buf;
}

void print_seconds_json(std::ostream& out, Seconds t) { out << nlohmann::json{{"seconds", t.value()}}.dump() << "\n"; }

void print_kernel(std::ostream& out, const std::string& what, const std::string& hardware, const KernelCost& c) {
  out << what << " on " << hardware << "\n";
  if (c.measured) {
    out << "  time      " << human_time(c.time) << "  (measured on this GPU: the profile's GEMM table, interpolated in m)\n";
    out << "  roofline  " << human_time(std::max(c.compute, c.memory) + c.overhead) << "  (" << to_string(c.bound)
        << "-bound; used for shapes the table does not cover)\n";
  } else {
    out << "  time      " << human_time(c.time) << "  (" << to_string(c.bound) << "-bound)\n";
  }
  out << "  compute   " << human_time(c.compute) << "  for " << human_count(c.flops.value(), "FLOP") << "\n";
  out << "  memory    " << human_time(c.memory) << "  for " << human_count(c.bytes.value(), "B") << " of HBM traffic\n";
  out << "  overhead  " << human_time(c.overhead) << "\n";
}

void print_transfer(std::ostream& out, const std::string& what, const std::string& hardware, Seconds t, Bytes bytes) {
  out << what << " on " << hardware << "\n";
  out << "  time      " << human_time(t) << "\n";
  if (t.value() > 0) out << "  effective " << human_count(bytes.value() / t.value(), "B/s") << "\n";
}

DType dtype_of(const std::string& name) { return *parse_dtype(name); }

void add_common(CLI::App* cmd, const std::shared_ptr<CostOptions>& o) {
  cmd->add_option("--hardware", o->hardware,
                  "Hardware preset (see `ess-sim presets`) or hardware profile file (e.g. calibration/profiles/X.json)")
      ->required();
  cmd->add_flag("--json", o->json, "Print only {\"seconds\": ...}");
}

CLI::Option* add_count(CLI::App* cmd, const std::string& name, std::int64_t& target, const std::string& help) {
  return cmd->add_option(name, target, help)->required()->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 40));
}

}  // namespace

void add_cost_command(CLI::App& app, CommandAction& action) {
  auto o = std::make_shared<CostOptions>();
  auto* cost = app.add_subcommand("cost", "Price one operation with the cost models and print seconds");
  cost->require_subcommand(1);

  auto* gemm_cmd = cost->add_subcommand("gemm", "Dense GEMM: [m x k] x [k x n]");
  add_common(gemm_cmd, o);
  add_count(gemm_cmd, "--m", o->m, "Rows of the activation (tokens)");
  add_count(gemm_cmd, "--n", o->n, "Output features");
  add_count(gemm_cmd, "--k", o->k, "Input features");
  gemm_cmd->add_option("--dtype", o->dtype, "bf16, fp16 or fp8")->check(CLI::IsMember({"bf16", "fp16", "fp8"}));
  gemm_cmd->callback([o, &action] {
    action = [o](std::ostream& out) {
      const Hardware hw = load_hardware_preset(o->hardware);
      const GemmShape shape{o->m, o->n, o->k, dtype_of(o->dtype)};
      const KernelCost c = gemm(shape, hw);
      if (o->json) {
        print_seconds_json(out, c.time);
      } else {
        print_kernel(out,
                     "gemm m=" + std::to_string(o->m) + " n=" + std::to_string(o->n) + " k=" + std::to_string(o->k) +
                         " " + o->dtype,
                     hw.name, c);
      }
      return 0;
    };
  });

  auto* norm_cmd = cost->add_subcommand("norm", "RMSNorm or LayerNorm over tokens x hidden");
  add_common(norm_cmd, o);
  norm_cmd->add_option("--kind", o->kind, "rms or layer")->required()->check(CLI::IsMember({"rms", "layer"}));
  add_count(norm_cmd, "--tokens", o->tokens, "Tokens (rows)");
  add_count(norm_cmd, "--hidden", o->hidden, "Hidden size (columns)");
  norm_cmd->add_option("--dtype", o->dtype, "bf16 or fp16")->check(CLI::IsMember({"bf16", "fp16"}));
  norm_cmd->callback([o, &action] {
    action = [o](std::ostream& out) {
      const Hardware hw = load_hardware_preset(o->hardware);
      const NormShape shape{o->tokens, o->hidden, dtype_of(o->dtype), o->kind == "rms" ? NormKind::rms : NormKind::layer};
      const KernelCost c = norm(shape, hw);
      if (o->json) {
        print_seconds_json(out, c.time);
      } else {
        print_kernel(out,
                     o->kind + "norm tokens=" + std::to_string(o->tokens) + " hidden=" + std::to_string(o->hidden) +
                         " " + o->dtype,
                     hw.name, c);
      }
      return 0;
    };
  });

  auto* copy_cmd = cost->add_subcommand("copy", "Host<->device copy over PCIe, split into equal chunks (one "
                                                "cudaMemcpyAsync each)");
  add_common(copy_cmd, o);
  copy_cmd->add_option("--direction", o->direction, "h2d or d2h")->required()->check(CLI::IsMember({"h2d", "d2h"}));
  copy_cmd->add_option("--bytes", o->bytes, "Total bytes: a number or a size such as 64MiB")->required();
  copy_cmd->add_option("--chunks", o->chunks, "Equal chunks, one copy call each (default 1)")
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 40));
  copy_cmd->callback([o, &action] {
    action = [o](std::ostream& out) {
      const Hardware hw = load_hardware_preset(o->hardware);
      const Bytes bytes = parse_bytes_argument(o->bytes);
      const CopyDirection dir = o->direction == "h2d" ? CopyDirection::h2d : CopyDirection::d2h;
      const Seconds t = copy_time(dir, bytes, o->chunks, hw.pcie);
      if (o->json) {
        print_seconds_json(out, t);
      } else {
        print_transfer(out, o->direction + " copy of " + human_count(bytes.value(), "B") + " in " +
                                std::to_string(o->chunks) + " chunk(s)",
                       hw.name, t, bytes);
      }
      return 0;
    };
  });

  for (const char* name : {"allreduce", "alltoall"}) {
    const std::string op = name;
    auto* cmd = cost->add_subcommand(op, op == "allreduce" ? "All-reduce of a per-GPU buffer (alpha-beta)"
                                                           : "All-to-all of a per-GPU buffer (alpha-beta)");
    add_common(cmd, o);
    cmd->add_option("--gpus", o->gpus, "GPUs taking part")->required()->check(CLI::Range(1, 1 << 20));
    cmd->add_option("--bytes", o->bytes, "Per-GPU buffer: a number or a size such as 64MiB")->required();
    cmd->callback([o, op, &action] {
      action = [o, op](std::ostream& out) {
        const Hardware hw = load_hardware_preset(o->hardware);
        const Bytes bytes = parse_bytes_argument(o->bytes);
        const Seconds t = op == "allreduce" ? allreduce_time(o->gpus, bytes, hw) : alltoall_time(o->gpus, bytes, hw);
        if (o->json) {
          print_seconds_json(out, t);
        } else {
          print_transfer(out, op + " of " + human_count(bytes.value(), "B") + " per GPU over " + std::to_string(o->gpus) +
                                  " GPUs",
                         hw.name, t, bytes);
        }
        return 0;
      };
    });
  }
}

}  // namespace ess
