#!/usr/bin/env bash
# cross_check.sh QGPU PROGRAM [BACKEND [RUN OPTIONS...]]
# Runs one sample under the shim twice: on BACKEND (default: interpreter, the
# machine's reference interpreter running lowered code; interpreter-model runs
# the model's machine; model the GPU inside the model), with the given `qgpu
# run` options, and on the PTX-level reference interpreter (ptx-reference:
# the PTX itself).  Both runs must succeed and print PASSED, and their outputs
# must be equal.
set -u
qgpu=$1 program=$2 machine=${3:-interpreter}
shift $(($# < 3 ? $# : 3))
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
status=0
for backend in "$machine" ptx-reference; do
  opts=()
  [ "$backend" = "$machine" ] && opts=("$@")
  "$qgpu" run --backend "$backend" "${opts[@]}" -- "$program" >"$out/$backend" 2>"$out/$backend.err"
  rc=$?
  if [ $rc -ne 0 ] || ! grep -qx PASSED "$out/$backend"; then
    echo "cross_check: $(basename "$program") on the $backend backend: exit $rc"
    cat "$out/$backend" "$out/$backend.err"
    status=1
  fi
done
cat "$out/$machine"
if [ $status -eq 0 ] && ! diff -u "$out/ptx-reference" "$out/$machine" >"$out/diff"; then
  echo "cross_check: the $machine backend and the PTX-level reference disagree:"
  cat "$out/diff"
  status=1
fi
exit $status
