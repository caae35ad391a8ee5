#!/usr/bin/env bash
# Simulated vs measured whole-request serving benchmarks (scenarios/benchmarks/serving-benchmarks.csv):
# for each row, its deployment scenario under the benchmark's load, TTFT, TPOT and output
# throughput simulated vs measured, with engine release, layout and each metric's band (serving.band:
# one sigma of ln(simulated / measured), "out" where the measurement lies outside it); then per
# engine release the median |error| and the rows within the band, and the band's coverage over all
# rows against its nominal 68%. Prints Markdown.
#
#   validate/serving-benchmarks.sh [ESS_SIM] [--jobs N] [--only ID_SUBSTRING] [--json OUT] [--set field=value ...]
#
# ESS_SIM defaults to build/release/ess-sim. --set goes to every run (e.g. an engine key to see
# what it changes). --json writes every row's numbers (what validate/fit-engine-host.sh reads).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
exe="build/release/ess-sim"
if [[ $# -gt 0 && "$1" != --* ]]; then exe="$1"; shift; fi
[[ -x "$exe" ]] || { echo "serving-benchmarks: $exe is not an executable (build first, or pass ESS_SIM)" >&2; exit 2; }
command -v python3 >/dev/null || { echo "serving-benchmarks: needs python3 to drive the runs" >&2; exit 2; }
exec python3 validate/serving_benchmarks.py "$exe" "$@"
