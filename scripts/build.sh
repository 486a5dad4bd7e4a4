#!/usr/bin/env bash
# Set-up, configure and build everything into build/.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
gen=(); command -v ninja >/dev/null && gen=(-G Ninja)
if [ ! -f build/CMakeCache.txt ]; then
  cmake -S . -B build "${gen[@]}" -DCMAKE_BUILD_TYPE=Release >/dev/null
fi
cmake --build build -j "${QGPU_JOBS:-$(nproc)}"
