#!/usr/bin/env bash
# The policy comparison of the README ("Prefetch and eviction policies compared"): the ESS scenario
# at one context (32k or 128k) under every prefetch policy and predictor, two other eviction
# policies and serial overlap, on the same seeds (ess-sim compare: common random numbers).
#   scenarios/policies/compare-prefetch.sh ESS_SIM {32k|128k} OUT_DIR [compare options, e.g. --seeds 3 --jobs 2]
# Each variant is written by `ess-sim check` (a resolved scenario is itself a scenario) into
# OUT_DIR/variants/; compare writes OUT_DIR/compare.json and compare.txt.
set -euo pipefail
if [ "$#" -lt 3 ]; then
  echo "usage: $0 ESS_SIM {32k|128k} OUT_DIR [compare options]" >&2
  exit 2
fi
sim=$1; context=$2; out=$3; shift 3
here="$(cd "$(dirname "$0")" && pwd)"
base="$here/../dsv32-ess-$context.json"
[ -f "$base" ] || { echo "$0: no scenario $base (context must be 32k or 128k)" >&2; exit 2; }
mkdir -p "$out/variants"
model="$here/heat-model-synthetic.json"
variant() {  # NAME --set ...
  local name=$1; shift
  "$sim" check "$base" "$@" > "$out/variants/$name.json"
  files+=("$out/variants/$name.json")
}
files=()
prefetch() {  # NAME POLICY PREDICTOR [extra --set]
  local name=$1 policy=$2 predictor=$3; shift 3
  variant "$name" --set cache.prefetch.policy="$policy" --set cache.prefetch.predictor="$predictor" \
    --set cache.prefetch.buffer_entries=512 "$@"
}
variant on-demand
prefetch layer-ahead-previous-layer layer-ahead previous-layer
prefetch layer-ahead-hot-window layer-ahead hot-window
prefetch layer-ahead-learned layer-ahead learned --set cache.prefetch.model="$model"
prefetch layer-ahead-oracle layer-ahead oracle
prefetch layer-ahead-adversarial layer-ahead adversarial
prefetch tiered-previous-layer tiered previous-layer
prefetch tiered-hot-window tiered hot-window
prefetch tiered-learned tiered learned --set cache.prefetch.model="$model"
prefetch tiered-oracle tiered oracle
variant eviction-fifo --set cache.eviction=fifo
variant eviction-heat --set cache.eviction=heat
variant overlap-serial --set cache.overlap=serial
"$sim" compare "${files[@]}" -o "$out/compare" "$@"
