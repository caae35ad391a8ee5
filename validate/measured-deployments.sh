#!/usr/bin/env bash
# Simulated vs measured decode and prefill step time for every public deployment in scenarios/measured/
# (measured.csv says where each number comes from and how it was derived). Prints a Markdown
# table and the median |error| of each phase; the same comparison, with ceilings, is the test
# tests/engine/measured_deployments_test.cpp.
#
#   validate/measured-deployments.sh [ESS_SIM] [--set field=value ...]
#
# ESS_SIM defaults to build/release/ess-sim. Extra arguments go to every `ess-sim run`, e.g.
# `--set execution.micro_batches=1` to see what two-batch overlap contributes.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
exe="build/release/ess-sim"
if [[ $# -gt 0 && "$1" != --* ]]; then exe="$1"; shift; fi
[[ -x "$exe" ]] || { echo "measured-deployments: $exe is not an executable (build first, or pass ESS_SIM)" >&2; exit 2; }
command -v python3 >/dev/null || { echo "measured-deployments: needs python3 to read the results" >&2; exit 2; }
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
echo "| scenario | phase | engine | hardware | measured (ms) | simulated (ms) | error | band (1 sigma) | measured in band | exposed / hidden collectives (ms) |"
echo "|---|---|---|---|---|---|---|---|---|---|"
grep -v '^#' scenarios/measured/measured.csv | tail -n +2 | while IFS=, read -r name row measured derivation tag ceiling; do
  "$exe" run "scenarios/measured/$name.json" --steps 2 --json "$@" > "$tmp/$name.json"
  python3 - "$tmp/$name.json" "$name" "$measured" >> "$tmp/errors" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["summary"]
name, measured = sys.argv[2], float(sys.argv[3])
sim = r["step_time_s"]["mean"] * 1e3
err = (sim - measured) / measured * 100
c = r["communication"]
hw = r["hardware"] + ("" if r["hardware_calibration"] else " (uncalibrated)")
b = r["band"]
if b is None:
    band, inside = "none", "-"
else:
    band = f"+-{b['sigma_s']*1e3:.2f} ms ({b['relative']*100:.1f}%" + (f", {b['unbanded_fraction']*100:.0f}% unbanded)" if b["unbanded_fraction"] > 0.005 else ")")
    inside = "yes" if abs(sim - measured) <= b["sigma_s"] * 1e3 else f"no ({abs(sim - measured) / (b['sigma_s'] * 1e3):.1f} sigma)"
phase = r.get("phase", "decode")
print(f"| `{name}` | {phase} | {r['engine']['name']} | {hw} | {measured:.2f} | {sim:.2f} | {err:+.1f}% | {band} | {inside} | {c['exposed_s']*1e3:.1f} / {c['hidden_s']*1e3:.1f} |")
print(f"ERR {abs(err):.3f} {'IN' if inside == 'yes' else 'OUT'} {phase}", file=sys.stderr)
PY
done 2> "$tmp/abs"
cat "$tmp/errors"
python3 - "$tmp/abs" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if l.startswith("ERR")]
print()
for phase in ("decode", "prefill"):
    part = [r for r in rows if r[3] == phase]
    if not part:
        continue
    errs = [float(r[1]) for r in part]
    inside = sum(1 for r in part if r[2] == "IN")
    print(f"{phase}: median |error| {statistics.median(errs):.1f}% over {len(errs)} deployments, max {max(errs):.1f}%; "
          f"{inside} of {len(part)} measured within one sigma of the calibration band")
PY
