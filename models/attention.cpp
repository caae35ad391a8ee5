#include "models/attention.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>

#include "models/check.h"
#include "models/roofline.h"
#include "sim/base/error.h"

namespace ess {

namespace {

double d(std::int64_t v) { return static_cast<double>(v); }

void validate_mla(const MlaShape& s, std::string_view model) {
  check::at_least(model, "row_tile", s.row_tile, 1);
  if (s.compute_dtype != DType::bf16 && s.compute_dtype != DType::fp8) {
    throw InternalError(std::string(model) + ": compute_dtype must be bf16 or fp8, got " +
                        std::string(to_string(s.compute_dtype)));
  }
  check::at_least(model, "requests", s.requests, 1);
  check::at_least(model, "queries_per_request", s.queries_per_request, 1);
  check::at_least(model, "heads", s.heads, 1);
  check::at_least(model, "qk_dim", s.qk_dim, 1);
  check::at_least(model, "v_dim", s.v_dim, 1);
  check::positive(model, "entry_bytes", s.entry_bytes.value(), "B");
}

// bf16 query read and bf16 output written by MLA: q heads qk_dim 2 + q heads v_dim 2.
double mla_query_output_bytes(const MlaShape& s) {
  const double q = d(s.requests) * d(s.queries_per_request);
  const double b = bytes_per_element(DType::bf16);
  return q * d(s.heads) * d(s.qk_dim) * b + q * d(s.heads) * d(s.v_dim) * b;
}

}  // namespace

KernelCost indexer_scoring(const IndexerShape& s, const Hardware& hw) {
  constexpr std::string_view kModel = "indexer_scoring";
  check::at_least(kModel, "requests", s.requests, 1);
  check::at_least(kModel, "queries_per_request", s.queries_per_request, 1);
  check::at_least(kModel, "heads", s.heads, 1);
  check::at_least(kModel, "head_dim", s.head_dim, 1);
  check::at_least(kModel, "context", s.context, 1);
  check::positive(kModel, "key_bytes_per_token", s.key_bytes_per_token.value(), "B");
  validate_roofline_params(hw.kernels.indexer, "hardware.kernels.indexer");

  const double q = d(s.requests) * d(s.queries_per_request);
  const Flops flops(2.0 * q * d(s.heads) * d(s.head_dim) * d(s.context));
  const Bytes bytes(d(s.requests) * d(s.context) * s.key_bytes_per_token.value() +
                    q * d(s.heads) * d(s.head_dim) * kIndexerQueryBytes +
                    q * d(s.context) * kIndexerLogitBytes);
  const FlopsPerSecond peak = hw.gpu.peak_compute.at(DType::fp8, hw.gpu.kind);
  return with_params(roofline(flops, peak, bytes, hw.gpu.hbm_bandwidth, hw.kernels.indexer), ParamSet::indexer);
}

KernelCost topk(const TopkShape& s, const Hardware& hw) {
  constexpr std::string_view kModel = "topk";
  check::at_least(kModel, "rows", s.rows, 1);
  check::at_least(kModel, "candidates", s.candidates, 1);
  check::at_least(kModel, "k", s.k, 1);
  const double passes = hw.kernels.topk_passes;
  if (!(passes >= 1.0)) {
    std::ostringstream msg;
    msg << "hardware.kernels.topk_passes must be >= 1 (got " << passes << ")";
    throw InputError(msg.str());
  }
  validate_roofline_params(hw.kernels.memory_bound, "hardware.kernels.memory_bound");

  const double selected = d(std::min(s.k, s.candidates));
  const Bytes bytes(passes * d(s.rows) * d(s.candidates) * kIndexerLogitBytes +
                    d(s.rows) * selected * kTopkIndexBytes);
  return with_params(memory_bound_kernel(bytes, hw.gpu.hbm_bandwidth, hw.kernels.memory_bound), ParamSet::memory_bound);
}

std::int64_t padded_rows(std::int64_t rows, std::int64_t row_tile) {
  if (rows < 1 || row_tile < 1) throw InternalError("padded_rows: rows and row_tile must be >= 1");
  return (rows + row_tile - 1) / row_tile * row_tile;
}

namespace {
// MLA decode: `rows` query rows computed (padding included), each over `entries` latent entries;
// `cache_bytes` is what the kernel reads of the latent cache (sparse: per query token; dense: per
// request, shared by its query tokens).
KernelCost mla_cost(const MlaShape& s, double rows, double entries, double cache_bytes, const RooflineParams& params,
                    std::string_view where, const Hardware& hw) {
  validate_roofline_params(params, where);
  const Flops flops(2.0 * rows * entries * (d(s.qk_dim) + d(s.v_dim)));
  const Bytes bytes(cache_bytes + mla_query_output_bytes(s));
  const FlopsPerSecond peak = hw.gpu.peak_compute.at(s.compute_dtype, hw.gpu.kind);
  return with_params(roofline(flops, peak, bytes, hw.gpu.hbm_bandwidth, params), param_set_of_field(where));
}
}  // namespace

KernelCost sparse_mla_attention(const MlaShape& s, std::int64_t selected_entries,
                                const Hardware& hw) {
  constexpr std::string_view kModel = "sparse_mla_attention";
  validate_mla(s, kModel);
  check::at_least(kModel, "selected_entries", selected_entries, 1);
  const double q = d(s.requests) * d(s.queries_per_request);
  const double rows = q * d(padded_rows(s.heads, s.row_tile));
  return mla_cost(s, rows, d(selected_entries), q * d(selected_entries) * s.entry_bytes.value(),
                  hw.kernels.sparse_attention, "hardware.kernels.sparse_attention", hw);
}

KernelCost dense_mla_attention(const MlaShape& s, std::int64_t context, const Hardware& hw) {
  constexpr std::string_view kModel = "dense_mla_attention";
  validate_mla(s, kModel);
  check::at_least(kModel, "context", context, 1);
  const double rows = d(s.requests) * d(padded_rows(s.queries_per_request * s.heads, s.row_tile));
  return mla_cost(s, rows, d(context), d(s.requests) * d(context) * s.entry_bytes.value(), hw.kernels.attention,
                  "hardware.kernels.attention", hw);
}

KernelCost gqa_attention(const GqaShape& s, const Hardware& hw) {
  constexpr std::string_view kModel = "gqa_attention";
  check::at_least(kModel, "requests", s.requests, 1);
  check::at_least(kModel, "queries_per_request", s.queries_per_request, 1);
  check::at_least(kModel, "heads", s.heads, 1);
  check::at_least(kModel, "kv_heads", s.kv_heads, 1);
  check::at_least(kModel, "head_dim", s.head_dim, 1);
  check::at_least(kModel, "context", s.context, 1);
  if (s.heads % s.kv_heads != 0) {
    throw InputError("gqa_attention: heads (" + std::to_string(s.heads) +
                     ") must be a multiple of kv_heads (" + std::to_string(s.kv_heads) +
                     ")");
  }
  validate_roofline_params(hw.kernels.attention, "hardware.kernels.attention");

  const double q = d(s.requests) * d(s.queries_per_request);
  const Flops flops(4.0 * q * d(s.heads) * d(s.head_dim) * d(s.context));
  const Bytes bytes(d(s.requests) * 2.0 * d(s.kv_heads) * d(s.head_dim) * d(s.context) *
                        bytes_per_element(s.kv_dtype) +
                    2.0 * q * d(s.heads) * d(s.head_dim) * bytes_per_element(s.compute_dtype));
  const FlopsPerSecond peak = hw.gpu.peak_compute.at(s.compute_dtype, hw.gpu.kind);
  return with_params(roofline(flops, peak, bytes, hw.gpu.hbm_bandwidth, hw.kernels.attention), ParamSet::attention);
}

KernelCost prefill_attention(const PrefillAttentionShape& s, const Hardware& hw) {
  constexpr std::string_view kModel = "prefill_attention";
  check::at_least(kModel, "queries", s.queries, 1);
  check::at_least(kModel, "keys", s.keys, 1);
  check::at_least(kModel, "heads", s.heads, 1);
  check::at_least(kModel, "kv_heads", s.kv_heads, 1);
  check::at_least(kModel, "qk_dim", s.qk_dim, 1);
  check::at_least(kModel, "v_dim", s.v_dim, 1);
  if (!(s.key_pairs >= d(s.queries))) {
    throw InputError("prefill_attention: key_pairs (" + std::to_string(s.key_pairs) +
                     ") must be at least queries (" + std::to_string(s.queries) + "): each query sees itself");
  }
  if (s.heads % s.kv_heads != 0) {
    throw InputError("prefill_attention: heads (" + std::to_string(s.heads) + ") must be a multiple of kv_heads (" +
                     std::to_string(s.kv_heads) + ")");
  }
  validate_roofline_params(hw.kernels.prefill_attention, "hardware.kernels.prefill_attention");
  const double row_keys = hw.kernels.prefill_attention_row_keys;
  if (!(row_keys >= 0.0) || !std::isfinite(row_keys)) {
    throw InputError("hardware.kernels.prefill_attention.row_keys must be >= 0 (got " + std::to_string(row_keys) + ")");
  }
  const double width = d(s.qk_dim) + d(s.v_dim);
  const double b = bytes_per_element(s.compute_dtype);
  const Flops flops(2.0 * d(s.heads) * (s.key_pairs + d(s.queries) * row_keys) * width);
  const Bytes bytes(d(s.queries) * d(s.heads) * width * b + d(s.keys) * d(s.kv_heads) * width * b);
  const FlopsPerSecond peak = hw.gpu.peak_compute.at(s.compute_dtype, hw.gpu.kind);
  return with_params(roofline(flops, peak, bytes, hw.gpu.hbm_bandwidth, hw.kernels.prefill_attention),
                     ParamSet::prefill_attention);
}

}  // namespace ess
