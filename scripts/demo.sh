#!/usr/bin/env bash
# The main job: builds everything, then runs a real CUDA program (the dot
# product of [1,2,3] and [4,5,6]) under the shim and prints its result and
# the trace statistics.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/build.sh >&2
exec build/bin/qgpu run --stats -- build/samples/dot_product "$@"
