#!/usr/bin/env bash
# Builds ess-runner on a GPU machine that has only the CUDA toolkit and CMake (no Debian packages,
# no network), checks its kernels (--self-test), then runs every configuration of a list and leaves
# the traces in --results DIR (default $OUT, itself default ./out/device). On a lent machine use
# kernels/run-all-on-device.sh, which calls this with --no-build and --budget and packs the files:
#
#   nvidia-smi.txt          the GPU as nvidia-smi reports it (queried, never changed; not with --no-build)
#   runner-build.log        the CMake configure and build of ess-runner (not with --no-build)
#   runner-self-test.txt    ess-runner --self-test
#   <name>.trace.json       the Chrome trace of each configuration (kernels/README.md, "ess-runner")
#   <name>.log              its output (per-step times, misses) and any error
#   runner-summary.txt      one line per configuration: name, status, seconds, mean step time
#
# usage (run from the repository root; works from anywhere):
#   kernels/run-runner-on-device.sh [--no-build] [--results DIR] [--budget S] CONFIGS.txt
# CONFIGS.txt (written by validate/prepare-configs.sh as validate/data/prepared/configs.txt): one
# configuration per line, a name and the ess-runner arguments without --out; '#' lines and blank
# lines are skipped. Relative paths in the arguments (--access) are relative to the list's folder.
#
# Budget: about 1 minute to build, then a few seconds per configuration of 4 layers and a few steps
# on an H100/H200. Each run is capped at 150 s, and with --budget S at what is left of S seconds:
# configurations for which fewer than 10 s are left are not started and listed as SKIPPED.
# Exits non-zero if the build, the self-test or any configuration fails or is skipped; the
# configurations after a failed one still run.
set -euo pipefail

usage() {
  sed -n '2,25p' "$0" | sed 's/^# \{0,1\}//'
}

build=1
results=""
budget=""
while [[ $# -gt 1 ]]; do
  case "$1" in
    --no-build) build=0; shift ;;
    --results) results="${2:?--results needs a folder}"; shift 2 ;;
    --budget) budget="${2:?--budget needs seconds}"; shift 2 ;;
    *) break ;;
  esac
done
if [[ $# -ne 1 || "$1" == "--help" || "$1" == "-h" ]]; then
  usage
  [[ $# -eq 1 ]] && exit 0
  exit 2
fi
[[ -z "$budget" || "$budget" =~ ^[0-9]+$ ]] || { echo "run-runner-on-device: --budget: expected whole seconds, got '$budget'" >&2; exit 2; }
configs="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
[[ -f "$configs" ]] || { echo "run-runner-on-device: no such file: $1" >&2; exit 2; }
configs_dir="$(dirname "$configs")"

cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=kernels/device-common.sh
source kernels/device-common.sh
OUT="${results:-${OUT:-$PWD/out/device}}"
mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"
BUILD="$PWD/build-kernels"
RUN_LIMIT_S=150
start=$SECONDS
# Seconds of the budget left (a large number without --budget).
remaining() { if [[ -n "$budget" ]]; then echo $(( budget - (SECONDS - start) )); else echo 1000000; fi; }

log() { echo "run-runner-on-device [$((SECONDS - start))s]: $*" >&2; }
fail() { log "FAILED: $*"; exit 1; }

# ---- 1. the GPU and the build (standalone: kernels/ needs nothing but CUDA and CMake) -----------
if [[ $build -eq 1 ]]; then
  command -v nvidia-smi >/dev/null || fail "nvidia-smi not found (no NVIDIA driver?)"
  {
    nvidia-smi
    echo
    # Queries only; an older driver that lacks a field must not stop the run.
    nvidia-smi --query-gpu=index,name,compute_cap,driver_version,memory.total,memory.used,clocks.max.sm,clocks.sm,clocks.mem,power.limit,pcie.link.gen.current,pcie.link.width.current,persistence_mode --format=csv || true
  } 2>&1 | tee "$OUT/nvidia-smi.txt"
  arch=$(ess_cuda_arch)
  log "CUDA architectures: $arch"
  links=$(mktemp -d)
  ess_find_libs "$links" >&2
  ess_configure_and_build "$BUILD" "$arch" ess-runner > "$OUT/runner-build.log" 2>&1 ||
    { tail -40 "$OUT/runner-build.log" >&2; fail "the build (see $OUT/runner-build.log)"; }
fi
RUNNER="$BUILD/runner/ess-runner"
[[ -x "$RUNNER" ]] || fail "no $RUNNER (build first, or drop --no-build)"
log "using $RUNNER"

# A command capped at RUN_LIMIT_S seconds, or what is left of the budget, where coreutils' timeout
# exists.
capped() {
  local limit=$RUN_LIMIT_S left
  left=$(( $(remaining) - 5 ))
  (( left < limit )) && limit=$left
  (( limit < 1 )) && limit=1
  if command -v timeout >/dev/null; then timeout -k 5 "$limit" "$@"; else "$@"; fi
}

# ---- 3. the kernels against their CPU references -------------------------------------------------
capped "$RUNNER" --self-test 2>&1 | tee "$OUT/runner-self-test.txt" ||
  fail "ess-runner --self-test (see $OUT/runner-self-test.txt)"
log "self-test passed"

# ---- 4. every configuration ----------------------------------------------------------------------
: > "$OUT/runner-summary.txt"
failed=()
count=0
while read -r name args || [[ -n "${name:-}" ]]; do
  case "${name:-}" in ''|'#'*) continue ;; esac
  count=$((count + 1))
  if (( $(remaining) < 10 )); then
    echo "$name SKIPPED(budget) 0s" >> "$OUT/runner-summary.txt"
    failed+=("$name")
    continue
  fi
  trace="$OUT/$name.trace.json"
  rm -f "$trace"
  log "$name"
  began=$SECONDS
  set +e
  # shellcheck disable=SC2086  # the arguments are words by design
  (cd "$configs_dir" && capped "$RUNNER" $args --out "$trace") < /dev/null > "$OUT/$name.log" 2>&1
  status=$?
  set -e
  seconds=$((SECONDS - began))
  if [[ $status -eq 0 && -s "$trace" ]]; then
    mean=$(grep -E '^[0-9]+ steps, mean' "$OUT/$name.log" | sed -E 's/.*mean ([0-9.]+) us.*/\1/' || true)
    echo "$name ok ${seconds}s mean_step_us=${mean:-?}" >> "$OUT/runner-summary.txt"
  else
    tail -20 "$OUT/$name.log" >&2
    echo "$name FAILED(status $status) ${seconds}s" >> "$OUT/runner-summary.txt"
    failed+=("$name")
  fi
done < "$configs"

cat "$OUT/runner-summary.txt"
[[ $count -gt 0 ]] || fail "no configuration in $configs"
if [[ ${#failed[@]} -gt 0 ]]; then
  fail "${#failed[@]} of $count configurations: ${failed[*]} (see their .log in $OUT)"
fi
log "done: $count traces in $OUT"
