#include "sim/config/deployment_config.h"

#include <string>

#include "sim/config/json_text.h"
#include "sim/config/quantity.h"

namespace ess {

namespace {

constexpr double kDefaultReserveFraction = 0.1;
constexpr double kDefaultRuntimeOverhead = 2.0 * 1024 * 1024 * 1024;  // 2 GiB, an estimate

}  // namespace

std::string Parallelism::describe() const {
  return "attention DP" + std::to_string(attention_dp) + " x TP" + std::to_string(tensor_parallel) + ", EP" +
         std::to_string(expert_parallel) + (moe_tensor_parallel > 1 ? " x MoE TP" + std::to_string(moe_tensor_parallel) : "");
}

Parallelism read_parallelism(ObjectReader& r, const ModelConfig& model, const Hardware& hw) {
  Parallelism p;
  const int world = hw.total_gpus();
  const std::string world_text = std::to_string(world) + " GPUs (" + std::to_string(hw.nodes) + " node(s) x " +
                                 std::to_string(hw.gpu.count) + ")";
  p.tensor_parallel = static_cast<int>(r.integer_or("tensor_parallel", Range::closed(1, world), 1));
  if (world % p.tensor_parallel != 0) {
    r.fail("tensor_parallel", "tensor_parallel (" + std::to_string(p.tensor_parallel) + ") must divide the " + world_text);
  }
  p.attention_dp = static_cast<int>(r.integer_or("attention_dp", Range::closed(1, world), world / p.tensor_parallel));
  if (p.attention_dp * p.tensor_parallel != world) {
    r.fail("attention_dp", "attention_dp x tensor_parallel (" + std::to_string(p.attention_dp) + " x " +
                               std::to_string(p.tensor_parallel) + ") must equal the " + world_text);
  }
  if (model.attention.heads % p.tensor_parallel != 0) {
    r.fail("tensor_parallel", "tensor_parallel (" + std::to_string(p.tensor_parallel) + ") must divide the " +
                                  std::to_string(model.attention.heads) + " attention heads of " + model.name);
  }
  if (model.attention.kind == AttentionKind::gqa) {
    const auto kv = model.attention.gqa.kv_heads;
    if (kv % p.tensor_parallel != 0 && p.tensor_parallel % kv != 0) {
      r.fail("tensor_parallel", "tensor_parallel (" + std::to_string(p.tensor_parallel) + ") and the " +
                                    std::to_string(kv) + " kv heads of " + model.name + " must divide one another");
    }
  }
  if (model.moe) {
    // One MoE group spans the replica under tensor-parallel attention, and at most all GPUs under
    // DP attention.
    const int span = p.tensor_parallel > 1 ? p.tensor_parallel : world;
    const std::string span_text = p.tensor_parallel > 1 ? "the replica's " + std::to_string(span) + " GPUs (tensor_parallel)"
                                                        : "the " + world_text;
    const bool stated = r.has("expert_parallel");
    p.expert_parallel = static_cast<int>(r.integer_or("expert_parallel", Range::closed(1, world), span));
    const std::string ep = "expert_parallel (" + std::to_string(p.expert_parallel) +
                           (stated ? ")" : ", the default: " + span_text + ")");
    const bool moe_tp_stated = r.has("moe_tensor_parallel");
    if (moe_tp_stated) {
      p.moe_tensor_parallel = static_cast<int>(r.integer("moe_tensor_parallel", Range::closed(1, span)));
      if (!stated && p.moe_tensor_parallel > 1) {
        r.fail("expert_parallel", "moe_tensor_parallel is " + std::to_string(p.moe_tensor_parallel) +
                                      ": state expert_parallel too (the experts' EP ranks; expert_parallel x "
                                      "moe_tensor_parallel GPUs hold one copy of them, at most " + span_text + ")");
      }
    }
    if (world % p.expert_parallel != 0) r.fail("expert_parallel", ep + " must divide the " + world_text);
    if (p.tensor_parallel > 1) {
      // Every GPU of a replica holds all of its tokens after the attention all-reduce: the experts
      // are split over the replica's GPUs by EP and, within an EP rank, by TP.
      if (span % p.expert_parallel != 0) {
        r.fail("expert_parallel", ep + " with tensor_parallel " + std::to_string(span) +
                                      ": with tensor-parallel attention the experts live on the replica's GPUs, so "
                                      "expert_parallel must divide tensor_parallel (the rest of the replica splits "
                                      "each expert: moe_tensor_parallel = tensor_parallel / expert_parallel); for "
                                      "expert parallelism across replicas use tensor_parallel 1 (DP attention)");
      }
      if (!moe_tp_stated) {
        p.moe_tensor_parallel = span / p.expert_parallel;
        r.record("moe_tensor_parallel", p.moe_tensor_parallel, "default: tensor_parallel / expert_parallel");
      } else if (p.expert_parallel * p.moe_tensor_parallel != span) {
        r.fail("moe_tensor_parallel", "expert_parallel x moe_tensor_parallel (" + std::to_string(p.expert_parallel) + " x " +
                                          std::to_string(p.moe_tensor_parallel) + ") must equal tensor_parallel (" +
                                          std::to_string(span) + "): under tensor-parallel attention the MoE group is the replica");
      }
    } else {
      if (!moe_tp_stated) r.record("moe_tensor_parallel", 1, "default: experts not split (DP attention)");
      if (world % p.moe_group() != 0) {
        r.fail(moe_tp_stated ? "moe_tensor_parallel" : "expert_parallel",
               "expert_parallel x moe_tensor_parallel (" + std::to_string(p.expert_parallel) + " x " +
                   std::to_string(p.moe_tensor_parallel) + ") must divide the " + world_text);
      }
    }
    const std::int64_t routed = model.moe->routed_experts;
    p.redundant_experts = static_cast<int>(r.integer_or("redundant_experts", Range::closed(0, static_cast<double>(routed)), 0));
    if (p.redundant_experts > 0 && p.expert_parallel == 1) {
      r.fail("redundant_experts", "redundant experts balance expert parallelism; expert_parallel is 1 (every GPU of a MoE "
                                  "group holds every expert, or its share of each), so redundant_experts must be 0");
    }
    const std::int64_t physical = routed + p.redundant_experts;
    if (physical % p.expert_parallel != 0) {
      if (p.redundant_experts == 0) {
        r.fail("expert_parallel", ep + " must divide the " + std::to_string(routed) + " routed experts of " + model.name +
                                      "; set parallelism.expert_parallel, or parallelism.redundant_experts so that "
                                      "it divides routed + redundant experts");
      }
      r.fail("redundant_experts", ep + " must divide the " + std::to_string(physical) + " physical experts (" +
                                      std::to_string(routed) + " routed + " + std::to_string(p.redundant_experts) +
                                      " redundant) of " + model.name);
    }
  } else {
    if (r.has("redundant_experts")) {
      std::string source;
      const nlohmann::json* v = r.take("redundant_experts", source);
      r.fail("redundant_experts", model.name + " has no experts (dense MLP), so it cannot have redundant experts, got " +
                                      describe_json(*v));
    }
    if (r.has("expert_parallel")) {
      std::string source;
      const nlohmann::json* v = r.take("expert_parallel", source);
      if (!(v->is_number_integer() && v->get<std::int64_t>() == 1)) {
        r.fail("expert_parallel", model.name + " has no experts (dense MLP), so expert_parallel must be 1, got " +
                                      describe_json(*v));
      }
    }
    p.expert_parallel = static_cast<int>(r.integer_or("expert_parallel", Range::closed(1, 1), 1));
    if (r.has("moe_tensor_parallel")) {
      std::string source;
      const nlohmann::json* v = r.take("moe_tensor_parallel", source);
      if (!(v->is_number_integer() && v->get<std::int64_t>() == 1)) {
        r.fail("moe_tensor_parallel", model.name + " has no experts (dense MLP: tensor_parallel splits it), so "
                                          "moe_tensor_parallel must be 1, got " + describe_json(*v));
      }
    }
  }
  r.finish();
  return p;
}

ExecutionConfig read_execution(ObjectReader& r, const Workload& w, const Parallelism& p) {
  ExecutionConfig e;
  e.micro_batches = static_cast<int>(r.integer_or("micro_batches", Range::closed(1, 2), 1));
  if (e.micro_batches == 2 && w.batch_per_gpu && *w.batch_per_gpu < 2) {
    r.fail("micro_batches", "two micro-batches need at least 2 requests per GPU, but workload.batch_per_gpu is " +
                                std::to_string(*w.batch_per_gpu));
  }
  if (e.micro_batches == 2 && p.expert_parallel == 1 && p.tensor_parallel == 1 && p.moe_tensor_parallel == 1) {
    r.fail("micro_batches", "two-batch overlap hides communication behind compute; this layout has none "
                            "(expert_parallel, tensor_parallel and moe_tensor_parallel are 1): use micro_batches 1");
  }
  if (r.has("step_overhead")) {
    e.step_overhead = r.seconds("step_overhead", Range::closed(0.0, 1.0));
  } else {
    r.record("step_overhead", "0s", "default: no host time on the critical path (CUDA graphs, overlapped scheduling)");
  }
  r.finish();
  return e;
}

MemoryConfig read_memory(ObjectReader& r) {
  MemoryConfig m;
  // vLLM's default gpu_memory_utilization is 0.9: a tenth of HBM stays unallocated.
  m.reserve_fraction = r.number_or("reserve", Range::closed(0.0, 0.9), kDefaultReserveFraction);
  if (r.has("runtime_overhead")) {
    m.runtime_overhead = r.bytes("runtime_overhead", Range::closed(0.0, 1e15));
  } else {
    m.runtime_overhead = Bytes(kDefaultRuntimeOverhead);
    r.record("runtime_overhead", format_quantity(kDefaultRuntimeOverhead, Dimension::bytes),
             "default: estimate of CUDA context, library workspaces and communication buffers");
  }
  r.finish();
  return m;
}

}  // namespace ess
