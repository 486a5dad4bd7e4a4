#!/usr/bin/env python3
"""Compare qgpu's Qwen3.5 logits with Hugging Face transformers' (run where
transformers with qwen3_5 support is installed, ideally on a GPU).

  hf_compare.py run --model DIR --tokens "1 2 3" --out FILE
      Writes HF's logits as raw little-endian fp32 [positions, vocab], the
      layout of `qgpu logits --dump`.
  hf_compare.py compare --model DIR --tokens "1 2 3" --dump QGPU_DUMP [--tol 1e-4]
      Runs HF (batched prefill and token-by-token with its cache) and reports
      the max |difference| to the dump; exits 1 when it exceeds --tol.
"""
import argparse
import sys

import numpy as np
import torch

from hf_generate import NO_MASKS


def hf_logits(model_dir, tokens, device):
    from transformers import AutoModelForCausalLM

    # Exact fp32 on GPUs: no TF32 in matmuls or convolutions.
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    model = AutoModelForCausalLM.from_pretrained(model_dir, torch_dtype=torch.float32).to(device).eval()
    ids = torch.tensor([tokens], device=device)

    # A model whose layers are all linear attention (the compiled GPU) is
    # given its positions and masks, as in hf_generate.py; others get the
    # cache position.
    all_linear = all(t == "linear_attention" for t in model.config.layer_types)

    def given(first, n):
        if all_linear:
            return {"position_ids": torch.arange(first, first + n, device=device)[None], "attention_mask": NO_MASKS}
        return {} if n > 1 else {"cache_position": torch.tensor([first], device=device)}

    with torch.no_grad():
        prefill = model(ids, use_cache=False, **given(0, len(tokens))).logits[0].float().cpu().numpy()
        steps, past = [], None
        for i in range(len(tokens)):
            out = model(ids[:, i:i + 1], past_key_values=past, use_cache=True, **given(i, 1))
            past = out.past_key_values
            steps.append(out.logits[0, -1].float().cpu().numpy())
    return prefill, np.stack(steps)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["run", "compare"])
    ap.add_argument("--model", required=True)
    ap.add_argument("--tokens", required=True)
    ap.add_argument("--out")
    ap.add_argument("--dump")
    ap.add_argument("--tol", type=float, default=1e-4)
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = ap.parse_args()
    tokens = [int(t) for t in args.tokens.split()]
    prefill, steps = hf_logits(args.model, tokens, args.device)
    print(f"HF on {args.device}: prefill vs token-by-token max |diff| {np.abs(prefill - steps).max():.3g}")
    if args.mode == "run":
        prefill.astype("<f4").tofile(args.out)
        print(f"wrote {prefill.shape[0]} x {prefill.shape[1]} fp32 logits to {args.out}")
        return 0
    ours = np.fromfile(args.dump, dtype="<f4").reshape(len(tokens), -1)
    if ours.shape != prefill.shape:
        print(f"shape mismatch: qgpu {ours.shape}, HF {prefill.shape}")
        return 1
    worst = 0.0
    for name, hf in (("prefill", prefill), ("token-by-token", steps)):
        diff = np.abs(ours - hf).max()
        agree = (ours.argmax(-1) == hf.argmax(-1)).mean()
        worst = max(worst, diff)
        print(f"qgpu vs HF {name}: max |diff| {diff:.3g}, argmax agreement {agree:.0%}, "
              f"logit scale {np.abs(hf).max():.3g}")
    print("PASS" if worst <= args.tol else f"FAIL (tolerance {args.tol})")
    return 0 if worst <= args.tol else 1


if __name__ == "__main__":
    sys.exit(main())
