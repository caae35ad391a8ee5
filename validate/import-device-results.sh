#!/usr/bin/env bash
# Brings one device session's results (kernels/run-all-on-device.sh) into the repository and
# measures the simulator against them. RESULTS_DIR is what came back from the device: the archive
# ess-device.tar.gz (or its parts ess-device.tar.gz.part-aa, -ab, ...) beside summary.json, which
# is unpacked first; a folder that already holds measurements.json (the files of
# run-on-device.sh / run-runner-on-device.sh run alone) is used as it is.
#
#   1. calibration/data/<gpu>/measurements.json      ess-bench's measurements, as measured
#   2. calibration/profiles/<base>-measured.json     the profile fitted to them (never to the traces)
#   3. validate/data/<gpu>/<name>.trace.json         each runner trace, next to <name>.scenario.json:
#                                                    its configuration on the calibrated profile
#   4. validate/data/<gpu>/report.txt                ess-sim validate on every trace
#
#   validate/import-device-results.sh RESULTS_DIR GPU BASE [ESS_SIM]
#   e.g. validate/import-device-results.sh /work/.device/out h200 h200-sxm build/release/ess-sim
# Run from the repository root. CTest then re-validates every committed trace (tests/CMakeLists.txt).
set -euo pipefail
[[ $# -ge 3 ]] || { sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
results=$1 gpu=$2 base=$3 ess_sim=${4:-build/release/ess-sim}
[[ -x "$ess_sim" ]] || { echo "error: $ess_sim is not an executable" >&2; exit 2; }
[[ -d "$results" ]] || { echo "error: no folder $results" >&2; exit 2; }

if [[ -f "$results/ess-device.tar.gz" ]] || compgen -G "$results/ess-device.tar.gz.part-*" > /dev/null; then
  unpacked=$(mktemp -d)
  trap 'rm -rf "$unpacked"' EXIT
  if [[ -f "$results/ess-device.tar.gz" ]]; then
    tar -C "$unpacked" -xzf "$results/ess-device.tar.gz"
  else
    cat "$results"/ess-device.tar.gz.part-* | tar -C "$unpacked" -xzf -
  fi
  [[ -d "$unpacked/ess-device" ]] || { echo "error: the archive in $results holds no ess-device/ folder" >&2; exit 2; }
  [[ -f "$results/summary.txt" ]] && cat "$results/summary.txt"
  results="$unpacked/ess-device"
fi
[[ -s "$results/measurements.json" ]] || { echo "error: no measurements.json in $results (see its summary.json: which stage failed?)" >&2; exit 2; }
if grep -q 'Failed: \|Not run: ' "$results/measurements.json"; then
  echo "warning: ess-bench did not complete every suite: $(grep -o 'Suites completed:[^"]*' "$results/measurements.json")" >&2
fi

mkdir -p "calibration/data/$gpu" "validate/data/$gpu"
cp "$results/measurements.json" "calibration/data/$gpu/measurements.json"
for f in nvidia-smi.txt bench-summary.txt tools.txt libs.txt summary.json; do
  [[ -f "$results/$f" ]] && cp "$results/$f" "calibration/data/$gpu/$f"
done
profile="calibration/profiles/$base-measured.json"
"$ess_sim" calibrate "calibration/data/$gpu/measurements.json" --base "$base" -o "$profile"

hardware="{\"profile\": \"$profile\", \"gpu\": {\"count\": 1}, \"pcie\": {\"gpus_per_switch\": 1}}"
report="validate/data/$gpu/report.txt"
: > "$report"
status=0
while read -r name sets; do
  case "$name" in ''|'#'*) continue ;; esac
  trace="$results/$name.trace.json"
  if [[ ! -s "$trace" ]]; then echo "missing: $trace" | tee -a "$report"; status=1; continue; fi
  cp "$trace" "validate/data/$gpu/$name.trace.json"
  # shellcheck disable=SC2086  # the overrides are words by design
  "$ess_sim" check validate/scenarios/runner-h200.json $sets --set "hardware=$hardware" \
    > "validate/data/$gpu/$name.scenario.json"
  echo "== $name" >> "$report"
  "$ess_sim" validate --scenario "validate/data/$gpu/$name.scenario.json" \
    --trace "validate/data/$gpu/$name.trace.json" >> "$report" || status=1
done < validate/configs.txt
cat "$report"
exit "$status"
