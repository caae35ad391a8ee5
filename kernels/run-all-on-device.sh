#!/usr/bin/env bash
# The one prepared script for a lent GPU (issues 5, 6 and 11): ess-bench for calibration, then
# ess-runner on the validation set, in one shared time budget, with everything packed into one
# archive that comes back whatever happens.
#
# usage (from anywhere; it works in the repository root):
#   kernels/run-all-on-device.sh [--budget SECONDS] [--quick] [--dry-run]
#
#   --budget S   wall-clock seconds for the whole script, packing included (default 420: a run
#                fits one 10-minute device command with room to spare). Each stage gets what is
#                left, minus a reserve for packing, and runs under `timeout`.
#   --quick      the reduced ess-bench sweep (a smoke test).
#   --dry-run    (or ESS_DRY_RUN=1) for a machine without a GPU: tools, libraries and the
#                toolchain check run for real, the build, ess-bench and ess-runner are simulated
#                (ESS_DRY_RUN_FAIL=STAGE makes one fail, ESS_DRY_RUN_HANG=STAGE makes one run
#                past its limit), and packing is real: $OUT shows what would come back.
#
# What comes back in $OUT (default ./out/device), at most 4 files (the device tool returns 8):
#   ess-device.tar.gz  everything, under ess-device/: run.log, tools.txt, libs.txt,
#                      nvidia-smi.txt, toolchain.txt, build.log, measurements.json,
#                      ess-bench.stderr, bench-summary.txt, runner-*.txt, <config>.trace.json and
#                      .log, the configs.txt and gemm-shapes.csv used, summary.json
#                      (split into ess-device.tar.gz.part-aa, -ab, ... if over 15 MiB)
#   summary.json       what ran, what failed, timings, tool versions, libraries (rewritten after
#                      every stage, so it comes back even if the script is killed)
#   summary.txt        the same as a short table
#   run.log            this script's output, line-buffered as it happens
#
# Stages, in order: tools (versions, nvidia-smi, where cuBLAS/NCCL are), toolchain (a tiny CUDA +
# cuBLAS program), build (ess-bench and ess-runner, standalone CMake), bench (ess-bench, writing
# its measurements after every suite), runner (ess-runner --self-test and every prepared
# configuration; skipped, and said so, when validate/data/prepared/configs.txt is missing).
# Before: `validate/prepare-configs.sh` on a machine with ess-sim (the prepared folder travels with
# the working tree). After: `validate/import-device-results.sh RESULTS_DIR h200 h200-sxm`.
# Exit status: 0 when every stage that ran succeeded (a skipped runner stage included), else 1.
set -uo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 2
ROOT=$PWD
SELF="$ROOT/kernels/run-all-on-device.sh"

# ---- a simulated stage of a dry run (this script calling itself) -----------------------------
if [[ "${1:-}" == "--dry-stub" ]]; then
  stage=$2
  shift 2
  echo "dry run: would run: $*"
  if [[ "${ESS_DRY_RUN_HANG:-}" == "$stage" ]]; then
    echo "dry run: $stage hangs (ESS_DRY_RUN_HANG)"
    sleep 100000 &
    wait $!
  fi
  sleep 1
  if [[ "${ESS_DRY_RUN_FAIL:-}" == "$stage" ]]; then
    echo "dry run: $stage fails (ESS_DRY_RUN_FAIL)" >&2
    exit 1
  fi
  exit 0
fi

usage() { sed -n '2,37p' "$SELF" | sed 's/^# \{0,1\}//'; }

BUDGET=420
QUICK=0
DRY=${ESS_DRY_RUN:-0}
while [[ $# -gt 0 ]]; do
  case "$1" in
    --budget) BUDGET="${2:?--budget needs a number of seconds}"; shift 2 ;;
    --budget=*) BUDGET="${1#--budget=}"; shift ;;
    --quick) QUICK=1; shift ;;
    --dry-run) DRY=1; shift ;;
    --help|-h) usage; exit 0 ;;
    *) echo "run-all-on-device: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
[[ "$BUDGET" =~ ^[0-9]+$ && "$BUDGET" -ge 60 ]] || { echo "run-all-on-device: --budget: expected whole seconds >= 60, got '$BUDGET'" >&2; exit 2; }
[[ "$DRY" == 1 ]] || DRY=0

export OUT="${OUT:-$ROOT/out/device}"
mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"
# Only what this script writes may come back: clear what an earlier run left.
rm -f "$OUT"/ess-device.tar.gz "$OUT"/ess-device.tar.gz.part-* "$OUT"/summary.json "$OUT"/summary.txt "$OUT"/run.log
WORK=$(mktemp -d "${TMPDIR:-/tmp}/ess-device.XXXXXX")
RES="$WORK/ess-device"  # the archive's one folder
mkdir -p "$RES"
BUILD="$ROOT/build-kernels"
PREPARED="$ROOT/validate/data/prepared"
# Seconds kept back for packing and for a stage's grace period after its SIGTERM.
RESERVE=30
GRACE=15
T0=$(date +%s)
STARTED=$(date -u +%Y-%m-%dT%H:%M:%SZ)

# Everything this script prints goes to the terminal and to $OUT/run.log, line by line.
exec > >(stdbuf -oL tee -a "$OUT/run.log") 2>&1
TEE_PID=$!
elapsed() { echo $(( $(date +%s) - T0 )); }
left() { echo $(( BUDGET - $(elapsed) )); }
log() { echo "run-all-on-device [$(elapsed)s/${BUDGET}s]: $*"; }

# shellcheck source=kernels/device-common.sh
source "$ROOT/kernels/device-common.sh"

# ---- the summary -------------------------------------------------------------------------------
STAGE_NAMES=() STAGE_STATUS=() STAGE_SECONDS=() STAGE_LIMIT=() STAGE_RC=() STAGE_NOTE=()
OVERALL=running
json_str() {  # a JSON string of $1: backslashes, quotes and control characters escaped
  local s=${1//\\/\\\\}
  s=${s//\"/\\\"}
  s=${s//$'\t'/\\t}
  s=${s//$'\r'/}
  s=${s//$'\n'/\\n}
  printf '"%s"' "$(printf '%s' "$s" | tr -d '\000-\010\013\014\016-\037')"
}
kv_lines_json() {  # "name: value" lines of file $1 as a JSON object
  local first=1 k v
  printf '{'
  if [[ -f "$1" ]]; then
    while IFS= read -r line; do
      [[ "$line" == *": "* ]] || continue
      k=${line%%: *}
      v=${line#*: }
      [[ $first -eq 1 ]] || printf ', '
      first=0
      printf '%s: %s' "$(json_str "$k")" "$(json_str "$v")"
    done < "$1"
  fi
  printf '}'
}
lib_json() {  # libs.txt ("name path...") as a JSON object
  local first=1 name rest
  printf '{'
  if [[ -f "$RES/libs.txt" ]]; then
    while read -r name rest; do
      [[ $first -eq 1 ]] || printf ', '
      first=0
      printf '%s: %s' "$(json_str "$name")" "$(json_str "$rest")"
    done < "$RES/libs.txt"
  fi
  printf '}'
}
write_summary() {
  local i samples=null suites="" archive_bytes=null parts=""
  if [[ -s "$RES/measurements.json" ]]; then
    samples=$(grep -c '"kind": ' "$RES/measurements.json" || true)
    suites=$(grep -o 'Suites completed:[^"]*' "$RES/measurements.json" | head -1 || true)
  fi
  if [[ -f "$OUT/ess-device.tar.gz" ]]; then
    archive_bytes=$(stat -c %s "$OUT/ess-device.tar.gz")
  elif compgen -G "$OUT/ess-device.tar.gz.part-*" >/dev/null; then
    archive_bytes=$(cat "$OUT"/ess-device.tar.gz.part-* | wc -c)
    parts=$(cd "$OUT" && ls ess-device.tar.gz.part-* | paste -sd' ' -)
  fi
  {
    printf '{\n  "format": "ess-device-run/v1",\n'
    printf '  "status": %s,\n' "$(json_str "$OVERALL")"
    printf '  "dry_run": %s,\n' "$([[ $DRY == 1 ]] && echo true || echo false)"
    printf '  "quick": %s,\n' "$([[ $QUICK == 1 ]] && echo true || echo false)"
    printf '  "budget_s": %s,\n  "elapsed_s": %s,\n' "$BUDGET" "$(elapsed)"
    printf '  "started": %s,\n  "written": %s,\n' "$(json_str "$STARTED")" "$(json_str "$(date -u +%Y-%m-%dT%H:%M:%SZ)")"
    printf '  "git_commit": %s,\n' "$(json_str "$(git -C "$ROOT" rev-parse HEAD 2>/dev/null || echo unknown)")"
    printf '  "tools": %s,\n' "$(kv_lines_json "$RES/tools.txt")"
    printf '  "libs": %s,\n' "$(lib_json)"
    printf '  "stages": [\n'
    for i in "${!STAGE_NAMES[@]}"; do
      printf '    {"name": %s, "status": %s, "seconds": %s, "limit_s": %s, "rc": %s, "note": %s}%s\n' \
        "$(json_str "${STAGE_NAMES[$i]}")" "$(json_str "${STAGE_STATUS[$i]}")" "${STAGE_SECONDS[$i]}" \
        "${STAGE_LIMIT[$i]}" "${STAGE_RC[$i]}" "$(json_str "${STAGE_NOTE[$i]}")" \
        "$([[ $i -lt $((${#STAGE_NAMES[@]} - 1)) ]] && echo , )"
    done
    printf '  ],\n'
    printf '  "bench": {"samples": %s, "suites": %s},\n' "$samples" "$(json_str "$suites")"
    printf '  "runner": %s,\n' "$(json_str "$(paste -sd';' "$RES/runner-summary.txt" 2>/dev/null || true)")"
    printf '  "archive": {"name": "ess-device.tar.gz", "bytes": %s, "parts": %s}\n}\n' "$archive_bytes" "$(json_str "$parts")"
  } > "$OUT/summary.json.tmp" && mv "$OUT/summary.json.tmp" "$OUT/summary.json"
  {
    printf 'ess-device run: %s%s, %ss of a %ss budget, started %s\n' "$OVERALL" "$([[ $DRY == 1 ]] && echo ' (DRY RUN)')" "$(elapsed)" "$BUDGET" "$STARTED"
    printf '%-10s %-9s %7s %7s %4s  %s\n' stage status seconds limit rc note
    for i in "${!STAGE_NAMES[@]}"; do
      printf '%-10s %-9s %7s %7s %4s  %s\n' "${STAGE_NAMES[$i]}" "${STAGE_STATUS[$i]}" "${STAGE_SECONDS[$i]}" \
        "${STAGE_LIMIT[$i]}" "${STAGE_RC[$i]}" "${STAGE_NOTE[$i]}"
    done
    [[ "$samples" != null ]] && printf 'measurements: %s samples. %s\n' "$samples" "$suites"
    [[ -f "$RES/runner-summary.txt" ]] && sed 's/^/runner: /' "$RES/runner-summary.txt"
    [[ "$archive_bytes" != null ]] && printf 'archive: ess-device.tar.gz, %s bytes %s\n' "$archive_bytes" "$parts"
  } > "$OUT/summary.txt.tmp" && mv "$OUT/summary.txt.tmp" "$OUT/summary.txt"
}
record() {  # name status seconds limit rc note
  STAGE_NAMES+=("$1") STAGE_STATUS+=("$2") STAGE_SECONDS+=("$3") STAGE_LIMIT+=("$4") STAGE_RC+=("$5") STAGE_NOTE+=("$6")
  log "stage $1: $2 (${3}s of ${4}s, rc $5)${6:+: $6}"
  write_summary
}

# Runs stage $1 with at most $2 seconds (cut to what the budget leaves), its output line-buffered
# to the terminal and to $RES/$3; the command follows. Records the stage; returns its rc.
run_stage() {
  local name=$1 want=$2 logfile=$3 limit began rc status note=""
  shift 3
  limit=$(( $(left) - RESERVE ))
  (( want < limit )) && limit=$want
  if (( limit < 5 )); then
    record "$name" skipped 0 "$limit" -1 "no time left in the budget"
    return 1
  fi
  log "stage $name (at most ${limit}s): $(printf '%s ' "$@" | tr -s ' \n' ' ' | cut -c1-300)"
  began=$(date +%s)
  timeout -k "$GRACE" "$limit" stdbuf -oL -eL "$@" 2>&1 | tee "$RES/$logfile"
  rc=${PIPESTATUS[0]}
  case $rc in
    0) status=ok; [[ "${3:-}" == --dry-stub ]] && status=simulated ;;
    124|137) status=timeout; note="stopped by timeout after ${limit}s" ;;
    *) status=failed; note="exit status $rc; last line: $(grep -v '^[[:space:]]*$' "$RES/$logfile" | tail -1 | cut -c1-160)" ;;
  esac
  record "$name" "$status" $(( $(date +%s) - began )) "$limit" "$rc" "$note"
  return "$rc"
}

# ---- packing: on every exit path ----------------------------------------------------------------
PACKED=0
pack() {
  [[ $PACKED -eq 1 ]] && return
  PACKED=1
  local failed=0 i
  for i in "${!STAGE_STATUS[@]}"; do
    case "${STAGE_STATUS[$i]}" in failed|timeout) failed=1 ;; esac
  done
  [[ "$OVERALL" == running ]] && OVERALL=$([[ $failed -eq 0 ]] && echo ok || echo failed)
  log "packing $RES into $OUT/ess-device.tar.gz (overall: $OVERALL)"
  write_summary
  cp "$OUT/summary.json" "$RES/summary.json" 2>/dev/null
  cp "$OUT/run.log" "$RES/run.log" 2>/dev/null
  if tar -C "$WORK" -czf "$OUT/ess-device.tar.gz" ess-device; then
    # The device tool returns files of at most 16 MiB: split a larger archive into parts
    # (ESS_SPLIT_BYTES, 15 MiB by default, is there to test this with a small archive).
    local split_bytes=${ESS_SPLIT_BYTES:-15728640}
    if (( $(stat -c %s "$OUT/ess-device.tar.gz") > split_bytes )); then
      split -b "$split_bytes" -a 2 "$OUT/ess-device.tar.gz" "$OUT/ess-device.tar.gz.part-" && rm -f "$OUT/ess-device.tar.gz"
    fi
  else
    log "tar failed"
    OVERALL=failed
  fi
  write_summary
  log "done: $OVERALL; in $OUT:"
  ls -l "$OUT"
  rm -rf "$WORK"
}
on_exit() {
  local rc=$?
  pack
  if [[ "$OVERALL" != ok && $rc -eq 0 ]]; then rc=1; fi
  # Let tee write the last lines before the command returns.
  exec 1>&- 2>&-
  wait "$TEE_PID" 2>/dev/null
  exit "$rc"
}
trap on_exit EXIT
trap 'log "stopped by a signal"; OVERALL=interrupted; exit 130' INT TERM

log "budget ${BUDGET}s (reserve ${RESERVE}s), OUT=$OUT, work folder $WORK$([[ $DRY == 1 ]] && echo ', DRY RUN')"

# ---- 1. tools and libraries, in the first seconds ---------------------------------------------
began=$(date +%s)
ess_record_tools > "$RES/tools.txt" 2>&1
ess_find_libs "$WORK/libs" > "$RES/libs.txt" 2>&1
if command -v nvidia-smi >/dev/null; then
  {
    timeout 30 nvidia-smi
    echo
    # Queries only; an older driver that lacks a field must not stop the run.
    timeout 30 nvidia-smi --query-gpu=index,name,compute_cap,driver_version,memory.total,memory.used,clocks.max.sm,clocks.max.mem,clocks.sm,clocks.mem,power.limit,pcie.link.gen.max,pcie.link.width.max,persistence_mode --format=csv
    [[ $(timeout 30 nvidia-smi --query-gpu=index --format=csv,noheader | wc -l) -gt 1 ]] && timeout 30 nvidia-smi topo -m
  } > "$RES/nvidia-smi.txt" 2>&1
fi
cat "$RES/tools.txt" "$RES/libs.txt"
ARCH=$(ess_cuda_arch)
echo "CUDA architectures: $ARCH" | tee -a "$RES/tools.txt"
note="libraries: $(awk '{print $1 ($2 == "NOT" ? " missing" : "")}' "$RES/libs.txt" | paste -sd, -)"
status=ok
command -v nvidia-smi >/dev/null || { status=failed; note="no nvidia-smi (no NVIDIA driver); $note"; }
[[ $DRY == 1 && $status == failed ]] && status=expected
record tools "$status" $(( $(date +%s) - began )) 30 0 "$note"

# ---- 2. the toolchain: a tiny CUDA + cuBLAS(Lt) program ---------------------------------------
cat > "$WORK/toolchain.cu" <<'EOF'
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cstdio>
__global__ void write42(int* p) { *p = 42; }
int main() {
  int devices = 0;
  const cudaError_t e = cudaGetDeviceCount(&devices);
  if (e != cudaSuccess || devices == 0) {
    std::printf("no CUDA device: %s\n", e != cudaSuccess ? cudaGetErrorString(e) : "none visible");
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
  std::printf("toolchain ok: %d device(s), a kernel wrote %d, cuBLASLt %zu\n", devices, h, cublasLtGetVersion());
  return h == 42 ? 0 : 1;
}
EOF
# Each stage runs in its own bash (under timeout), which finds the libraries again (quick, and the
# same answer): arrays do not cross into it.
export WORK ARCH
run_stage toolchain 120 toolchain.txt bash -c '
  source kernels/device-common.sh
  ess_find_libs "$WORK/libs" > /dev/null
  nvcc=$(command -v "${CUDACXX:-nvcc}" || echo /usr/local/cuda/bin/nvcc)
  "$nvcc" -arch="sm_${ARCH%%;*}" -o "$WORK/toolchain" "$WORK/toolchain.cu" "${ESS_INCLUDE_FLAGS[@]}" "${ESS_LINK_FLAGS[@]}" -lcublasLt -lcublas &&
    "$WORK/toolchain"'
toolchain_rc=$?

# ---- 3. build ess-bench and ess-runner (standalone kernels/) -----------------------------------
BUILD_LIMIT=300
if [[ $DRY == 1 ]]; then
  run_stage build "$BUILD_LIMIT" build.log bash "$SELF" --dry-stub build \
    "cmake -S kernels -B $BUILD -G $(ess_cmake_generator || echo none) -DCMAKE_CUDA_ARCHITECTURES=$ARCH ${ESS_CMAKE_HINTS[*]+${ESS_CMAKE_HINTS[*]}} && cmake --build $BUILD -j $(nproc)"
else
  run_stage build "$BUILD_LIMIT" build.log bash -c '
    source kernels/device-common.sh
    ess_find_libs "$WORK/libs" > /dev/null
    ess_configure_and_build "$1" "$2" ess-bench ess-runner' _ "$BUILD" "$ARCH"
fi
build_rc=$?
[[ $toolchain_rc -ne 0 ]] && log "the toolchain check failed; building and running anyway (its log says why)"

# ---- 4. ess-bench: measurements, written after every suite -------------------------------------
have_configs=0
[[ -f "$PREPARED/configs.txt" ]] && have_configs=1
avail=$(( $(left) - RESERVE ))
# With the runner still to come, ess-bench takes half of what is left (at most 4 minutes);
# without it, everything. Its --max-seconds leaves GRACE + 30 s for start-up and the last write.
if [[ $have_configs -eq 1 ]]; then bench_limit=$(( avail / 2 )); else bench_limit=$avail; fi
(( bench_limit > 240 )) && bench_limit=240
max_seconds=$(( bench_limit - GRACE - 30 ))
(( QUICK == 1 && max_seconds > 60 )) && max_seconds=60
(( max_seconds < 10 )) && max_seconds=10
bench_args=(--out "$RES/measurements.json" --max-seconds "$max_seconds")
[[ $QUICK -eq 1 ]] && bench_args+=(--quick)
[[ -f "$PREPARED/gemm-shapes.csv" ]] && { bench_args+=(--gemm-shapes "$PREPARED/gemm-shapes.csv"); cp "$PREPARED/gemm-shapes.csv" "$RES/"; }
if [[ $build_rc -ne 0 && $DRY != 1 ]]; then
  record bench skipped 0 0 -1 "the build failed"
elif [[ $DRY == 1 ]]; then
  run_stage bench "$bench_limit" bench.log bash "$SELF" --dry-stub bench "$BUILD/ess-bench ${bench_args[*]}"
else
  script_args=(--no-build --results "$RES" --max-seconds "$max_seconds")
  [[ $QUICK -eq 1 ]] && script_args+=(--quick)
  [[ -f "$PREPARED/gemm-shapes.csv" ]] && script_args+=(--gemm-shapes "$PREPARED/gemm-shapes.csv")
  run_stage bench "$bench_limit" bench.log bash kernels/run-on-device.sh "${script_args[@]}"
fi

# ---- 5. ess-runner on the prepared validation set -----------------------------------------------
if [[ $have_configs -eq 0 ]]; then
  record runner skipped 0 0 -1 "no $PREPARED/configs.txt: run validate/prepare-configs.sh on a machine with ess-sim and carry validate/data/prepared/"
elif [[ $build_rc -ne 0 && $DRY != 1 ]]; then
  record runner skipped 0 0 -1 "the build failed"
else
  cp "$PREPARED/configs.txt" "$RES/configs.txt"
  runner_limit=$(( $(left) - RESERVE ))
  if [[ $DRY == 1 ]]; then
    run_stage runner "$runner_limit" runner.log bash "$SELF" --dry-stub runner \
      "kernels/run-runner-on-device.sh --no-build --budget $(( runner_limit - GRACE )) $PREPARED/configs.txt"
  else
    run_stage runner "$runner_limit" runner.log bash kernels/run-runner-on-device.sh --no-build --results "$RES" \
      --budget $(( runner_limit - GRACE )) "$PREPARED/configs.txt"
  fi
fi

exit 0  # the EXIT trap packs and sets the status
