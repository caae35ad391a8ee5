#!/usr/bin/env bash
# The one prepared script for a lent GPU (issues 5 and 6): microbenchmarks for calibration, then
# the ground-truth runner on the validation set, everything under $OUT (default ./out/device).
#
#   1. kernels/run-on-device.sh              ess-bench -> $OUT/measurements.json   (about 3-5 min)
#   2. kernels/run-runner-on-device.sh LIST  ess-runner -> $OUT/<name>.trace.json  (about 2 min)
#
# Before: on a machine with ess-sim, `validate/prepare-configs.sh` writes the list and the access
# traces to validate/data/prepared/ (ignored by git: carry it to the GPU machine with the working
# tree). After: `validate/import-device-results.sh $OUT h200` (on the ess-sim machine) fits the
# profile from the measurements (never from the traces) and validates every trace against it.
#
# usage (from the repository root):  kernels/run-all-on-device.sh [--quick]
# --quick runs the reduced ess-bench sweep (a smoke test). Exits non-zero if either part fails;
# the runner still runs when the microbenchmarks failed, so one session yields what it can.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export OUT="${OUT:-$PWD/out/device}"
mkdir -p "$OUT"
list=validate/data/prepared/configs.txt
[[ -f "$list" ]] || { echo "run-all-on-device: $list is missing: run validate/prepare-configs.sh first" >&2; exit 2; }

status=0
bench_args=()
[[ "${1:-}" == "--quick" ]] && bench_args+=(--quick)
echo "== ess-bench ($(date -u +%H:%M:%S)) =="
bash kernels/run-on-device.sh "${bench_args[@]}" || { echo "run-all-on-device: ess-bench failed" >&2; status=1; }
echo "== ess-runner ($(date -u +%H:%M:%S)) =="
bash kernels/run-runner-on-device.sh "$list" || { echo "run-all-on-device: ess-runner failed" >&2; status=1; }
echo "== done ($(date -u +%H:%M:%S)), status $status; results in $OUT =="
ls -la "$OUT"
exit "$status"
