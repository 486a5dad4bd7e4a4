#!/usr/bin/env bash
# The test command: set-up, build, then every test through CTest.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/build.sh
cd build
ctest --output-on-failure -j "${QGPU_TEST_JOBS:-2}" "$@"
