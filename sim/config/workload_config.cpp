#include "sim/config/workload_config.h"

#include <string>
#include <vector>

#include "sim/config/did_you_mean.h"
#include "sim/config/json_text.h"
#include "sim/config/physical_ranges.h"

namespace ess {

namespace {

// The workload fields of both phases: expert load and MTP.
void read_workload_common(ObjectReader& r, const ModelConfig& model, Workload& w) {
  w.expert_skew = r.number_or("expert_skew", Range::closed(0.0, 4.0), kDefaultExpertSkew);
  w.expert_drift = r.number_or("expert_drift", Range::closed(0.0, 4.0), kDefaultExpertDrift);
  {
    auto m = r.object_or_empty("mtp");
    const auto max_depth = model.mtp_layers + 1;
    w.mtp.depth = static_cast<int>(m.integer_or("depth", Range::closed(1, 64), 1));
    if (w.mtp.depth > max_depth) {
      m.fail("depth", "mtp.depth " + std::to_string(w.mtp.depth) + " needs " + std::to_string(w.mtp.depth - 1) +
                          " MTP layer(s), but " + model.name + " has " + std::to_string(model.mtp_layers) +
                          ", so the depth can be at most " + std::to_string(max_depth));
    }
    // Without speculation every step yields one token; with it the acceptance must be stated.
    w.mtp.acceptance = w.mtp.depth == 1 ? m.number_or("acceptance", Range::closed(1.0, 1.0), 1.0)
                                        : m.number("acceptance", Range::closed(1.0, w.mtp.depth));
    m.finish();
  }
  r.finish();
}

}  // namespace

Workload read_workload(ObjectReader& r, const ModelConfig& model, bool prefill) {
  Workload w;
  if (prefill) {
    for (const char* key : {"batch_per_gpu", "context_length", "decode_steps"}) {
      if (r.has(key)) {
        r.fail(key, std::string("a prefill scenario does not use workload.") + key +
                        " (prefill.tokens_per_gpu, prefill.prompt_length and prefill.steps set its steps); remove it");
      }
    }
    read_workload_common(r, model, w);
    return w;
  }
  std::string source;
  const nlohmann::json* batch = r.take("batch_per_gpu", source);
  const std::string expected = "expected an integer >= 1 or \"max\"";
  if (batch == nullptr || batch->is_null()) r.fail("batch_per_gpu", r.missing("batch_per_gpu") + ": " + expected);
  if (batch->is_string() && batch->get<std::string>() == "max") {
    r.record("batch_per_gpu", "max", source);
  } else if (batch->is_number_integer() && batch->get<std::int64_t>() >= 1) {
    if (batch->get<std::int64_t>() > kMaxBatchPerGpu) {
      r.fail("batch_per_gpu", "must be at most " + std::to_string(kMaxBatchPerGpu) + ", got " + batch->dump());
    }
    w.batch_per_gpu = batch->get<std::int64_t>();
    r.record("batch_per_gpu", *w.batch_per_gpu, source);
  } else {
    const std::vector<std::string> max = {"max"};
    r.fail("batch_per_gpu", expected + ", got " + describe_json(*batch) +
                                (batch->is_string() ? did_you_mean(batch->get<std::string>(), max) : ""));
  }
  w.context_length = r.integer("context_length", Range::closed(1, kMaxContextLength));
  w.decode_steps = r.integer_or("decode_steps", Range::closed(1, 1e6), 16);
  if (r.has("prefill_chunk")) {
    auto c = r.object("prefill_chunk");
    PrefillChunk chunk;
    chunk.tokens = c.integer("tokens", Range::closed(1, static_cast<double>(kMaxTokensPerStep)));
    chunk.cached = c.integer_or("cached", Range::closed(0, kMaxContextLength), 0);
    c.finish();
    w.prefill_chunk = chunk;
  }
  read_workload_common(r, model, w);
  return w;
}

}  // namespace ess
