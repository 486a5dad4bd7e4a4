#!/usr/bin/env bash
# Packs what device_check.sh needs to run the compiled GPU under Hugging Face
# transformers on another machine, in a few MB instead of the checkpoint's
# 20 GB:
#
#   tools/hf_compare/make_bundle.sh BUNDLE MODEL_DIR [SAMPLE...]
#
# MODEL_DIR is a full model (`qgpu build-model --out MODEL_DIR` writes one, or
# `qgpu build-model --hf` into the cache, ~/.cache/qgpu/model-<hash>); its config.json and side file go to
# BUNDLE/compact (the side file xz-compressed; it still lists the stamps of
# the safetensors it stands beside, so this is the input of expand_compact.py
# rather than a model qgpu loads), the SHA-256 of its model.safetensors to
# BUNDLE/sha256.  Each SAMPLE (a program in build/samples; default
# dot_product) runs under `qgpu run` on the model backend with every token
# checked, its launches dumped to BUNDLE/N-SAMPLE.tokens.  BUNDLE is replaced
# when it holds an earlier bundle, and must otherwise not exist or be empty.
set -euo pipefail
[[ $# -ge 2 ]] || { echo "usage: $0 BUNDLE MODEL_DIR [SAMPLE...]" >&2; exit 2; }
bundle="$(realpath -m "$1")"
model="$(realpath -m "$2")"
shift 2
cd "$(dirname "$0")/../.."
samples=("$@")
[[ ${#samples[@]} -gt 0 ]] || samples=(dot_product)
[[ -f "$model/model.safetensors" ]] || { echo "make_bundle: $model has no model.safetensors (qgpu build-model --out $model)" >&2; exit 1; }
if [[ -d "$bundle" && -n "$(ls -A "$bundle")" ]]; then
  [[ -f "$bundle/sha256" && -d "$bundle/compact" ]] || { echo "make_bundle: $bundle is not empty and holds no bundle" >&2; exit 1; }
  rm -rf "$bundle"
fi
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
