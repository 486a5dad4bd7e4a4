#!/usr/bin/env bash
# compare.sh: the kernel suite's generated tokens/s on the model backend,
# this build's executor against a baseline build's (another checkout, e.g.
# the previous commit), side by side in the same run.
#
#   tools/bench_suite/compare.sh --baseline BASE_BUILD [--build DIR] [--samples DIR]
#                                [--model DIR] [--baseline-model DIR]
#                                [--results FILE] [--rounds N] [SAMPLE...]
#
# For each sample (default: every program of DIR/samples/manifest.txt that the
# model's circuit runs), runs `qgpu run --stats` with this build and with the
# baseline's, alternately (--rounds times each, default 1; the order flips from
# sample to sample so that neither build always runs on a warmer machine), and
# prints one row: both builds' generated tokens (they differ when the lowering
# or the token design does), both tokens/s (the best of the rounds) and their
# ratio, both runs' wall seconds (the whole `qgpu run`, the best of the rounds)
# and their ratio, and whether both runs printed PASSED.  Then the medians,
# the least tokens/s among the samples with more than 1,000 generated tokens,
# the median ratios and the generated tokens over all samples.  Each build
# uses its own model: --model and
# --baseline-model (directories from `qgpu build-model --out DIR --compact`),
# else $QGPU_MODEL_DIR or the cache (which keeps one model: give both
# directories when the two builds' circuits differ).
#
# The table, the summary and a description of the machine (processor, cores,
# memory, kernel, load before and after, both builds' commits) are written to
# --results (default: bench-results.md in the current directory).
#
# A baseline build of the previous commit:
#   git worktree add /tmp/qgpu-base HEAD~1 && (cd /tmp/qgpu-base && ./scripts/build.sh)
#   tools/bench_suite/compare.sh --baseline /tmp/qgpu-base/build
set -euo pipefail
build=build base= samples_dir= results=bench-results.md rounds=1 model= base_model=
samples=()
while (($#)); do
  case $1 in
    --build) build=$2; shift 2 ;;
    --baseline) base=$2; shift 2 ;;
    --samples) samples_dir=$2; shift 2 ;;
    --results) results=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --model) model=$2; shift 2 ;;
    --baseline-model) base_model=$2; shift 2 ;;
    -h|--help) sed -n '2,31p' "$0"; exit 0 ;;
    *) samples+=("$1"); shift ;;
  esac
done
[ -n "$base" ] || { echo "compare: --baseline BASE_BUILD is required" >&2; exit 2; }
new_q=$build/bin/qgpu base_q=$base/bin/qgpu
for q in "$new_q" "$base_q"; do [ -x "$q" ] || { echo "compare: $q is missing; build first" >&2; exit 1; }; done
dir=${samples_dir:-$build/samples}
if ((${#samples[@]} == 0)); then
  while read -r name; do samples+=("$name"); done < <(
    "$new_q" suite-table --machine model "$dir" | awk -F' \\| ' '$NF ~ /^yes \|$/ {sub(/^\| /, "", $1); print $1}')
fi

calc() { awk "BEGIN { print $1 }"; }
commit_of() {  # the source checkout's commit of a build directory
  local src
  src=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$1/CMakeCache.txt" 2>/dev/null)
  [ -n "$src" ] && git -C "$src" log -1 --format='%h %s' 2>/dev/null | cut -c1-90 || echo unknown
}
out=$(mktemp) table=$(mktemp)
trap 'rm -f "$out" "$table"' EXIT
# Runs one build's qgpu on a sample (with its model, when given); prints
# "tok/s generated wall-seconds passed".
one() {
  local m=$base_model t0 t1
  [ "$1" = "$new_q" ] && m=$model
  t0=$(date +%s.%N)
  if [ -n "$m" ]; then
    "$1" run --stats --model "$m" -- "$2" >"$out" 2>&1 || true
  else
    "$1" run --stats -- "$2" >"$out" 2>&1 || true
  fi
  t1=$(date +%s.%N)
  local tps gen ok=0
  tps=$(sed -n 's/.*(\([0-9.]*\) tok\/s).*/\1/p' "$out" | tail -1)
  gen=$(sed -n 's/.*generated=\([0-9]*\).*/\1/p' "$out" | tail -1)
  grep -qx PASSED "$out" && ok=1
  echo "${tps:-0} ${gen:-0} $(calc "$t1 - $t0") $ok"
}

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
started=$(date -u '+%Y-%m-%d %H:%M UTC')
{
  printf '| sample | generated (this build) | generated (baseline) | tok/s (this build) | tok/s (baseline) | ratio | wall s (this build) | wall s (baseline) | wall ratio | result |\n'
  printf '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |\n'
} | tee "$table"
flip=0
for name in "${samples[@]}"; do
  prog=$dir/$name
  [ -x "$prog" ] || { echo "compare: no program $prog" >&2; continue; }
  best_new=0 best_base=0 gen=0 gen_base=0 wall_new=0 wall_base=0 ok=1
  for ((r = 0; r < rounds; ++r)); do
    order=("$new_q" "$base_q")
    ((flip)) && order=("$base_q" "$new_q")
    for q in "${order[@]}"; do
      read -r tps g wall pass < <(one "$q" "$prog")
      ((pass)) || ok=0
      if [ "$q" = "$new_q" ]; then
        gen=$g
        best_new=$(calc "($tps > $best_new) ? $tps : $best_new")
        wall_new=$(calc "($wall_new == 0 || $wall < $wall_new) ? $wall : $wall_new")
      else
        gen_base=$g
        best_base=$(calc "($tps > $best_base) ? $tps : $best_base")
        wall_base=$(calc "($wall_base == 0 || $wall < $wall_base) ? $wall : $wall_base")
      fi
    done
  done
  flip=$((1 - flip))
  ratio=- wall_ratio=-
  [ "$best_base" != 0 ] && ratio=$(printf '%.2f' "$(calc "$best_new / $best_base")")
  [ "$wall_base" != 0 ] && wall_ratio=$(printf '%.2f' "$(calc "$wall_new / $wall_base")")
  printf '| %s | %s | %s | %.1f | %.1f | %s | %.2f | %.2f | %s | %s |\n' "$name" "$gen" "$gen_base" "$best_new" \
    "$best_base" "$ratio" "$wall_new" "$wall_base" "$wall_ratio" "$( ((ok)) && echo PASSED || echo FAILED)" | tee -a "$table"
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

# The summary over the rows: medians, the least tok/s above 1,000 generated tokens.
summary=$(awk -F' \\| ' 'NR > 2 {
    gen = $2 + 0; n = $4 + 0; b = $5 + 0; tok += gen; tok_base += $3;
    news[++k] = n; bases[k] = b; if (b > 0) ratios[++m] = n / b;
    if ($8 + 0 > 0) walls[++w] = ($7 + 0) / ($8 + 0);
    if (gen > 1000) { if (!big || n < least_new) least_new = n; if (!big || b < least_base) least_base = b; big++ }
  }
  function median(a, c,   i, j, t) {
    for (i = 1; i <= c; i++) for (j = i + 1; j <= c; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
    return c == 0 ? 0 : (c % 2 ? a[(c + 1) / 2] : (a[c / 2] + a[c / 2 + 1]) / 2)
  }
  END {
    printf "samples: %d (%d with more than 1,000 generated tokens)\n", k, big
    printf "median tok/s: this build %.1f, baseline %.1f; median ratio %.2f\n", median(news, k), median(bases, k), median(ratios, m)
    printf "least tok/s above 1,000 generated tokens: this build %.1f, baseline %.1f\n", least_new, least_base
    printf "generated tokens: this build %d, baseline %d (ratio %.3f); median wall-time ratio %.2f\n", tok, tok_base, tok_base ? tok / tok_base : 0, median(walls, w)
  }' "$table")
echo
echo "$summary"

cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
mem=$(awk '/MemTotal/ {printf "%.1f GiB", $2 / 1048576}' /proc/meminfo)
{
  echo "# Kernel suite: this build's executor against a baseline"
  echo
  echo "Written by \`tools/bench_suite/compare.sh\` ($started)."
  echo
  echo "- machine: $cpu, $(nproc) cores, $mem, Linux $(uname -r)"
  echo "- load average (1, 5, 15 min): $load_before before, $load_after after"
  # Directories by their last component: the file is committed, and the
  # paths of the machine that wrote it mean nothing elsewhere.
  echo "- this build: $(basename "$build") ($(commit_of "$build"))${model:+, model $(basename "$model")}"
  echo "- baseline: $(basename "$base") ($(commit_of "$base"))${base_model:+, model $(basename "$base_model")}"
  echo "- each sample run with \`qgpu run --stats\`, $rounds round(s) per build, alternating; tok/s is generated"
  echo "  tokens over the launches' time (prefill included), the best of the rounds; wall s is the whole run"
  echo "  (the program, the daemon's start and the model's load included), the least of the rounds"
  echo
  echo '```'
  echo "$summary"
  echo '```'
  echo
  cat "$table"
} >"$results"
echo "compare: wrote $results"
