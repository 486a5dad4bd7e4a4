#!/usr/bin/env bash
# run_refused.sh QGPU PROGRAM BACKEND TEXT
# Runs one sample under the shim on BACKEND, which must refuse it: the
# program must fail (exit status not 0, no last line PASSED) and its output
# must contain TEXT (the refusal's message).
set -u
qgpu=$1 program=$2 backend=$3 text=$4
out=$(mktemp)
trap 'rm -f "$out"' EXIT
"$qgpu" run --backend "$backend" -- "$program" >"$out" 2>&1
rc=$?
cat "$out"
if [ $rc -eq 0 ] || [ "$(tail -n 1 "$out")" = PASSED ]; then
  echo "run_refused: $(basename "$program") ran on $backend (exit $rc)"
  exit 1
fi
if ! grep -qF -- "$text" "$out"; then
  echo "run_refused: $(basename "$program"): the output does not name '$text'"
  exit 1
fi
