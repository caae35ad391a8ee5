#!/usr/bin/env bash
# Compares ess-sim's GEMM cost model (uncalibrated preset parameters) with the kernel times that
# microsoft/vidur measured for Llama-2-7B on A100 and H100 (calibration/data/public/vidur, fp16, TP1).
# Run from the repository root:
#
#   calibration/compare_vidur_gemm.sh [ESS_SIM_BINARY] [VIDUR_DATA_DIR]
#
# Prints one row per (GPU, GEMM, tokens): predicted and measured median time and the signed
# relative error (predicted - measured) / measured, then the median absolute error per GPU.
set -euo pipefail

ess_sim=${1:-build/release/ess-sim}
data=${2:-calibration/data/public/vidur}
[ -x "$ess_sim" ] || { echo "error: $ess_sim is not an executable (build first: cmake --preset release && cmake --build build/release)" >&2; exit 2; }

# Llama-2-7B: hidden 4096, MLP width 11008; Vidur's op names -> (n, k) of Y[m x n] = X[m x k] W.
gemms="attn_pre_proj:12288:4096 attn_post_proj:4096:4096 mlp_up_proj:22016:4096 mlp_down_proj:4096:11008"
tokens="1 8 32 128 512"

# Median time (ms) of op $2 at num_tokens $3, TP1, in CSV $1.
measured_ms() {
  awk -F, -v op="time_stats.$2.median" -v m="$3" '
    NR == 1 { for (i = 1; i <= NF; i++) { if ($i == op) c = i; if ($i == "num_tokens") t = i; if ($i == "num_tensor_parallel_workers") p = i } next }
    $t == m && $p == 1 { print $c; exit }' "$1"
}

printf "%-14s %-15s %6s %12s %12s %9s\n" gpu gemm tokens predicted_us measured_us error
for gpu in a100:a100-80gb-sxm h100:h100-sxm; do
  short=${gpu%%:*}; preset=${gpu#*:}
  csv="$data/compute_${short}_meta-llama_Llama-2-7b-hf_mlp.csv"
  [ -r "$csv" ] || { echo "error: cannot read $csv" >&2; exit 2; }
  errors=()
  for g in $gemms; do
    IFS=: read -r op n k <<<"$g"
    for m in $tokens; do
      ms=$(measured_ms "$csv" "$op" "$m")
      [ -n "$ms" ] || { echo "error: no $op row for num_tokens=$m in $csv" >&2; exit 2; }
      s=$("$ess_sim" cost gemm --hardware "$preset" --m "$m" --n "$n" --k "$k" --dtype fp16 --json |
          sed -E 's/.*"seconds":([^}]*)}.*/\1/')
      row=$(awk -v p="$s" -v ms="$ms" 'BEGIN { pu = p * 1e6; mu = ms * 1e3; printf "%12.2f %12.2f %+8.1f%%", pu, mu, (pu - mu) / mu * 100 }')
      printf "%-14s %-15s %6s %s\n" "$preset" "$op" "$m" "$row"
      errors+=("$(awk -v p="$s" -v ms="$ms" 'BEGIN { e = (p * 1e6 - ms * 1e3) / (ms * 1e3) * 100; print (e < 0 ? -e : e) }')")
    done
  done
  median=$(printf "%s\n" "${errors[@]}" | sort -g | awk '{ a[NR] = $1 } END { print (NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2) }')
  printf "%-14s median |error| over %d GEMMs: %.1f%%\n\n" "$preset" "${#errors[@]}" "$median"
done
