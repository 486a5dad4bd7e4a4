#!/usr/bin/env bash
# run_interpreter.sh QGPU PROGRAM [BACKEND [RUN OPTIONS...]]
# Runs one sample under the shim on BACKEND (default: the interpreter), with
# the given `qgpu run` options: it must exit 0 and its last line must be
# PASSED.
set -u
qgpu=$1 program=$2 backend=${3:-interpreter}
shift $(($# < 3 ? $# : 3))
out=$(mktemp)
trap 'rm -f "$out"' EXIT
"$qgpu" run --backend "$backend" "$@" -- "$program" >"$out" 2>&1
rc=$?
cat "$out"
if [ $rc -ne 0 ] || [ "$(tail -n 1 "$out")" != PASSED ]; then
  echo "run_interpreter: $(basename "$program"): exit $rc, last line '$(tail -n 1 "$out")'"
  exit 1
fi
