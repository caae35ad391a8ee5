#!/usr/bin/env bash
# Runs calibration/leave_one_gpu_out.sh and fails unless the H20's fixed-length FlashMLA rows,
# predicted from the H800's profile alone (the sustained-clock transfer rule and 64-row tiles),
# stay within 5% median |error| (2.7% on 2026-12-02; 23.1% before the rule). usage: TEST ESS_SIM REPO
set -uo pipefail
out=$(bash "$2/calibration/leave_one_gpu_out.sh" "$1") || { echo "leave_one_gpu_out.sh failed"; echo "$out"; exit 1; }
echo "$out"
echo "$out" | awk '$1 == "H20" && $2 == "from-h800" && $3 == "fixed" { sub("%", "", $9); m = $9 + 0; found = 1 }
  END { if (!found) { print "no H20 from-h800 row"; exit 1 } if (m > 5) { print "H20 median " m "% > 5%"; exit 1 } }'
