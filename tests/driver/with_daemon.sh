#!/bin/sh
# Runs a program against a private model_host (interpreter backend) with the
# build's drop-ins first on the library path, then stops that daemon.
# Usage: with_daemon.sh <build dir> <program> [args...]
set -u
build=$1
shift
dir=$(mktemp -d)
"$build/bin/model_host" --backend interpreter --endpoint "ipc://$dir/sock" --log "$dir/model_host.log" &
daemon=$!
QGPU_DAEMON="ipc://$dir/sock" LD_LIBRARY_PATH="$build/lib" "$@"
status=$?
kill "$daemon" 2>/dev/null
wait "$daemon" 2>/dev/null
if [ "$status" -ne 0 ] && [ -s "$dir/model_host.log" ]; then
  echo "--- model_host log ---"
  cat "$dir/model_host.log"
fi
rm -rf "$dir"
exit "$status"
