#!/usr/bin/env bash
# classify.sh: which cuda-samples kernels use floating point, mechanically.
#
#   tools/cuda_samples/classify.sh [--work DIR] CUDA_SAMPLES_DIR [SAMPLE_PATH...]
#
# For every sample directory (default: every one under Samples/0_Introduction,
# 2_Concepts_and_Techniques, 3_CUDA_Features and 6_Performance; or the given
# paths such as 0_Introduction/asyncAPI), compiles every .cu file of the
# sample, and every .cuh kernel its CMakeLists copies beside the program for
# NVRTC, to PTX for sm_75 (`nvcc -ptx -arch=sm_75 -I Common`, again with
# -rdc=true when that fails: dynamic parallelism), and runs ptx_floats.py on
# the result.  Prints one line per sample:
#   <path>  integer|float|mixed|none  <entries>  <float entries>  <first floating-point kernel and evidence>
# `mixed` means some kernels use floating point and some do not: which ones
# the sample launches with its default arguments decides its class in
# samples.txt (the note there says why).  `none`: no kernel in the PTX
# (kernels held elsewhere, or compiled away for sm_75).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
work=
while (($#)); do
  case $1 in
    --work) work=$2; shift 2 ;;
    -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
    *) break ;;
  esac
done
[ $# -ge 1 ] || { echo "usage: $0 [--work DIR] CUDA_SAMPLES_DIR [SAMPLE_PATH...]" >&2; exit 2; }
root=$(cd "$1" && pwd) || exit 2; shift
nvcc=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
work=${work:-$(mktemp -d)}
mkdir -p "$work"
paths=("$@")
if ((${#paths[@]} == 0)); then
  for d in 0_Introduction 2_Concepts_and_Techniques 3_CUDA_Features 6_Performance; do
    for s in "$root/Samples/$d"/*/; do s=${s%/}; paths+=("$d/${s##*/}"); done
  done
fi
for p in "${paths[@]}"; do
  src=$root/Samples/$p dst=$work/$p
  mkdir -p "$dst"
  incs=(-I "$root/Common" -I "$src")
  [ -d "$src/inc" ] && incs+=(-I "$src/inc")
  kernels=$(find "$src" -name '*.cu' | sort)
  kernels+=" $(grep -o '${CMAKE_CURRENT_SOURCE_DIR}/[A-Za-z0-9_./-]*\.cuh' "$src/CMakeLists.txt" 2>/dev/null |
              sed "s|\${CMAKE_CURRENT_SOURCE_DIR}|$src|" | sort -u)"
  for k in $kernels; do
    b=$(basename "$k")
    [ -f "$dst/$b.ptx" ] && continue
    "$nvcc" -ptx -arch=sm_75 "${incs[@]}" -x cu -o "$dst/$b.ptx" "$k" >"$dst/$b.log" 2>&1 ||
      "$nvcc" -ptx -rdc=true -arch=sm_75 "${incs[@]}" -x cu -o "$dst/$b.ptx" "$k" >>"$dst/$b.log" 2>&1 ||
      echo "$p: $b does not compile to PTX (see $dst/$b.log)" >&2
  done
  python3 "$here/ptx_floats.py" "$dst"/*.ptx 2>/dev/null >"$dst/entries.txt"
  total=$(wc -l <"$dst/entries.txt")
  floats=$(grep -c '^float' "$dst/entries.txt")
  first=$(grep -m1 '^float' "$dst/entries.txt" | cut -f2- | tr '\t' ' ' | cut -c1-160)
  if ((total == 0)); then cls=none
  elif ((floats == 0)); then cls=integer
  elif ((floats == total)); then cls=float
  else cls=mixed; fi
  printf '%s\t%s\t%s\t%s\t%s\n' "$p" "$cls" "$total" "$floats" "${first:--}"
done
