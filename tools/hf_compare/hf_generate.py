#!/usr/bin/env python3
"""Greedy-decode launches of the compiled GPU with Hugging Face transformers
and compare every generated token with what qgpu's model backend wrote.

  hf_generate.py --model DIR --tokens DUMP... [--launches N] [--device cuda]

DIR is a compiled GPU checkpoint with its safetensors (`qgpu build-model`,
or expand_compact.py from the compact form).  Each DUMP is a file written by
`qgpu run --dump-tokens DUMP`: one line per launch, the prompt ids, a `|`,
the generated ids (the last one the end token), and one line per copy to the
device, its write records, a `|` and nothing.  A file is one client's
sequence (the model keeps device memory in its state across launches), so
each launch is decoded from everything before it in the file (earlier lines'
ids, generated ones included) and its prompt, three ways:

  generate    HF's own `generate` (greedy): the prompt in one forward pass
              (the chunked gated delta rule), then one token per pass
  stepwise    the prompt fed one token per pass with the cache (the
              recurrent rule throughout), then greedy decoding
  recompute   no cache: each pass runs the whole sequence so far (the
              chunked rule only); launches of up to --recompute-max tokens

and each must write the dump's generated ids exactly, up to and including the
end token.  At the first divergence it prints the position, the expected and
the written token, and the logits of both.  Exits 1 on any divergence.
"""
import argparse
import sys
import time

import torch


def load_model(model_dir, device):
    import transformers

    # Exact fp32: no TF32 in matrix products or convolutions.
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    model = transformers.AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32, device_map=device)
    print(f"loaded {type(model).__name__} (transformers {transformers.__version__}, torch {torch.__version__}): "
          f"{model.config.num_hidden_layers} layers, vocab {model.config.vocab_size}, "
          f"{sum(p.numel() for p in model.parameters()) / 1e9:.2f} B parameters, on {device}", flush=True)
    return model.eval()


def report_divergence(mode, expected, written, logits):
    for i, (e, w) in enumerate(zip(expected, written)):
        if e != w:
            row = logits[i]
            top = torch.topk(row, 2)
            print(f"  {mode}: DIVERGED at generated token {i}: expected {e}, wrote {w}; "
                  f"logit[{e}] = {row[e].item():.6g}, logit[{w}] = {row[w].item():.6g}, "
                  f"top two {top.indices.tolist()} {[round(v, 6) for v in top.values.tolist()]}")
            return
    print(f"  {mode}: wrote {len(written)} tokens where {len(expected)} were expected "
          f"(first {min(len(expected), len(written))} equal)")


def min_margin(logits, tokens):
    """The smallest gap between the chosen token's logit and the runner-up's."""
    worst = float("inf")
    for row, t in zip(logits, tokens):
        top = torch.topk(row, 2)
        if top.indices[0].item() == t:
            worst = min(worst, (top.values[0] - top.values[1]).item())
    return worst


# Positions and masks are given to the model, not derived: deriving them asks
# the cache for its length, which a cache of linear-attention layers alone
# (every layer of the compiled GPU is one) does not answer.  No mask is what
# an all-ones mask amounts to.
NO_MASKS = {"full_attention": None, "linear_attention": None}

# --time-limit: when time.time() passes this, decoding stops where it is.
DEADLINE = float("inf")


class OutOfTime(Exception):
    def __init__(self, written):
        super().__init__(f"stopped at the time limit after {len(written)} generated tokens")
        self.written = written


def check_time(written):
    if time.time() > DEADLINE:
        raise OutOfTime(written)


@torch.no_grad()
def hf_generate(model, prompt, expected, device):
    ids = torch.tensor([prompt], device=device)
    out = model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), do_sample=False,
                         max_new_tokens=len(expected) + 8, eos_token_id=expected[-1], pad_token_id=expected[-1],
                         output_logits=True, return_dict_in_generate=True)
    written = out.sequences[0, len(prompt):].tolist()
    return written, [row[0].float().cpu() for row in out.logits]


@torch.no_grad()
def greedy(model, prompt, expected, device, prefill_at_once):
    """The prompt in one forward pass (prefill_at_once) or one token per pass,
    then one greedy token per pass, through HF's cache, until the end token."""
    past, pos = None, 0

    def forward(tokens):
        nonlocal past, pos
        out = model(torch.tensor([tokens], device=device), past_key_values=past, use_cache=True,
                    position_ids=torch.arange(pos, pos + len(tokens), device=device)[None],
                    attention_mask=NO_MASKS)
        past, pos = out.past_key_values, pos + len(tokens)
        return out.logits[0, -1].float().cpu()

    rows, written = [], []
    if prefill_at_once:
        logits = forward(prompt)
    else:
        for t in prompt:
            check_time(written)
            logits = forward([t])
    while len(written) < len(expected) + 8:
        check_time(written)
        rows.append(logits)
        written.append(int(logits.argmax()))
        if written[-1] == expected[-1]:
            break
        logits = forward([written[-1]])
    return written, rows


# Whether transformers' generate refused the model once already.
GENERATE_REFUSED = False


def decode_generate(model, prompt, expected, device):
    global GENERATE_REFUSED
    if not GENERATE_REFUSED:
        try:
            return hf_generate(model, prompt, expected, device)
        except ValueError as e:
            # transformers' generate asks the cache for its length, which a
            # cache of linear-attention layers alone does not answer (every
            # layer of the compiled GPU is one); the same decode written out
            # instead, for this launch and the rest.
            GENERATE_REFUSED = True
            print(f"  generate: transformers' generate refused this model ({str(e).splitlines()[0]}); "
                  "decoding with one prefill pass and greedy steps instead", flush=True)
    return greedy(model, prompt, expected, device, prefill_at_once=True)


def decode_stepwise(model, prompt, expected, device):
    return greedy(model, prompt, expected, device, prefill_at_once=False)


@torch.no_grad()
def decode_recompute(model, prompt, expected, device):
    """No cache at all: every pass runs the whole sequence so far."""
    seq, rows, written = list(prompt), [], []
    while len(written) < len(expected) + 8:
        check_time(written)
        logits = model(torch.tensor([seq], device=device), use_cache=False, attention_mask=NO_MASKS,
                       position_ids=torch.arange(len(seq), device=device)[None]).logits[0, -1].float().cpu()
        rows.append(logits)
        written.append(int(logits.argmax()))
        seq.append(written[-1])
        if written[-1] == expected[-1]:
            break
    return written, rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--tokens", required=True, nargs="+", help="files of `qgpu run --dump-tokens`")
    ap.add_argument("--launches", type=int, default=0, help="only the first N launches of each file (0: all)")
    ap.add_argument("--modes", default="generate,stepwise,recompute")
    ap.add_argument("--recompute-max", type=int, default=2000,
                    help="recompute only launches of at most this many prompt and generated tokens")
    ap.add_argument("--time-limit", type=float, default=0,
                    help="stop decoding after this many seconds (0: no limit); what was decoded by then is reported")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = ap.parse_args()

    launches = []
    for path in args.tokens:
        with open(path) as f:
            lines = [line for line in f if line.strip()]
        context, n = [], 0
        for line in lines:
            prompt, generated = line.split("|")
            prompt, generated = [int(t) for t in prompt.split()], [int(t) for t in generated.split()]
            context += prompt
            if generated:
                if args.launches and n >= args.launches:
                    break
                launches.append((f"{path} launch {n}", list(context), generated))
                n += 1
            context += generated

    start = time.time()
    model = load_model(args.model, args.device)
    print(f"load: {time.time() - start:.1f} s", flush=True)
    decoders = {"generate": decode_generate, "stepwise": decode_stepwise, "recompute": decode_recompute}
    global DEADLINE
    if args.time_limit:
        DEADLINE = time.time() + args.time_limit
    failures, decoded, stopped, ran = 0, 0, 0, 0
    for name, prompt, expected in launches:
        if time.time() > DEADLINE:
            print(f"{name}: not decoded (past --time-limit {args.time_limit:g} s)")
            stopped += 1
            continue
        decoded += 1
        print(f"{name}: prompt {len(prompt)} tokens, qgpu generated {len(expected)}", flush=True)
        for mode in args.modes.split(","):
            if mode == "recompute" and len(prompt) + len(expected) > args.recompute_max:
                print(f"  {mode}: skipped (over --recompute-max {args.recompute_max} tokens)")
                continue
            if args.device.startswith("cuda"):
                torch.cuda.synchronize()
            t0 = time.time()
            try:
                written, logits = decoders[mode](model, prompt, expected, args.device)
            except OutOfTime as e:
                stopped += 1
                same = e.written == expected[:len(e.written)]
                failures += not same
                print(f"  {mode}: {e}, {'all equal to' if same else 'NOT equal to'} qgpu's", flush=True)
                continue
            except Exception as e:  # noqa: BLE001 - reported, counted, and the next mode tried
                failures += 1
                print(f"  {mode}: ERROR {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}", flush=True)
                continue
            if args.device.startswith("cuda"):
                torch.cuda.synchronize()
            dt = time.time() - t0
            ran += 1
            if written == expected:
                print(f"  {mode}: SAME {len(written)} tokens as qgpu, end token included "
                      f"({dt:.2f} s, {len(written) / dt:.1f} generated tok/s; smallest top-two logit gap "
                      f"{min_margin(logits, written):.4g})", flush=True)
            else:
                failures += 1
                report_divergence(mode, expected, written, logits)
    if not launches or not ran:
        print(f"FAIL: no decode ran to its end ({len(launches)} launches read)")
        return 1
    cut = f" ({stopped} decodes cut short or not started at the time limit)" if stopped else ""
    print(f"PASS: HF transformers wrote qgpu's tokens in all {decoded} launches decoded, of {len(launches)}{cut}"
          if not failures
          else f"FAIL: {failures} divergent decodes")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
