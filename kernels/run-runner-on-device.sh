#!/usr/bin/env bash
# Builds ess-runner on a GPU machine that has only the CUDA toolkit and CMake (no Debian packages,
# no network), checks its kernels (--self-test), then runs every configuration of a list and leaves
# the traces in $OUT (default ./out/device):
#
#   nvidia-smi.txt          the GPU as nvidia-smi reports it (queried, never changed)
#   runner-build.log        the CMake configure and build of ess-runner (standalone, build-kernels/)
#   runner-self-test.txt    ess-runner --self-test
#   <name>.trace.json       the Chrome trace of each configuration (kernels/README.md, "ess-runner")
#   <name>.log              its output (per-step times, misses) and any error
#   runner-summary.txt      one line per configuration: name, status, seconds, mean step time
#
# usage (run from the repository root; works from anywhere):
#   kernels/run-runner-on-device.sh CONFIGS.txt
# CONFIGS.txt (written by validate/prepare-configs.sh as validate/data/prepared/configs.txt): one
# configuration per line, a name and the ess-runner arguments without --out; '#' lines and blank
# lines are skipped. Relative paths in the arguments (--access) are relative to the list's folder.
#
# Budget: about 1 minute to build, then a few seconds per configuration of 4 layers and a few steps
# on an H100/H200 (each run is capped at 150 s). Exits non-zero if the build, the self-test or
# any configuration fails; the configurations after a failed one still run.
set -euo pipefail

usage() {
  sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'
}

if [[ $# -ne 1 || "$1" == "--help" || "$1" == "-h" ]]; then
  usage
  [[ $# -eq 1 ]] && exit 0
  exit 2
fi
configs="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
[[ -f "$configs" ]] || { echo "run-runner-on-device: no such file: $1" >&2; exit 2; }
configs_dir="$(dirname "$configs")"

cd "$(dirname "${BASH_SOURCE[0]}")/.."
OUT="${OUT:-$PWD/out/device}"
mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"
BUILD="$PWD/build-kernels"
RUN_LIMIT_S=150
start=$SECONDS

log() { echo "run-runner-on-device [$((SECONDS - start))s]: $*" >&2; }
fail() { log "FAILED: $*"; exit 1; }

# ---- 1. the GPU --------------------------------------------------------------------------------
command -v nvidia-smi >/dev/null || fail "nvidia-smi not found (no NVIDIA driver?)"
{
  nvidia-smi
  echo
  # Queries only; an older driver that lacks a field must not stop the run.
  nvidia-smi --query-gpu=index,name,compute_cap,driver_version,memory.total,memory.used,clocks.max.sm,clocks.sm,clocks.mem,power.limit,pcie.link.gen.current,pcie.link.width.current,persistence_mode --format=csv || true
} 2>&1 | tee "$OUT/nvidia-smi.txt"

# Compile for the architectures present only ("9.0" -> 90); 80;90 if the driver cannot say.
arch=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | tr -d ' .' | grep -E '^[0-9]+$' | sort -u | paste -sd ';' || true)
[[ -n "$arch" ]] || arch="80;90"
log "CUDA architectures: $arch"

# ---- 2. build (standalone: kernels/ needs nothing but CUDA and CMake) ---------------------------
NVCC="${CUDACXX:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}"
[[ -x "$NVCC" ]] || fail "nvcc not found (set CUDACXX or put nvcc on PATH)"
command -v cmake >/dev/null || fail "cmake not found"
{
  cmake -S kernels -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_COMPILER="$NVCC" \
        -DCMAKE_CUDA_ARCHITECTURES="$arch" &&
    cmake --build "$BUILD" --target ess-runner -j "$(nproc)"
} > "$OUT/runner-build.log" 2>&1 || { tail -40 "$OUT/runner-build.log" >&2; fail "the build (see $OUT/runner-build.log)"; }
RUNNER="$BUILD/runner/ess-runner"
[[ -x "$RUNNER" ]] || fail "the build made no $RUNNER"
log "built $RUNNER"

# A command capped at RUN_LIMIT_S seconds where coreutils' timeout exists.
capped() {
  if command -v timeout >/dev/null; then timeout "$RUN_LIMIT_S" "$@"; else "$@"; fi
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
