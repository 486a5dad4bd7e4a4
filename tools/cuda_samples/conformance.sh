#!/usr/bin/env bash
# conformance.sh: NVIDIA's cuda-samples, unmodified, under qgpu.
#
#   tools/cuda_samples/conformance.sh [options] CUDA_SAMPLES_DIR [SAMPLE...]
#
# CUDA_SAMPLES_DIR is a checkout of NVIDIA/cuda-samples (the list was made at
# commit c94ff366aed18c797b8a85dfaac7817b0228b420); nothing is fetched.  For
# each chosen sample of the list file (default: every `integer` sample of
# tools/cuda_samples/samples.txt; SAMPLE... names a subset by name):
#   - build it with the plain line
#       nvcc -cudart shared -arch=sm_75 -I Common [-I inc] -o NAME SOURCES [-lcuda] [-lnvrtc]
#     where SOURCES are exactly the files of the sample's own CMakeLists.txt
#     (its add_executable), -lcuda / -lnvrtc when that CMakeLists links
#     CUDA::cuda_driver / CUDA::nvrtc, and the kernel files the CMakeLists
#     prepares beside the program (a -fatbin or -ptx of a kernel source,
#     kernel sources copied for NVRTC) prepared the same way for sm_75, and
#     the data files it copies there (images, reference results);
#   - run it from its build directory under
#       qgpu run --backend BACKEND -- ./NAME
#     with its default arguments and a time limit;
#   - judge it: PASS when it exits 0, prints a line matching its success
#     pattern and no line matching its failure pattern (several samples exit
#     0 after a failed check, so the exit code alone is not enough), and qgpu
#     reported no entry point it does not implement and no failed kernel
#     (several samples check no CUDA error and print their success line
#     anyway; a sample whose list entry says expects-kernel-failure, such as
#     simpleAssert, may have a failed kernel).
# Prints one line per sample (name, built?, result, seconds, and on failure
# the reason: the first error line of the output) and writes a Markdown
# table of the same (--results).
#
# Options:
#   --backend NAME   qgpu backend (default interpreter)
#   --build DIR      qgpu's build directory (default build): DIR/bin/qgpu
#   --out DIR        where the programs and their logs go (default DIR/cuda_samples)
#   --results FILE   the Markdown table (default OUT/results.md)
#   --list FILE      the sample list (default tools/cuda_samples/samples.txt)
#   --class C        which list to run: integer (default), float, or all (both)
#   --timeout S      seconds per run (default 60)
#   -j N             samples built and run at once (default 1)
#   --no-build       reuse the programs already in OUT
#   --check          run with `qgpu run --check` (the model backend compares
#                    every generated token with the reference interpreter)
#   --daemon-log     keep model_host's log of each run in OUT/NAME/model_host.log
#                    (one line per launch: grid, steps, thread-instructions, seconds)
#   --args FILE      per-sample arguments: lines `NAME | ARGS` ('#' comments);
#                    a sample named there runs with ARGS instead of its
#                    defaults (reduced sizes for the model's device; the
#                    table shows them)
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
backend=interpreter build=build out= results= list=$here/samples.txt class=integer timeout_s=60 jobs=1 no_build=0
samples_dir= subset=() check= args_file= daemon_log=0
while (($#)); do
  case $1 in
    --backend) backend=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --results) results=$2; shift 2 ;;
    --list) list=$2; shift 2 ;;
    --class) class=$2; shift 2 ;;
    --timeout) timeout_s=$2; shift 2 ;;
    -j) jobs=$2; shift 2 ;;
    -j*) jobs=${1#-j}; shift ;;
    --no-build) no_build=1; shift ;;
    --check) check=--check; shift ;;
    --daemon-log) daemon_log=1; shift ;;
    --args) args_file=$2; shift 2 ;;
    -h|--help) sed -n '2,49p' "$0"; exit 0 ;;
    -*) echo "conformance: unknown option $1" >&2; exit 2 ;;
    *) if [ -z "$samples_dir" ]; then samples_dir=$1; else subset+=("$1"); fi; shift ;;
  esac
done
[ -n "$samples_dir" ] || { echo "usage: $0 [options] CUDA_SAMPLES_DIR [SAMPLE...] (--help)" >&2; exit 2; }
samples_dir=$(cd "$samples_dir" && pwd) || exit 2
[ -d "$samples_dir/Common" ] && [ -d "$samples_dir/Samples" ] ||
  { echo "conformance: $samples_dir is not a cuda-samples checkout (no Common/ and Samples/)" >&2; exit 2; }
build=$(cd "$build" 2>/dev/null && pwd) || { echo "conformance: no build directory $build" >&2; exit 2; }
qgpu=$build/bin/qgpu
[ -x "$qgpu" ] || { echo "conformance: $qgpu is missing; build qgpu first" >&2; exit 2; }
out=${out:-$build/cuda_samples}
mkdir -p "$out" && out=$(cd "$out" && pwd)
results=${results:-$out/results.md}
nvcc=${NVCC:-}
[ -n "$nvcc" ] || nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
[ -x "$nvcc" ] || { echo "conformance: no nvcc (set NVCC)" >&2; exit 2; }
case $class in integer|float|all) ;; *) echo "conformance: --class integer|float|all" >&2; exit 2 ;; esac

# The list: `path | class | api | success | failure | flags | note`, columns
# separated by " | ", "-" for an empty one, '#' comments.
trim() { local s=$1; s=${s#"${s%%[![:space:]]*}"}; printf '%s' "${s%"${s##*[![:space:]]}"}"; }
dash() { [ "$1" = - ] || printf '%s' "$1"; }
declare -a names=()
declare -A path_of=() api_of=() ok_of=() bad_of=() flags_of=() class_of=()
while IFS= read -r line; do
  [[ $line =~ ^[[:space:]]*(#|$) ]] && continue
  IFS=$'\t' read -r p c a ok bad fl _ < <(sed -E 's/ \|( |$)/\t/g' <<<"$line")
  p=$(trim "$p") c=$(trim "$c")
  n=${p##*/}
  class_of[$n]=$c
  [ "$class" = all ] && [[ $c != integer && $c != float ]] && continue
  [ "$class" != all ] && [ "$c" != "$class" ] && continue
  names+=("$n"); path_of[$n]=$p api_of[$n]=$(trim "$a")
  ok_of[$n]=$(dash "$(trim "$ok")") bad_of[$n]=$(dash "$(trim "$bad")") flags_of[$n]=$(dash "$(trim "$fl")")
done <"$list"
if ((${#subset[@]})); then
  for n in "${subset[@]}"; do
    [ -n "${path_of[$n]:-}" ] || { echo "conformance: $n is not a $class sample of $list (${class_of[$n]:-not listed})" >&2; exit 2; }
  done
  names=("${subset[@]}")
fi

# Per-sample arguments (--args): `NAME | ARGS`.
declare -A args_of=()
if [ -n "$args_file" ]; then
  [ -r "$args_file" ] || { echo "conformance: cannot read $args_file" >&2; exit 2; }
  while IFS= read -r line; do
    [[ $line =~ ^[[:space:]]*(#|$) ]] && continue
    n=$(trim "${line%% | *}") args_of[$n]=$(trim "${line#* | }")
  done <"$args_file"
fi

unsupported_re='^qgpu[^:]*: .* is not supported'
kernel_failed_re="^qgpu[^:]*: (kernel .* failed|cuLaunchKernel: kernel )"

# build_sample NAME DIR: builds into $out/NAME; the log is $out/NAME/build.log.
build_sample() {
  local n=$1 src=$samples_dir/Samples/${path_of[$1]} dst=$out/$1
  local cm=$src/CMakeLists.txt
  rm -rf "$dst" && mkdir -p "$dst"
  # The sources: the add_executable(NAME ...) of the CMakeLists, one line.
  local srcs
  srcs=$(sed -n "s/^[[:space:]]*add_executable([[:space:]]*$n[[:space:]]\+\([^)]*\)).*/\1/p" "$cm" | head -1)
  [ -n "$srcs" ] || { echo "no add_executable($n ...) in $cm" >"$dst/build.log"; return 1; }
  local files=() f libs=() incs=(-I "$samples_dir/Common") flags=() f0
  for f in $srcs; do files+=("$src/$f"); done
  for f0 in ${flags_of[$n]}; do [[ $f0 == -* ]] && flags+=("$f0"); done
  [ -d "$src/inc" ] && incs+=(-I "$src/inc")
  grep -q 'CUDA::cuda_driver' "$cm" && libs+=(-lcuda)
  grep -q 'CUDA::nvrtc' "$cm" && libs+=(-lnvrtc)
  {
    # Kernel files the CMakeLists prepares beside the program.
    local kfat kptx ksrc
    kfat=$(sed -n 's/.*set(CUDA_FATBIN_FILE "${CMAKE_CURRENT_BINARY_DIR}\/\([^"]*\)").*/\1/p' "$cm" | head -1)
    kptx=$(sed -n 's/.*set(CUDA_PTX_FILE "${CMAKE_CURRENT_BINARY_DIR}\/\([^"]*\)").*/\1/p' "$cm" | head -1)
    ksrc=$(sed -n 's/.*set(CUDA_KERNEL_SOURCE "${CMAKE_CURRENT_SOURCE_DIR}\/\([^"]*\)").*/\1/p' "$cm" | head -1)
    if [ -n "$kfat" ] && [ -n "$ksrc" ]; then
      echo "+ nvcc -arch=sm_75 -fatbin -o $kfat $ksrc"
      "$nvcc" -arch=sm_75 "${incs[@]}" -fatbin -o "$dst/$kfat" "$src/$ksrc" || return 1
    fi
    if [ -n "$kptx" ] && [ -n "$ksrc" ]; then
      echo "+ nvcc -arch=sm_75 -ptx -o $kptx $ksrc"
      "$nvcc" -arch=sm_75 "${incs[@]}" -ptx -o "$dst/$kptx" "$src/$ksrc" || return 1
    fi
    for f in $(grep -o '${CMAKE_CURRENT_SOURCE_DIR}/[A-Za-z0-9_./-]*\.cuh\?' "$cm" | sed 's/${CMAKE_CURRENT_SOURCE_DIR}\///' | sort -u); do
      [ "$f" = "$ksrc" ] && continue
      echo "+ cp $f ."
      cp "$src/$f" "$dst/" || return 1
    done
    # Data files the CMakeLists copies beside the program (images, reference output).
    for f in $(grep -o '${CMAKE_CURRENT_SOURCE_DIR}/data/[A-Za-z0-9_.-]*' "$cm" | sed 's/${CMAKE_CURRENT_SOURCE_DIR}\///' | sort -u); do
      [ -f "$src/$f" ] || continue
      echo "+ cp $f ."
      cp "$src/$f" "$dst/" || return 1
    done
    if grep -q 'copy_directory' "$cm" && grep -q '${CMAKE_CURRENT_SOURCE_DIR}/data[[:space:]]*$' "$cm" && [ -d "$src/data" ]; then
      echo "+ cp -r data/. ."
      cp -r "$src/data/." "$dst/" || return 1
    fi
    # Toolkit headers the CMakeLists copies beside the program from
    # ${CUDA_INCLUDE_DIR} (matrixMul_nvrtc: cooperative_groups.h and the
    # directories it includes, which the program hands NVRTC with
    # --include-path), taken from the include directory of the toolkit whose
    # nvcc builds the program, as CMake's build takes them from the CUDA
    # installation it finds.
    local inc from to
    inc=$(dirname "$(dirname "$(readlink -f "$nvcc")")")/include
    for f in $(grep -o '${CUDA_INCLUDE_DIR}/[A-Za-z0-9_./-]*\.h' "$cm" | sed 's/${CUDA_INCLUDE_DIR}\///' | sort -u); do
      echo "+ cp \$CUDA_INCLUDE_DIR/$f ."
      cp "$inc/$f" "$dst/" || return 1
    done
    while read -r from to; do
      echo "+ cp -r \$CUDA_INCLUDE_DIR/$from $to"
      cp -r "$inc/$from" "$dst/$to" || return 1
    done < <(sed -n 's/^[[:space:]]*${CUDA_INCLUDE_DIR}\/\([A-Za-z0-9_./-]*\)[[:space:]]\{1,\}${CMAKE_CURRENT_BINARY_DIR}\/\([A-Za-z0-9_./-]*\)[[:space:]]*$/\1 \2/p' "$cm")
    echo "+ nvcc -cudart shared -arch=sm_75 ${flags[*]} ${incs[*]} -o $n $srcs ${libs[*]}"
    "$nvcc" -cudart shared -arch=sm_75 "${flags[@]}" "${incs[@]}" -o "$dst/$n" "${files[@]}" "${libs[@]}"
  } >"$dst/build.log" 2>&1
}

# The first line that says why a run failed, and qgpu's own diagnostic
# (a "qgpu ...:" line other than `qgpu run`'s banner) when there is one.
first_error() {
  local log=$1 bad=$2 l= q
  [ -n "$bad" ] && l=$(grep -m1 -E -- "$bad" "$log")
  [ -n "$l" ] || l=$(grep -v '^qgpu run: the .* backend runs kernels' "$log" |
    grep -m1 -E '[Ee]rror|ERROR|FAIL|[Ff]ail(ed|ure)\b|Abort|Segmentation|terminate called|core dumped|[Ww]aiv|not supported|^qgpu( [^ ]+)?:')
  [ -n "$l" ] || l=$(tail -n 1 "$log")
  q=$(grep -v '^qgpu run: the .* backend runs kernels' "$log" | grep -m1 -E '^qgpu( [^ ]+)?:')
  [ -n "$q" ] && [ "$q" != "$l" ] && l="$l [$q]"
  printf '%s' "${l//$samples_dir\//}"
}

# run_one NAME: builds (unless --no-build) and runs one sample, writing
# $out/NAME/result: built<TAB>result<TAB>seconds<TAB>reason.
run_one() {
  local n=$1 dst=$out/$1 built=yes result reason= t0 t1 secs rc
  if ((!no_build)) || [ ! -x "$dst/$n" ]; then
    if ! build_sample "$n"; then
      built=no result=FAIL
      reason="build: $(grep -m1 -iE 'error|fatal|no add_executable' "$dst/build.log" || tail -n1 "$dst/build.log")"
      reason=${reason//"$samples_dir"\//}  # paths relative to the checkout, not this machine's
      printf '%s\t%s\t%s\t%s\n' "$built" "$result" - "$reason" >"$dst/result"
      return
    fi
  fi
  t0=$(date +%s.%N)
  # timeout puts the run in its own process group; its id is kept in
  # $dst/pid so that an interrupted script can stop the runs it started.
  local -a run_args=()
  [ -n "${args_of[$n]:-}" ] && read -r -a run_args <<<"${args_of[$n]}"
  local -a log_args=()
  ((daemon_log)) && log_args=(--daemon-log "$dst/model_host.log") && rm -f "$dst/model_host.log"
  env -C "$dst" timeout -k 5 "$timeout_s" "$qgpu" run --backend "$backend" $check "${log_args[@]}" -- "./$n" "${run_args[@]}" \
    >"$dst/run.log" 2>&1 </dev/null &
  echo $! >"$dst/pid"
  wait $!
  rc=$?
  rm -f "$dst/pid"
  t1=$(date +%s.%N)
  secs=$(awk "BEGIN { printf \"%.1f\", $t1 - $t0 }")
  local ok=${ok_of[$n]} bad=${bad_of[$n]} ignored=
  # A qgpu diagnostic the program went past: an entry point qgpu does not
  # implement, or a kernel that failed (unless the sample expects one).
  ignored=$(grep -m1 -E "$unsupported_re" "$dst/run.log")
  [ -z "$ignored" ] && [[ " ${flags_of[$n]} " != *" expects-kernel-failure "* ]] &&
    ignored=$(grep -m1 -E "$kernel_failed_re" "$dst/run.log")
  if ((rc == 124 || rc == 137)); then
    result=FAIL reason="timeout after ${timeout_s} s (last line: $(tail -n1 "$dst/run.log"))"
  elif ((rc != 0)); then
    result=FAIL reason="exit $rc: $(first_error "$dst/run.log" "$bad")"
  elif [ -n "$bad" ] && grep -qE -- "$bad" "$dst/run.log"; then
    result=FAIL reason="exit 0 but: $(first_error "$dst/run.log" "$bad")"
  elif ! grep -qE -- "$ok" "$dst/run.log"; then
    result=FAIL reason="exit 0 without the success line /$ok/: $(first_error "$dst/run.log" "")"
  elif [ -n "$ignored" ]; then
    result=FAIL reason="exit 0 and its success line, but qgpu reported: $ignored"
  else
    result=PASS
  fi
  reason=${reason//$'\t'/ }
  reason=${reason//"$samples_dir"\//}
  reason=${reason//|/\\|}
  printf '%s\t%s\t%s\t%s\n' "$built" "$result" "$secs" "${reason:0:300}" >"$dst/result"
}

report() {
  local n=$1 built result secs reason
  IFS=$'\t' read -r built result secs reason <"$out/$n/result"
  printf '%-30s built=%-3s %-4s %6ss  %s\n' "$n" "$built" "$result" "$secs" "$reason"
}

stop_runs() {
  local f
  for f in "$out"/*/pid; do [ -f "$f" ] && kill -- -"$(cat "$f")" 2>/dev/null; done
  exit 130
}
trap stop_runs INT TERM

for n in "${names[@]}"; do rm -f "$out/$n/result"; done
running=0
for n in "${names[@]}"; do
  if ((jobs <= 1)); then
    run_one "$n"; report "$n"
  else
    run_one "$n" &
    running=$((running + 1))
    if ((running >= jobs)); then wait -n; running=$((running - 1)); fi
  fi
done
if ((jobs > 1)); then
  wait
  for n in "${names[@]}"; do report "$n"; done
fi

# The Markdown table.
pass=0 total=0
{
  printf '# cuda-samples on qgpu: %s samples, %s backend\n\n' "$class" "$backend"
  printf 'Written by `tools/cuda_samples/conformance.sh` (docs/conformance.md): each sample built with\n'
  printf '`nvcc -cudart shared -arch=sm_75`, run with `qgpu run --backend %s%s` (%s s at most), and\n' "$backend" "${check:+ $check}" "$timeout_s"
  printf 'judged by its exit code, its own success line and qgpu'"'"'s diagnostics.  The reason is the\n'
  printf 'first error line of the output, with qgpu'"'"'s own message in brackets when it printed one.\n\n'
  printf '| sample | API | built | result | seconds | reason |\n'
  printf '| --- | --- | --- | --- | ---: | --- |\n'
  for n in "${names[@]}"; do
    IFS=$'\t' read -r built result secs reason <"$out/$n/result"
    total=$((total + 1)); [ "$result" = PASS ] && pass=$((pass + 1))
    printf '| `%s`%s | %s | %s | %s | %s | %s |\n' "${path_of[$n]}" "${args_of[$n]:+ \`${args_of[$n]}\`}" "${api_of[$n]}" "$built" "$result" "$secs" "${reason:+\`${reason//\`/\'}\`}"
  done
  printf '\n%d of %d pass (backend %s, time limit %s s).\n' "$pass" "$total" "$backend" "$timeout_s"
} >"$results"
echo "$pass of $total pass (backend $backend); table: $results"
