#!/usr/bin/env bash
# The compiled GPU under Hugging Face transformers on a CUDA machine: expands
# the compact model into the full checkpoint (byte for byte build-model's,
# checked by SHA-256), loads it with transformers in fp32, and greedy-decodes
# the launches of qgpu's token dumps, every generated token compared.
#
#   tools/hf_compare/device_check.sh BUNDLE [HF_GENERATE_OPTIONS...]
#
# BUNDLE holds what tools/hf_compare/make_bundle.sh puts there: compact/
# (config.json, qgpu-sparse.bin.xz), sha256 (of build-model's
# model.safetensors), and one `qgpu run --dump-tokens` file per sample,
# *.tokens, decoded in name order (so 0-dot_product.tokens comes first).
# $SCRATCH (default: /dev/shm when it has room, else /tmp) receives the
# checkpoint, over 20 GB, removed at the end unless $KEEP_MODEL is set.
# Options after BUNDLE go to hf_generate.py (say --time-limit 120).  Needs
# python3 with torch, numpy and transformers; runs offline.
set -euo pipefail
[[ $# -ge 1 ]] || { echo "usage: $0 BUNDLE [HF_GENERATE_OPTIONS...]" >&2; exit 2; }
here="$(cd "$(dirname "$0")" && pwd)"
bundle="$1"
shift
sha=$(cat "$bundle/sha256")
shopt -s nullglob
tokens=("$bundle"/*.tokens)
[[ ${#tokens[@]} -gt 0 ]] || { echo "device_check: no *.tokens files in $bundle" >&2; exit 2; }
scratch="${SCRATCH:-}"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 PYTHONUNBUFFERED=1
if [[ -z "$scratch" ]]; then
  scratch=/tmp
  shm_free=$(df -B1G --output=avail /dev/shm 2>/dev/null | tail -1 | tr -d ' ' || echo 0)
  [[ "${shm_free:-0}" -gt 40 ]] && scratch=/dev/shm
fi
model="$scratch/qgpu-gpu-model"
[[ -n "${KEEP_MODEL:-}" ]] || trap 'rm -rf "$model"' EXIT

command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
python3 -c 'import torch, transformers; print("torch", torch.__version__, "transformers", transformers.__version__, "cuda", torch.cuda.is_available())'
python3 "$here/expand_compact.py" "$bundle/compact" "$model" --sha256 "$sha"
python3 "$here/hf_generate.py" --model "$model" --tokens "${tokens[@]}" "$@"
