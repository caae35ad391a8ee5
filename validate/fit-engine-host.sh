#!/usr/bin/env bash
# Fits each engine release's host time (engine.host_step_time, host_request_time and
# eager_launch_time: what kernel data cannot pin down) on the serving benchmarks of
# scenarios/benchmarks/serving-benchmarks.csv, and reports leave-one-row-out errors per release.
# Each row is linearised (one run at no host time, one per key at a small step), the keys fitted
# non-negative by least squares of the relative TPOT and time-per-output-token errors, then every
# row simulated with its release's fit and with the fit of the release's other rows (left out).
# A release with fewer than 4 rows is not fitted. Then the engine model's own error per release
# (engine.serving_error_*): one sigma of ln(simulated / measured) of TTFT, TPOT and throughput over
# its rows, each simulated with the fit of the others (releases with fewer rows: the pool of the
# fitted rows), and the band's coverage with every row left out of both the fit and the sigma.
# --write-presets writes those sigmas, with their source, into scenarios/engines/. Prints Markdown.
#
#   validate/fit-engine-host.sh [ESS_SIM] [--jobs N] [--write-presets]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
exe="build/release/ess-sim"
if [[ $# -gt 0 && "$1" != --* ]]; then exe="$1"; shift; fi
[[ -x "$exe" ]] || { echo "fit-engine-host: $exe is not an executable (build first, or pass ESS_SIM)" >&2; exit 2; }
command -v python3 >/dev/null || { echo "fit-engine-host: needs python3 to drive the runs" >&2; exit 2; }
exec python3 validate/fit_engine_host.py "$exe" "$@"
