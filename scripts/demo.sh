#!/usr/bin/env bash
# The main job: builds everything, compiles the GPU into a Qwen3.5 checkpoint
# once (into the model cache, ~/.cache/qgpu unless QGPU_MODEL_DIR says
# otherwise: the compact form the daemon loads; later runs reuse it),
# then runs a real CUDA program, the dot product of [1,2,3] and [4,5,6], on
# the GPU inside the model under the shim.  --check compares every generated
# token with the reference interpreter; --stats prints the token counts.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/build.sh >&2
build/bin/qgpu build-model >&2
exec build/bin/qgpu run --check --stats -- build/samples/dot_product "$@"
