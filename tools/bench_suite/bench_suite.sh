#!/usr/bin/env bash
# bench_suite.sh: the kernel suite on the GPU inside the model, per sample.
#
#   tools/bench_suite/bench_suite.sh [--build DIR] [--dense LIST|all|none] [--dense-tokens N] [--no-memo-too] [SAMPLE...]
#
# For each sample (default: every program of DIR/samples/manifest.txt that
# the model's circuit runs, per `qgpu suite-table --machine model`), prints
# one table row:
#   - prompt and generated tokens, and the sparse executor's tokens/s
#     (generated tokens over the launches' time, prefill included), from
#     `qgpu run --stats` on the model backend;
#   - with --no-memo-too, the same without the sparse executor's sublayer
#     memo (`qgpu run --no-memo`), and the memo's speed-up (the ratio of the
#     two runs' tokens/s, one after the other);
#   - the dense executor's decode tokens/s, for the samples in --dense
#     (default: dot_product): the dense executor visits every weight of the
#     Qwen3.5-2B-sized layers, so it is measured on a few tokens only, as the
#     difference of two runs stopped by --max-tokens after 1 and after 1 + N
#     generated tokens (--dense-tokens, default 4);
#   - the wall time of the whole program on the model against the same
#     program on the reference interpreter (`--backend interpreter`), both
#     including the daemon's start, and their ratio.
# Every row's run is also checked: the model run must print PASSED.  The
# model comes from $QGPU_MODEL_DIR or the cache, as for `qgpu run`.
set -euo pipefail
build=build dense_list=dot_product dense_tokens=4 memo_too=0
samples=()
while (($#)); do
  case $1 in
    --build) build=$2; shift 2 ;;
    --dense) dense_list=$2; shift 2 ;;
    --dense-tokens) dense_tokens=$2; shift 2 ;;
    --no-memo-too) memo_too=1; shift ;;
    -h|--help) sed -n '2,25p' "$0"; exit 0 ;;
    *) samples+=("$1"); shift ;;
  esac
done
qgpu=$build/bin/qgpu dir=$build/samples
[ -x "$qgpu" ] || { echo "bench_suite: $qgpu is missing; build first" >&2; exit 1; }
if ((${#samples[@]} == 0)); then
  while read -r name; do samples+=("$name"); done < <(
    "$qgpu" suite-table --machine model "$dir" | awk -F' \\| ' '$NF ~ /^yes \|$/ {sub(/^\| /, "", $1); print $1}')
fi

now() { date +%s.%N; }
calc() { awk "BEGIN { print $1 }"; }
# Prints the wall seconds of one `qgpu run`; its output goes to $out.
timed_run() {
  local t0 t1
  t0=$(now)
  "$qgpu" run "$@" >"$out" 2>&1 || true
  t1=$(now)
  calc "$t1 - $t0"
}
field() { sed -n "s/.*$1=\([0-9.]*\).*/\1/p" "$out" | tail -1; }

out=$(mktemp)
trap 'rm -f "$out"' EXIT
printf '| sample | prompt | generated | sparse tok/s | without memo | memo speed-up | dense tok/s | model wall s | interpreter wall s | ratio | result |\n'
printf '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |\n'
for name in "${samples[@]}"; do
  prog=$dir/$name
  [ -x "$prog" ] || { echo "bench_suite: no program $prog" >&2; continue; }
  interp=$(timed_run --backend interpreter -- "$prog")
  wall=$(timed_run --stats -- "$prog")
  result=FAILED
  grep -qx PASSED "$out" && result=PASSED
  prompt=$(field prompt) generated=$(field generated)
  sparse=$(sed -n 's/.*(\([0-9.]*\) tok\/s).*/\1/p' "$out" | tail -1)
  plain=- speedup=-
  if ((memo_too)); then
    timed_run --stats --no-memo -- "$prog" >/dev/null
    grep -qx PASSED "$out" || result=FAILED
    plain=$(sed -n 's/.*(\([0-9.]*\) tok\/s).*/\1/p' "$out" | tail -1)
    [ -n "$plain" ] && [ -n "$sparse" ] && speedup=$(printf '%.2f' "$(calc "$sparse / $plain")")
  fi
  dense=-
  if [ "$dense_list" = all ] || [[ ",$dense_list," == *",$name,"* ]]; then
    w1=$(timed_run --dense --max-tokens 1 -- "$prog")
    w2=$(timed_run --dense --max-tokens $((1 + dense_tokens)) -- "$prog")
    dense=$(calc "$dense_tokens / ($w2 - $w1)")
    dense=$(printf '%.3f' "$dense")
  fi
  printf '| %s | %s | %s | %s | %s | %s | %s | %.2f | %.2f | %.1f | %s |\n' "$name" "${prompt:--}" "${generated:--}" \
    "${sparse:--}" "${plain:--}" "$speedup" "$dense" "$wall" "$interp" "$(calc "$wall / $interp")" "$result"
done
