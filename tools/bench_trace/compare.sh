#!/usr/bin/env bash
# The sparse executor of this build against a baseline library, side by side
# on the same token dumps (tools/bench_trace), alternately, in one run.
#
# Usage: tools/bench_trace/compare.sh (--baseline-build OLD_BUILD | --baseline-lib DIR) --model-dir DIR
#                                     [--build BUILD] [--rounds N] [--results FILE] DUMP...
#
# --baseline-build: a build with its own bin/bench_trace (and its library).
# --baseline-lib: a directory holding the baseline's libqgpu_qwen.so (for
#   example OLD_BUILD/lib of a commit before bench_trace), put first on
#   LD_LIBRARY_PATH while this build's bench_trace runs the baseline: only
#   the executor differs.  Only for libraries whose model_host/qwen/model.h
#   is this build's (the State and Model the binary was compiled with).
# --rounds (default 2): each round runs the baseline, then this build; the
#   best decode tok/CPU-s of each dump over the rounds is kept.
# --results (default: bench-trace-results.md in the current directory): the
#   table with both figures and their ratio, and the machine.
# Dumps come from `qgpu run --backend model-trace --dump-tokens DUMP -- PROGRAM`.
set -euo pipefail

build=build base= base_build= model= rounds=2 results=bench-trace-results.md
dumps=()
while [ $# -gt 0 ]; do
  case "$1" in
    --baseline-lib) base=$2; shift 2 ;;
    --baseline-build) base_build=$2; shift 2 ;;
    --model-dir) model=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --results) results=$2; shift 2 ;;
    -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
    -*) echo "compare.sh: unknown option $1" >&2; exit 2 ;;
    *) dumps+=("$1"); shift ;;
  esac
done
if { [ -z "$base" ] && [ -z "$base_build" ]; } || [ -z "$model" ] || [ ${#dumps[@]} -eq 0 ]; then
  echo "usage: compare.sh (--baseline-build OLD_BUILD | --baseline-lib DIR) --model-dir DIR [--build BUILD] [--rounds N] [--results FILE] DUMP..." >&2
  exit 2
fi
bench=$build/bin/bench_trace
[ -x "$bench" ] || { echo "compare.sh: $bench is not built" >&2; exit 2; }
if [ -n "$base_build" ]; then
  base_bench=$base_build/bin/bench_trace
  [ -x "$base_bench" ] || { echo "compare.sh: $base_bench is not built (use --baseline-lib for a build without it)" >&2; exit 2; }
  run_base() { "$base_bench" "$@"; }
else
  [ -f "$base/libqgpu_qwen.so" ] || { echo "compare.sh: $base has no libqgpu_qwen.so" >&2; exit 2; }
  run_base() { LD_LIBRARY_PATH="$base${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$bench" "$@"; }
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for r in $(seq "$rounds"); do
  echo "compare: round $r of $rounds: baseline" >&2
  run_base --model-dir "$model" --repeat 1 --results "$tmp/base.$r.md" "${dumps[@]}" >/dev/null
  echo "compare: round $r of $rounds: this build" >&2
  "$bench" --model-dir "$model" --repeat 1 --results "$tmp/new.$r.md" "${dumps[@]}" >/dev/null
done

# Table rows "| dump | tokens | tok/CPU-s |": the best of each side.
best() { cat "$tmp"/"$1".*.md | awk -F'|' '/^\| / && $3 ~ /[0-9]/ { gsub(/ /, "", $2); gsub(/ /, "", $3); gsub(/ /, "", $4);
  if (!($2 in b) || $4 > b[$2]) b[$2] = $4; n[$2] = $3 } END { for (k in b) print k, n[k], b[k] }' | sort; }
best base >"$tmp/base.txt"
best new >"$tmp/new.txt"
cpu=$(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //')
mem=$(awk '/MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)
{
  echo "# Decode speed: this build's executor against a baseline library"
  echo
  echo "Written by \`tools/bench_trace/compare.sh\` ($(date -u '+%Y-%m-%d %H:%M UTC')): $cpu, $(nproc) cores, $mem;"
  echo "load average $(cut -d' ' -f1-3 /proc/loadavg) at the end. This build: $(git -C "$(dirname "$0")" log -1 --format='%h %s' 2>/dev/null | cut -c1-80)."
  echo "Each dump replayed through the model $rounds time(s) per side, alternately, one thread; the best decode"
  echo "tokens per CPU-second of each side (prefill excluded; every token checked against the dump)."
  echo
  echo "| dump | decoded tokens | baseline tok/CPU-s | this build tok/CPU-s | ratio |"
  echo "| --- | ---: | ---: | ---: | ---: |"
  join "$tmp/base.txt" "$tmp/new.txt" | awk '$1 != "all" { printf "| %s | %s | %s | %s | %.2f |\n", $1, $2, $3, $5, $5 / $3 }'
  join "$tmp/base.txt" "$tmp/new.txt" | awk '$1 == "all" { printf "| all | %s | %s | %s | %.2f |\n", $2, $3, $5, $5 / $3 }'
} >"$results"
cat "$results"
echo "compare: wrote $results" >&2
