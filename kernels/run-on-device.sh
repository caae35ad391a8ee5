#!/usr/bin/env bash
# Builds and runs ess-bench on a GPU machine that has only the CUDA toolkit and CMake (no Debian
# packages, no network), and leaves everything it produced in $OUT (default ./out/device):
#
#   nvidia-smi.txt      the GPUs as nvidia-smi reports them (queried, never changed)
#   toolchain.txt       nvcc's version and a tiny CUDA + cuBLAS(Lt) program's output
#   build.log           the CMake configure and build of ess-bench (standalone, build-kernels/)
#   measurements.json   ess-bench's measurements (ess-sim/measurements/v1, kernels/README.md)
#   ess-bench.stderr    ess-bench's progress, one line per sample, and any error
#   summary.txt         ess-bench's summary table
#
# usage (from anywhere; it works in the repository root):
#   kernels/run-on-device.sh [--quick] [--only LIST] [--max-seconds S] [-- ESS-BENCH-ARGS...]
#
# Budget: about 1 minute to build and 1.5-3 minutes to measure the default sweep on one H100/H200;
# --max-seconds (default 240, --quick 60) caps the measuring so the whole script stays near
# 5 minutes even on a slower machine: samples left out are listed in environment.method.
# Exits non-zero when any step fails.
set -euo pipefail

usage() {
  sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'
}

quick=0
max_seconds=""
only=""
extra=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --quick) quick=1; shift ;;
    --max-seconds) max_seconds="${2:?--max-seconds needs a value}"; shift 2 ;;
    --only) only="${2:?--only needs a value}"; shift 2 ;;
    --help|-h) usage; exit 0 ;;
    --) shift; extra=("$@"); break ;;
    *) echo "run-on-device: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
if [[ -z "$max_seconds" ]]; then
  if [[ $quick -eq 1 ]]; then max_seconds=60; else max_seconds=240; fi
fi

cd "$(dirname "${BASH_SOURCE[0]}")/.."
OUT="${OUT:-$PWD/out/device}"
mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"
BUILD="$PWD/build-kernels"
start=$SECONDS

log() { echo "run-on-device [$((SECONDS - start))s]: $*" >&2; }
fail() { log "FAILED: $*"; exit 1; }

# ---- 1. the GPUs -------------------------------------------------------------------------------
command -v nvidia-smi >/dev/null || fail "nvidia-smi not found (no NVIDIA driver?)"
{
  nvidia-smi
  echo
  # Queries only; an older driver that lacks a field must not stop the run.
  nvidia-smi --query-gpu=index,name,compute_cap,driver_version,memory.total,clocks.max.sm,clocks.max.mem,clocks.sm,clocks.mem,power.limit,pcie.link.gen.max,pcie.link.width.max,persistence_mode --format=csv || true
  gpus=$(nvidia-smi --query-gpu=index --format=csv,noheader | wc -l)
  if [[ $gpus -gt 1 ]]; then
    echo
    nvidia-smi topo -m || true
  fi
} 2>&1 | tee "$OUT/nvidia-smi.txt"

# The architectures present ("9.0" -> 90), so nvcc compiles for nothing else; 80;90 (A100,
# H100/H200) when the driver is too old to report compute_cap.
arch=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | tr -d ' .' | grep -E '^[0-9]+$' | sort -u | paste -sd ';' || true)
if [[ -z "$arch" ]]; then
  arch="80;90"
fi
log "CUDA architectures: $arch"

# ---- 2. the toolchain --------------------------------------------------------------------------
NVCC="${CUDACXX:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}"
[[ -x "$NVCC" ]] || fail "nvcc not found (set CUDACXX or put nvcc on PATH)"
command -v cmake >/dev/null || fail "cmake not found"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat > "$tmp/toolchain.cu" <<'EOF'
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cstdio>
__global__ void write42(int* p) { *p = 42; }
int main() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("no CUDA device\n");
    return 1;
  }
  int* d = nullptr;
  int h = 0;
  if (cudaMalloc(&d, sizeof h) != cudaSuccess) return 1;
  write42<<<1, 1>>>(d);
  if (cudaMemcpy(&h, d, sizeof h, cudaMemcpyDeviceToHost) != cudaSuccess) return 1;
  cublasLtHandle_t lt = nullptr;
  cublasHandle_t blas = nullptr;
  if (cublasLtCreate(&lt) != CUBLAS_STATUS_SUCCESS || cublasCreate(&blas) != CUBLAS_STATUS_SUCCESS) {
    std::printf("cuBLAS(Lt) handle creation failed\n");
    return 1;
  }
  std::printf("toolchain ok: %d device(s), a kernel wrote %d, cuBLASLt %zu\n", devices, h,
              cublasLtGetVersion());
  return h == 42 ? 0 : 1;
}
EOF
first_arch="${arch%%;*}"
{
  "$NVCC" --version &&
    cmake --version | head -1 &&
    "$NVCC" -arch="sm_${first_arch}" -o "$tmp/toolchain" "$tmp/toolchain.cu" -lcublasLt -lcublas &&
    "$tmp/toolchain"
} 2>&1 | tee "$OUT/toolchain.txt" || fail "the CUDA/cuBLAS toolchain check (see $OUT/toolchain.txt)"
log "toolchain ok"

# ---- 3. build (standalone: kernels/ needs nothing but CUDA) -----------------------------------
{
  cmake -S kernels -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_COMPILER="$NVCC" \
        -DCMAKE_CUDA_ARCHITECTURES="$arch" &&
    cmake --build "$BUILD" -j "$(nproc)"
} > "$OUT/build.log" 2>&1 || { tail -40 "$OUT/build.log" >&2; fail "the build (see $OUT/build.log)"; }
grep -E "ess-bench: CUDA" "$OUT/build.log" >&2 || true
log "built $BUILD/ess-bench"

# ---- 4. measure --------------------------------------------------------------------------------
args=(--out "$OUT/measurements.json" --max-seconds "$max_seconds")
[[ $quick -eq 1 ]] && args+=(--quick)
[[ -n "$only" ]] && args+=(--only "$only")
args+=(${extra[@]+"${extra[@]}"})  # (an empty array is "unbound" to set -u in bash < 4.4)
log "ess-bench ${args[*]}"
set +e
"$BUILD/ess-bench" "${args[@]}" > "$OUT/summary.txt" 2> "$OUT/ess-bench.stderr"
status=$?
set -e
tail -60 "$OUT/ess-bench.stderr" >&2
if [[ $status -ne 0 ]]; then
  fail "ess-bench exited with status $status (see $OUT/ess-bench.stderr)"
fi
[[ -s "$OUT/measurements.json" ]] || fail "ess-bench wrote no $OUT/measurements.json"
cat "$OUT/summary.txt"
# The environment block, as a quick look at what was recorded.
sed -n '1,/^  },$/p' "$OUT/measurements.json"
log "done: $(grep -c '"kind": ' "$OUT/measurements.json") samples in $OUT/measurements.json"
