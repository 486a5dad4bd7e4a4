#!/bin/sh
# Runs one kernel-suite program twice on a private model_host: as nvcc built
# it, then with its device code replaced by our NVRTC's PTX of the same
# source (ptx_swap interposer).  Passes when both print the same output,
# ending in PASSED; skipped (prints SKIPPED) when nvcc's own build does not
# pass on this backend, as then there is nothing to compare against.
# Usage: suite_compare.sh <build dir> <suite_ptx> <libqgpu_ptx_swap.so> <sample.cu> <program>
set -u
build=$1 suite_ptx=$2 swap=$3 source=$4 program=$5
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$suite_ptx" "$source" "$dir/nvrtc.ptx" || exit 1
"$build/bin/model_host" --backend interpreter --endpoint "ipc://$dir/sock" --log "$dir/model_host.log" &
daemon=$!
export QGPU_DAEMON="ipc://$dir/sock" LD_LIBRARY_PATH="$build/lib"
"$program" > "$dir/nvcc.out" 2>&1
LD_PRELOAD="$swap" QGPU_SWAP_PTX="$dir/nvrtc.ptx" "$program" > "$dir/nvrtc.out" 2>&1
kill "$daemon" 2>/dev/null
wait "$daemon" 2>/dev/null
echo "--- with nvcc's PTX ---"
cat "$dir/nvcc.out"
echo "--- with our NVRTC's PTX ---"
cat "$dir/nvrtc.out"
grep -qx PASSED "$dir/nvcc.out" || { echo "SKIPPED: the nvcc build does not pass on this backend"; exit 0; }
cmp -s "$dir/nvcc.out" "$dir/nvrtc.out" || { echo "outputs differ"; exit 1; }
echo "SAME OUTPUT"
