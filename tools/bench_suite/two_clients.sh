#!/usr/bin/env bash
# two_clients.sh: two programs at once on one model_host against one alone, in
# the same run: how much of its speed each client keeps when another one's
# launches run beside it on the model.
#
#   tools/bench_suite/two_clients.sh [--build DIR] [--model DIR] [--rounds N]
#                                    [--steps N] [--results FILE]
#
# Starts one model_host (model backend; --model, default the cache's model,
# built there on first use) on a private ipc:// endpoint, then, --rounds times
# (default 5), alternately: the client alone, and two copies of it at once.
# The client is the tests' `spin` program (one thread stepping a generator
# --steps times, default 1500: one launch of about 1,100 machine steps, a few
# seconds on the model), run under the build's libcudart.so.13.  Prints each
# round's wall times and, from the medians, the speed each of the two keeps:
# the time alone over the time of the pair (1.0: each as fast as alone; 0.5:
# the two take turns).  The rounds, the summary and the machine (processor,
# cores, memory, kernel, load before and after, the build's commit) go to
# --results (default: two-clients-results.md in the current directory).
set -euo pipefail
build=build model= rounds=5 steps=1500 results=two-clients-results.md
while (($#)); do
  case $1 in
    --build) build=$2; shift 2 ;;
    --model) model=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --results) results=$2; shift 2 ;;
    -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
    *) echo "two_clients: unknown argument $1" >&2; exit 2 ;;
  esac
done
host=$build/bin/model_host spin=$build/tests/backends/programs/spin cudart=$build/lib/libcudart.so.13
for f in "$host" "$spin" "$cudart"; do [ -e "$f" ] || { echo "two_clients: $f is missing; build first" >&2; exit 1; }; done

dir=$(mktemp -d)
pid=
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$dir"; }
trap cleanup EXIT
args=(--endpoint "ipc://$dir/sock" --log "$dir/log")
[ -n "$model" ] && args+=(--model "$model")
"$host" "${args[@]}" &
pid=$!
for ((i = 0; i < 600; ++i)); do
  grep -q "the model is ready" "$dir/log" 2>/dev/null && break
  kill -0 "$pid" 2>/dev/null || { echo "two_clients: model_host exited:" >&2; cat "$dir/log" >&2; exit 1; }
  sleep 1
done
grep -q "the model is ready" "$dir/log" || { echo "two_clients: the model was not ready after 600 s" >&2; exit 1; }

now() { date +%s.%N; }
client() { QGPU_DAEMON="ipc://$dir/sock" LD_PRELOAD="$cudart" "$spin" "$steps" >"$dir/out.$1" 2>&1 && grep -qx PASSED "$dir/out.$1"; }
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
started=$(date -u '+%Y-%m-%d %H:%M UTC')
rows=$(mktemp)
trap 'cleanup; rm -f "$rows"' EXIT
printf '| round | alone (s) | two at once (s) |\n| ---: | ---: | ---: |\n' | tee "$rows"
for ((r = 1; r <= rounds; ++r)); do
  t0=$(now)
  client a || { echo "two_clients: the client alone failed:" >&2; cat "$dir/out.a" >&2; exit 1; }
  t1=$(now)
  client b & b=$!
  client c & c=$!
  wait "$b" && wait "$c" || { echo "two_clients: a client of the pair failed:" >&2; cat "$dir/out.b" "$dir/out.c" >&2; exit 1; }
  t2=$(now)
  awk -v r="$r" -v a="$(awk "BEGIN { print $t1 - $t0 }")" -v p="$(awk "BEGIN { print $t2 - $t1 }")" \
    'BEGIN { printf "| %d | %.2f | %.2f |\n", r, a, p }' | tee -a "$rows"
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)
summary=$(awk -F' \\| ' 'NR > 2 { alone[++n] = $2 + 0; pair[n] = $3 + 0 }
  function median(v, c,   i, j, t) {
    for (i = 1; i <= c; i++) for (j = i + 1; j <= c; j++) if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
    return c % 2 ? v[(c + 1) / 2] : (v[c / 2] + v[c / 2 + 1]) / 2
  }
  END {
    ma = median(alone, n); mp = median(pair, n)
    printf "medians: alone %.2f s, two at once %.2f s; each of the two keeps %.2f of its speed alone\n", ma, mp, ma / mp
  }' "$rows")
echo
echo "$summary"
{
  echo "# Two clients at once on one model_host"
  echo
  echo "Written by \`tools/bench_suite/two_clients.sh\` ($started): \`spin $steps\` alone and two at once, $rounds rounds."
  echo
  echo "- machine: $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1), $(nproc) cores," \
       "$(awk '/MemTotal/ {printf "%.1f GiB", $2 / 1048576}' /proc/meminfo), Linux $(uname -r)"
  echo "- load average (1, 5, 15 min): $load_before before, $load_after after"
  echo "- build: $build; this script's checkout at $(git -C "$(dirname "$0")" log -1 --format=%h 2>/dev/null || echo unknown)"
  echo
  echo "$summary"
  echo
  cat "$rows"
} >"$results"
echo "two_clients: wrote $results"
