#!/usr/bin/env bash
# Leave one GPU out: how well kernel efficiencies fitted on some GPUs predict another GPU's kernels,
# under the transfer rule of `ess-sim calibrate --transfer` (calibration/README.md: fractions of
# the roofs carry over within an SM architecture, compute fractions scaled by the GPUs' sustained
# clocks). Predicts every row of FlashMLA's dense decode test on H100 and H20
# (data/public/deepseek/flashmla_h100_h20_dense.csv) with profiles that never saw that GPU's rows:
#
#   from-h800        transferred from h800-sxm-measured alone (DeepSeek's H800 figures)
#   from-h800+h100   H20 only: transferred from a profile fitted on the H100 rows, then h800
#   from-h800+h20    H100 only: the same with the H20 rows
#   own-fit          fitted on the target's own rows (the fit's residual, for scale)
#
# usage: calibration/leave_one_gpu_out.sh [ESS_SIM] [--rows]    (from the repository root)
#   --rows   print every row, not only the summary
# Prints a table per target GPU and one summary line per (target, source): median, max and signed
# median of (predicted - measured) / measured, over fixed-length rows (the fitted kind) and
# variable-length rows (s_k drawn per request; priced at the mean, as a simulation does).
set -euo pipefail
cd "$(dirname "$0")/.."
sim=${1:-build/release/ess-sim}
rows=0
[[ "${2:-}" == "--rows" || "${1:-}" == "--rows" ]] && rows=1
[[ "${1:-}" == "--rows" ]] && sim=build/release/ess-sim
[[ -x "$sim" ]] || { echo "leave_one_gpu_out: $sim is not an executable ess-sim (build it: make build)" >&2; exit 2; }
data=calibration/data/public/deepseek/flashmla_h100_h20_dense.csv
h800=calibration/profiles/h800-sxm-measured.json
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cal() { "$sim" calibrate "$@" --folds 2 >/dev/null; }
# Profiles that have not seen the target GPU's rows.
cal --base h100-sxm --transfer "$h800" -o "$work/h100-from-h800.json"
cal --base h20 --transfer "$h800" -o "$work/h20-from-h800.json"
cal "$data" --gpu H100 --base h100-sxm --transfer "$h800" -o "$work/h100-own.json"
cal "$data" --gpu H20 --base h20 --transfer "$h800" -o "$work/h20-own.json"
cal --base h20 --transfer "$work/h100-own.json" --transfer "$h800" -o "$work/h20-from-h800+h100.json"
cal --base h100-sxm --transfer "$work/h20-own.json" --transfer "$h800" -o "$work/h100-from-h800+h20.json"

predict() {  # profile b s_q s_k h_q -> seconds
  "$sim" cost attention --hardware "$1" --kind dense-mla --requests "$2" --queries-per-request "$3" --context "$4" \
    --heads "$5" --qk-dim 576 --v-dim 512 --entry-bytes 1152B --mla-kernel flashmla --json |
    sed -n 's/.*"seconds":\([0-9.e+-]*\).*/\1/p'
}

for target in h100 h20; do
  gpu=$(echo "$target" | tr a-z A-Z)
  if [[ $target == h100 ]]; then sources=(from-h800 from-h800+h20 own); else sources=(from-h800 from-h800+h100 own); fi
  echo "== $gpu: FlashMLA dense decode, measured vs predicted (error %) =="
  if [[ $rows == 1 ]]; then
    printf '%-6s %4s %4s %6s %4s %-6s %8s' gpu b s_q s_k h_q varlen ms
    printf ' %14s' "${sources[@]}"
    echo
  fi
  : >"$work/$target.err"
  grep -v '^#' "$data" | tail -n +2 | while IFS=, read -r g b sq sk hq varlen ms tflops gbps; do
    [[ "$g" == "$gpu" ]] || continue
    line=$(printf '%-6s %4s %4s %6s %4s %-6s %8s' "$g" "$b" "$sq" "$sk" "$hq" "$varlen" "$ms")
    for src in "${sources[@]}"; do
      profile="$work/$target-$src.json"
      [[ $src == own ]] && profile="$work/$target-own.json"
      p=$(predict "$profile" "$b" "$sq" "$sk" "$hq")
      e=$(awk -v p="$p" -v m="$ms" 'BEGIN { printf "%+.1f", (p * 1e3 - m) / m * 100 }')
      line+=$(printf ' %7.3f %+5.1f%%' "$(awk -v p="$p" 'BEGIN { print p * 1e3 }')" "$e")
      echo "$src $varlen $e" >>"$work/$target.err"
    done
    if [[ $rows == 1 ]]; then echo "$line"; fi
  done
  for src in "${sources[@]}"; do
    for kind in False True; do
      awk -v s="$src" -v k="$kind" '$1 == s && $2 == k { print $3 }' "$work/$target.err" >"$work/e"
      [[ -s "$work/e" ]] || continue
      # median of |e| and of e, max |e| (plain awk: mawk has no sort)
      abs=$(awk '{ print ($1 < 0 ? -$1 : $1) }' "$work/e" | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2, v[NR], NR }')
      bias=$(sort -g "$work/e" | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }')
      read -r med mx n <<<"$abs"
      printf '%-5s %-15s %-13s rows %2d  median |error| %5.1f%%  max %5.1f%%  bias %+5.1f%%\n' "$gpu" "$src" \
        "$([[ $kind == True ]] && echo "variable s_k" || echo "fixed s_k")" "$n" "$med" "$mx" "$bias"
    done
  done
  echo
done
