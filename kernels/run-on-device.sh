#!/usr/bin/env bash
# Builds and runs ess-bench on a GPU machine that has only the CUDA toolkit and CMake (no Debian
# packages, no network). On a lent machine use kernels/run-all-on-device.sh, which calls this
# with --no-build inside one time budget and packs everything into one archive; alone, this
# leaves its files in --results DIR (default $OUT, itself default ./out/device):
#
#   tools.txt, libs.txt  the machine's tools and where cuBLAS / NCCL were found (not with --no-build)
#   nvidia-smi.txt       the GPUs as nvidia-smi reports them (queried, never changed; not with --no-build)
#   build.log            the CMake configure and build of kernels/ (standalone, build-kernels/)
#   measurements.json    ess-bench's measurements (ess-sim/measurements/v1, kernels/README.md),
#                        rewritten after every suite: valid even when a later suite fails
#   ess-bench.stderr     ess-bench's progress, one line per sample, and any error
#   bench-summary.txt    ess-bench's summary table
#
# usage (from anywhere; it works in the repository root):
#   kernels/run-on-device.sh [--quick] [--only LIST] [--max-seconds S] [--gemm-shapes FILE]
#                            [--no-build] [--results DIR] [-- ESS-BENCH-ARGS...]
#
# --max-seconds (default 240, --quick 60) caps the measuring: samples left out are listed in
# environment.method. On SIGTERM (coreutils timeout) ess-bench stops starting samples and writes
# what it has; this script waits for it. Exits non-zero when any step fails.
set -euo pipefail

usage() {
  sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'
}

quick=0
max_seconds=""
only=""
shapes=""
build=1
results=""
extra=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --quick) quick=1; shift ;;
    --max-seconds) max_seconds="${2:?--max-seconds needs a value}"; shift 2 ;;
    --only) only="${2:?--only needs a value}"; shift 2 ;;
    --gemm-shapes) shapes="${2:?--gemm-shapes needs a file}"; shift 2 ;;
    --no-build) build=0; shift ;;
    --results) results="${2:?--results needs a folder}"; shift 2 ;;
    --help|-h) usage; exit 0 ;;
    --) shift; extra=("$@"); break ;;
    *) echo "run-on-device: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
if [[ -z "$max_seconds" ]]; then
  if [[ $quick -eq 1 ]]; then max_seconds=60; else max_seconds=240; fi
fi
[[ -z "$shapes" ]] || shapes="$(cd "$(dirname "$shapes")" && pwd)/$(basename "$shapes")"

cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=kernels/device-common.sh
source kernels/device-common.sh
DIR="${results:-${OUT:-$PWD/out/device}}"
mkdir -p "$DIR"
DIR="$(cd "$DIR" && pwd)"
BUILD="$PWD/build-kernels"
start=$SECONDS

log() { echo "run-on-device [$((SECONDS - start))s]: $*" >&2; }
fail() { log "FAILED: $*"; exit 1; }

# ---- 1. the machine and the build (standalone: kernels/ needs nothing but CUDA) ---------------
if [[ $build -eq 1 ]]; then
  ess_record_tools | tee "$DIR/tools.txt"
  links=$(mktemp -d)
  ess_find_libs "$links" | tee "$DIR/libs.txt"
  command -v nvidia-smi >/dev/null || fail "nvidia-smi not found (no NVIDIA driver?)"
  {
    nvidia-smi
    echo
    # Queries only; an older driver that lacks a field must not stop the run.
    nvidia-smi --query-gpu=index,name,compute_cap,driver_version,memory.total,clocks.max.sm,clocks.max.mem,clocks.sm,clocks.mem,power.limit,pcie.link.gen.max,pcie.link.width.max,persistence_mode --format=csv || true
  } 2>&1 | tee "$DIR/nvidia-smi.txt"
  arch=$(ess_cuda_arch)
  log "CUDA architectures: $arch"
  ess_configure_and_build "$BUILD" "$arch" > "$DIR/build.log" 2>&1 ||
    { tail -40 "$DIR/build.log" >&2; fail "the build (see $DIR/build.log)"; }
  grep -E "ess-bench: CUDA" "$DIR/build.log" >&2 || true
  log "built $BUILD/ess-bench"
fi
[[ -x "$BUILD/ess-bench" ]] || fail "no $BUILD/ess-bench (build first, or drop --no-build)"

# ---- 2. measure --------------------------------------------------------------------------------
args=(--out "$DIR/measurements.json" --max-seconds "$max_seconds")
[[ $quick -eq 1 ]] && args+=(--quick)
[[ -n "$only" ]] && args+=(--only "$only")
[[ -n "$shapes" ]] && args+=(--gemm-shapes "$shapes")
args+=(${extra[@]+"${extra[@]}"})  # (an empty array is "unbound" to set -u in bash < 4.4)
log "ess-bench ${args[*]}"
: > "$DIR/ess-bench.stderr"
# In the background, so that a SIGTERM to this script (timeout signals the whole group, ess-bench
# included) does not end it before ess-bench has written what it measured.
stop=0
trap 'stop=1' TERM INT
"$BUILD/ess-bench" "${args[@]}" > "$DIR/bench-summary.txt" 2> "$DIR/ess-bench.stderr" &
pid=$!
tail -n +1 -f --pid="$pid" "$DIR/ess-bench.stderr" >&2 &
status=0
while kill -0 "$pid" 2>/dev/null; do
  set +e
  wait "$pid"
  status=$?
  set -e
done
trap - TERM INT
sleep 0.2  # the tail's last lines
[[ $stop -eq 1 ]] && log "stopped by a signal; ess-bench wrote what it measured"
if [[ $status -ne 0 ]]; then
  [[ -s "$DIR/measurements.json" ]] && log "kept: $(grep -c '"kind": ' "$DIR/measurements.json") samples in $DIR/measurements.json"
  fail "ess-bench exited with status $status (see $DIR/ess-bench.stderr)"
fi
[[ -s "$DIR/measurements.json" ]] || fail "ess-bench wrote no $DIR/measurements.json"
cat "$DIR/bench-summary.txt"
# The environment block, as a quick look at what was recorded.
sed -n '1,/^  },$/p' "$DIR/measurements.json"
log "done: $(grep -c '"kind": ' "$DIR/measurements.json") samples in $DIR/measurements.json"
