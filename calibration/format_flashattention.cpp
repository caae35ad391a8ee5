// FlashAttention-3's published forward rates (calibration/data/public/flashattention/): the prefill
// attention kernel class.
#include "calibration/measurement_formats.h"

#include <cstdint>
#include <set>
#include <string>

#include "calibration/format_helpers.h"

namespace ess::measurement {

namespace {

// Rows `gpu, head_dim, causal, batch, heads, seqlen, tflops`: one forward pass of `batch` sequences of
// `seqlen` tokens with `heads` heads of head_dim (q, k and v alike), BF16. The TFLOPS count 4 batch
// seqlen^2 heads head_dim FLOP, halved when causal (FlashAttention's benchmark convention), so the
// kernel time is that count over the rate. The model's shape: queries = batch seqlen, key_pairs =
// batch seqlen (seqlen + 1) / 2 causal or batch seqlen^2 full, keys = batch seqlen.
void read_flashattention(const CsvTable& t, MeasurementInput& in, MeasurementSet& out, const ReadOptions& o) {
  t.require_known({"gpu", "head_dim", "causal", "batch", "heads", "seqlen", "tflops"}, "FlashAttention forward table");
  const std::size_t c_gpu = t.column("gpu");
  const std::size_t c_dim = t.column("head_dim");
  const std::size_t c_causal = t.column("causal");
  const std::size_t c_batch = t.column("batch");
  const std::size_t c_heads = t.column("heads");
  const std::size_t c_seqlen = t.column("seqlen");
  const std::size_t c_tflops = t.column("tflops");
  std::set<std::string> gpus;
  for (const CsvRow& r : t.rows()) {
    const bool causal = choice(t, r, c_causal, {"False", "True"}) == "True";
    if (!keep_gpu(t.text(r, c_gpu), o, in)) continue;
    const std::int64_t dim = t.integer(r, c_dim, kHeads);
    const std::int64_t batch = t.integer(r, c_batch, kTokens);
    const std::int64_t heads = t.integer(r, c_heads, kHeads);
    const std::int64_t seqlen = t.integer(r, c_seqlen, kTokens);
    const double tflops = positive_number(t, r, c_tflops, kMaxTflops, "TFLOPS");
    const auto queries = checked_product(batch, seqlen);
    if (!queries) t.fail(r, c_seqlen, "batch x seqlen is too large");
    const double b = static_cast<double>(batch);
    const double s = static_cast<double>(seqlen);
    const double counted = 4.0 * b * s * s * static_cast<double>(heads) * static_cast<double>(dim) / (causal ? 2.0 : 1.0);
    const double seconds = checked_time(t, r, c_tflops, counted / (tflops * 1e12));
    gpus.insert(t.text(r, c_gpu));
    PrefillAttentionShape shape;
    shape.queries = *queries;
    shape.key_pairs = causal ? b * s * (s + 1.0) / 2.0 : b * s * s;
    shape.keys = *queries;
    shape.heads = heads;
    shape.kv_heads = heads;
    shape.qk_dim = dim;
    shape.v_dim = dim;
    shape.compute_dtype = DType::bf16;
    out.prefill_attention.push_back(PrefillAttentionPoint{shape, seconds});
    ++in.used["prefill-attention"];
  }
  one_gpu(gpus, in);
  in.date = "FlashAttention-3 paper (arXiv:2407.08608, July 2024), Figure 5";
  in.environment = "published TFLOPS figures, transcribed; BF16 forward, H100 80GB SXM5";
}

}  // namespace

extern const CsvFormat kFlashAttentionFormat{
    "flashattention", "a FlashAttention forward table",
    [](const CsvTable& t) { return t.has("seqlen") && t.has("causal") && t.has("tflops"); }, read_flashattention};

}  // namespace ess::measurement
