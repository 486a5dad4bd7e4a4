#!/usr/bin/env bash
# Packs what device_check.sh needs to run the compiled GPU under Hugging Face
# transformers on another machine, in a few tens of MB instead of the
# checkpoint's 20 GB:
#
#   tools/hf_compare/make_bundle.sh BUNDLE MODEL_DIR [SAMPLE...]
#
# MODEL_DIR is a full model (`qgpu build-model`, the cache by default); its
# config.json and side file go to BUNDLE/compact (the side file xz-compressed),
# the SHA-256 of its model.safetensors to BUNDLE/sha256.  Each SAMPLE (a
# program in build/samples; default dot_product) runs under `qgpu run` on the
# model backend with every token checked, its launches dumped to
# BUNDLE/N-SAMPLE.tokens.
set -euo pipefail
cd "$(dirname "$0")/../.."
bundle="$1"
model="$2"
shift 2
samples=("$@")
[[ ${#samples[@]} -gt 0 ]] || samples=(dot_product)
[[ -f "$model/model.safetensors" ]] || { echo "make_bundle: $model has no model.safetensors (qgpu build-model --out $model)" >&2; exit 1; }

rm -rf "$bundle"
mkdir -p "$bundle/compact"
cp "$model/config.json" "$bundle/compact/"
xz -T0 -6 -c "$model/qgpu-sparse.bin" >"$bundle/compact/qgpu-sparse.bin.xz"
sha256sum "$model/model.safetensors" | cut -d' ' -f1 >"$bundle/sha256"
n=0
for s in "${samples[@]}"; do
  build/bin/qgpu run --model "$model" --check --stats --dump-tokens "$bundle/$n-$s.tokens" -- "build/samples/$s" >&2
  n=$((n + 1))
done
du -sh "$bundle"/* >&2
