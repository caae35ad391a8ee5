# shellcheck shell=bash
# Sourced by the device scripts (run-all-on-device.sh, run-on-device.sh, run-runner-on-device.sh):
# what a bare GPU machine has (tools, CUDA architectures, cuBLAS and NCCL wherever they are), and
# the one CMake configure + build of kernels/ they share. Plain bash; no network.
#
# A GPU machine may have cuBLAS and NCCL only as Python wheels (site-packages/nvidia/*/lib), and
# only as libcublas.so.13 / libnccl.so.2 (no unversioned name to link with -lcublas). ess_find_libs
# searches the usual places, and where only a versioned file exists it links it from a private
# folder under the unversioned name; the CMake cache hints and LD_LIBRARY_PATH point there.

# Folders where CUDA libraries may be, most specific first: the toolkit of the nvcc in use, the
# usual system places, then the nvidia-* wheels of every Python site-packages we can see.
ess_lib_dirs() {
  local nvcc_bin site
  nvcc_bin=$(command -v "${CUDACXX:-nvcc}" 2>/dev/null || true)
  {
    [[ -n "${CUDA_HOME:-}" ]] && printf '%s\n' "$CUDA_HOME/lib64" "$CUDA_HOME/lib"
    [[ -n "${CUDA_PATH:-}" ]] && printf '%s\n' "$CUDA_PATH/lib64"
    if [[ -n "$nvcc_bin" ]]; then
      local root
      root=$(cd "$(dirname "$(readlink -f "$nvcc_bin")")/.." && pwd)
      printf '%s\n' "$root/lib64" "$root/lib" "$root/targets/x86_64-linux/lib"
    fi
    printf '%s\n' /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib /usr/lib/x86_64-linux-gnu /usr/lib64 /usr/local/lib
    [[ -n "${NCCL_HOME:-}" ]] && printf '%s\n' "$NCCL_HOME/lib"
    for site in $( (command -v python3 >/dev/null && timeout 20 python3 -c 'import site, sys; print("\n".join(site.getsitepackages() + [site.getusersitepackages()] + sys.path))' 2>/dev/null) || true) \
                /usr/local/lib/python3*/dist-packages /usr/lib/python3/dist-packages /opt/*/.venv/lib/python3*/site-packages \
                /opt/*/lib/python3*/site-packages; do
      [[ -d "$site/nvidia" ]] || continue
      for d in "$site"/nvidia/*/lib "$site"/nvidia/*/lib64; do printf '%s\n' "$d"; done
    done
  } | awk 'NF && !seen[$0]++' | while read -r d; do [[ -d "$d" ]] && echo "$d"; done
}

# The first lib$1.so in the candidate folders, else the first lib$1.so.N; empty when none.
ess_find_lib() {
  local name=$1 d f
  local dirs
  mapfile -t dirs < <(ess_lib_dirs)
  for d in "${dirs[@]}"; do
    [[ -e "$d/lib$name.so" ]] && { echo "$d/lib$name.so"; return; }
  done
  for d in "${dirs[@]}"; do
    for f in "$d/lib$name.so."[0-9]*; do
      [[ -e "$f" ]] && { echo "$f"; return; }
    done
  done
}

# A header in the toolkit's include folder or a wheel's nvidia/*/include; prints its folder.
ess_find_header() {
  local header=$1 d nvcc_bin root
  nvcc_bin=$(command -v "${CUDACXX:-nvcc}" 2>/dev/null || true)
  local dirs=()
  if [[ -n "$nvcc_bin" ]]; then
    root=$(cd "$(dirname "$(readlink -f "$nvcc_bin")")/.." && pwd)
    dirs+=("$root/include" "$root/targets/x86_64-linux/include")
  fi
  dirs+=(/usr/local/cuda/include /usr/include)
  [[ -n "${NCCL_HOME:-}" ]] && dirs+=("$NCCL_HOME/include")
  local lib
  while read -r lib; do dirs+=("$(dirname "$lib")/include"); done < <(ess_lib_dirs)
  for d in "${dirs[@]}"; do
    [[ -f "$d/$header" ]] && { echo "$d"; return; }
  done
}

# Finds cuBLAS, cuBLASLt and NCCL. Sets ESS_CMAKE_HINTS (an array of -D options), ESS_LINK_FLAGS
# (for a plain nvcc link), ESS_INCLUDE_FLAGS, prepends LD_LIBRARY_PATH, and prints one line per
# library ("cublas /path (linked as /priv/libcublas.so)" or "cublas NOT FOUND").
# $1: the private folder for unversioned links.
ess_find_libs() {
  local link_dir=$1 name path lib_dirs=() header_dir
  mkdir -p "$link_dir"
  ESS_CMAKE_HINTS=()
  ESS_LINK_FLAGS=(-L"$link_dir")
  ESS_INCLUDE_FLAGS=()
  for name in cublas cublasLt nccl; do
    path=$(ess_find_lib "$name")
    if [[ -z "$path" ]]; then
      echo "$name NOT FOUND"
      continue
    fi
    local use=$path
    if [[ "$path" != *.so ]]; then
      ln -sf "$path" "$link_dir/lib$name.so"
      use="$link_dir/lib$name.so"
      echo "$name $path (linked as $use)"
    else
      echo "$name $path"
    fi
    lib_dirs+=("$(dirname "$path")")
    ESS_LINK_FLAGS+=(-L"$(dirname "$path")")
    case "$name" in
      cublas|cublasLt) ESS_CMAKE_HINTS+=("-DCUDA_${name}_LIBRARY=$use") ;;
      nccl)
        header_dir=$(ess_find_header nccl.h)
        if [[ -n "$header_dir" ]]; then
          ESS_CMAKE_HINTS+=(-DNCCL_LIBRARY="$use" -DNCCL_INCLUDE_DIR="$header_dir")
          echo "nccl.h $header_dir"
        else
          echo "nccl.h NOT FOUND (ess-bench is built without NCCL)"
        fi ;;
    esac
  done
  header_dir=$(ess_find_header cublas_v2.h)
  if [[ -z "$header_dir" ]]; then
    echo "cublas_v2.h NOT FOUND"
  else
    echo "cublas_v2.h $header_dir"
    ESS_INCLUDE_FLAGS+=(-I"$header_dir")
    # A header outside the toolkit (a wheel's): every compiler must see it.
    if [[ ! -f "$(dirname "$(readlink -f "$(command -v "${CUDACXX:-nvcc}" 2>/dev/null || echo /nonexistent)")")/../include/cublas_v2.h" ]]; then
      ESS_CMAKE_HINTS+=(-DCMAKE_CXX_FLAGS="-isystem $header_dir" -DCMAKE_CUDA_FLAGS="-isystem $header_dir")
    fi
  fi
  local joined
  joined=$(printf '%s\n' "$link_dir" "${lib_dirs[@]}" | awk 'NF && !seen[$0]++' | paste -sd: -)
  export LD_LIBRARY_PATH="$joined${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
}

# The machine's tools, one "name: version" line each ("name: none" when absent), quickly.
ess_record_tools() {
  local t
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "host: $(hostname 2>/dev/null || echo unknown)"
  echo "kernel: $(uname -srm 2>/dev/null)"
  echo "cpus: $(nproc 2>/dev/null)"
  if command -v nvidia-smi >/dev/null; then
    echo "nvidia-smi: $(timeout 20 nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv,noheader 2>&1 | paste -sd';' -)"
  else
    echo "nvidia-smi: none"
  fi
  for t in "${CUDACXX:-nvcc}" cmake ninja make gcc g++ python3; do
    if command -v "$t" >/dev/null; then
      local v
      if [[ $t == *nvcc ]]; then
        v=$(timeout 20 "$t" --version 2>&1 | grep -E 'release' | head -1)
      else
        v=$(timeout 20 "$t" --version 2>&1 | grep -v '^[[:space:]]*$' | head -1)
      fi
      echo "$t: ${v:0:200} ($(command -v "$t"))"
    else
      echo "$t: none"
    fi
  done
  for t in timeout stdbuf tar; do echo "$t: $(command -v "$t" || echo none)"; done
}

# The CUDA architectures of the GPUs present ("9.0" -> 90), or 80;90 when the driver cannot say.
ess_cuda_arch() {
  local arch
  arch=$(timeout 20 nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | tr -d ' .' | grep -E '^[0-9]+$' | sort -u | paste -sd ';' || true)
  echo "${arch:-80;90}"
}

# A CMake generator that exists here: Ninja where ninja is, else Unix Makefiles; fails without.
ess_cmake_generator() {
  if command -v ninja >/dev/null; then echo Ninja
  elif command -v make >/dev/null; then echo "Unix Makefiles"
  else return 1
  fi
}

# Configures kernels/ standalone into $1 for architectures $2 and builds the targets after it
# (all when none). Needs ess_find_libs first (ESS_CMAKE_HINTS). With ESS_KERNELS_HOST_ONLY=1 (CI,
# a machine without nvcc: .ci/kernels) the same configure and build runs without CUDA: the host
# libraries and ess-runner-link-check, which links every object of them.
ess_configure_and_build() {
  local build=$1 arch=$2 generator nvcc cuda_args=()
  shift 2
  generator=$(ess_cmake_generator) || { echo "neither ninja nor make found: cannot build" >&2; return 1; }
  command -v cmake >/dev/null || { echo "cmake not found" >&2; return 1; }
  if [[ "${ESS_KERNELS_HOST_ONLY:-0}" == 1 ]]; then
    cuda_args=(-DESS_CUDA=OFF -DESS_WERROR=ON)
  else
    nvcc=$(command -v "${CUDACXX:-nvcc}" 2>/dev/null || echo /usr/local/cuda/bin/nvcc)
    [[ -x "$nvcc" ]] || { echo "nvcc not found (set CUDACXX or put nvcc on PATH)" >&2; return 1; }
    cuda_args=(-DESS_KERNELS_REQUIRE_CUDA=ON -DCMAKE_CUDA_COMPILER="$nvcc" -DCMAKE_CUDA_ARCHITECTURES="$arch")
  fi
  local targets=()
  for t in "$@"; do targets+=(--target "$t"); done
  echo "+ cmake -S kernels -B $build -G '$generator' ${cuda_args[*]} ${ESS_CMAKE_HINTS[*]+${ESS_CMAKE_HINTS[*]}}"
  cmake -S kernels -B "$build" -G "$generator" -DCMAKE_BUILD_TYPE=Release "${cuda_args[@]}" \
        ${ESS_CMAKE_HINTS[@]+"${ESS_CMAKE_HINTS[@]}"} &&
    cmake --build "$build" ${targets[@]+"${targets[@]}"} -j "$(nproc)"
}
