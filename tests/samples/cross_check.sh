#!/usr/bin/env bash
# Runs one sample under the shim twice: on the machine's reference interpreter
# (lowered code) and on the PTX-level reference interpreter (the PTX itself).
# Both runs must succeed and print PASSED, and their outputs must be equal.
set -u
qgpu=$1 program=$2
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
status=0
for backend in interpreter ptx-reference; do
  "$qgpu" run --backend "$backend" -- "$program" >"$out/$backend" 2>"$out/$backend.err"
  rc=$?
  if [ $rc -ne 0 ] || ! grep -qx PASSED "$out/$backend"; then
    echo "cross_check: $(basename "$program") on the $backend backend: exit $rc"
    cat "$out/$backend" "$out/$backend.err"
    status=1
  fi
done
cat "$out/interpreter"
if [ $status -eq 0 ] && ! diff -u "$out/ptx-reference" "$out/interpreter" >"$out/diff"; then
  echo "cross_check: the machine and the PTX-level reference disagree:"
  cat "$out/diff"
  status=1
fi
exit $status
