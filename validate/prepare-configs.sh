#!/usr/bin/env bash
# Prepares the GPU validation set: for each line of validate/configs.txt, the runner arguments,
# the access trace (the simulator's exact top-k selections) and the resolved scenario, under
# validate/data/prepared/, plus validate/data/prepared/configs.txt, the list the device script
# kernels/run-runner-on-device.sh runs, and validate/data/prepared/gemm-shapes.csv, the weight
# GEMMs the simulator issues for them (sim/graph/weight_gemms.h), which ess-bench measures first
# (--gemm-shapes; kernels/run-all-on-device.sh passes it when the file is there).
#
#   validate/prepare-configs.sh [ESS_SIM_BINARY]      (run from the repository root)
set -euo pipefail
ess_sim=${1:-build/release/ess-sim}
[ -x "$ess_sim" ] || { echo "error: $ess_sim is not an executable (build first: make build)" >&2; exit 2; }
out=validate/data/prepared
mkdir -p "$out"
list="$out/configs.txt.tmp"
: > "$list"
# `validate --prepare` adds each scenario's GEMMs to this file: start from none, so that no row of
# an earlier validation set stays.
rm -f "$out/gemm-shapes.csv"
while read -r name sets; do
  case "$name" in ''|'#'*) continue ;; esac
  # shellcheck disable=SC2086  # the overrides are words by design
  "$ess_sim" validate --scenario validate/scenarios/runner-h200.json $sets --prepare "$out" --name "$name" >> "$list"
done < validate/configs.txt
mv "$list" "$out/configs.txt"
echo "prepared $(wc -l < "$out/configs.txt") configurations in $out ($(du -sh "$out" | cut -f1)), $(grep -vc -e '^#' -e '^model,' "$out/gemm-shapes.csv") weight GEMMs in $out/gemm-shapes.csv"
