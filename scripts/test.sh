#!/usr/bin/env bash
# The test command: set-up, build, then every test through CTest but those
# labelled `long` (the longest samples on the model; QGPU_TEST_LONG=1 runs
# them too, `cd build && ctest -L long` runs them alone).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/build.sh
cd build
exclude=(-LE long)
[ "${QGPU_TEST_LONG:-0}" = 1 ] && exclude=()
ctest --output-on-failure -j "${QGPU_TEST_JOBS:-2}" "${exclude[@]}" "$@"
