#!/usr/bin/python3
"""Independent fp32 reference of the Qwen3.5 text model, used only by tests.

Written from the equations (Qwen3.5 as HF transformers' qwen3_5 computes its
layers), with plain torch ops, token by token.  It also writes random
Qwen3.5-shaped checkpoints in HF layout; safetensors are written and read by
hand (8-byte header length, JSON header, raw little-endian data).

  reference.py make DIR --size tiny|2b --layers N --vocab V --seed S
                        [--dtype f32|bf16|f16] [--layout text|vl] [--shards K] [--untied]
                        [--sparse]   (circuit-like: >99% zeros, few live heads/units)
                        [--tokens "1 2 3" --out FILE]   (then run it, as below)
  reference.py run DIR --tokens "1 2 3" --out FILE
      FILE: fp32 little-endian logits [T, vocab], then for every token and every
      linear-attention layer (ascending) its GDN state [value_heads, dk, dv].
"""
import argparse
import json
import math
import os
import struct

import torch

DTYPES = {"f32": (torch.float32, "F32"), "bf16": (torch.bfloat16, "BF16"), "f16": (torch.float16, "F16")}
NAME_DTYPE = {"F32": torch.float32, "BF16": torch.bfloat16, "F16": torch.float16}


def config_for(size, layers, vocab):
    if size == "2b":
        c = dict(hidden_size=2048, intermediate_size=6144, linear_num_key_heads=16, linear_num_value_heads=16,
                 linear_key_head_dim=128, linear_value_head_dim=128, num_attention_heads=8,
                 num_key_value_heads=2, head_dim=256)
    else:  # tiny; two value heads per key head exercise the GQA repeat in the GDN
        c = dict(hidden_size=64, intermediate_size=96, linear_num_key_heads=2, linear_num_value_heads=4,
                 linear_key_head_dim=16, linear_value_head_dim=8, num_attention_heads=4,
                 num_key_value_heads=2, head_dim=32)
    c.update(num_hidden_layers=layers, vocab_size=vocab, linear_conv_kernel_dim=4, rms_norm_eps=1e-6,
             model_type="qwen3_5_text",
             layer_types=["full_attention" if (i + 1) % 4 == 0 or (layers < 4 and i == layers - 1)
                          else "linear_attention" for i in range(layers)])
    return c


def random_tensors(c, seed, tied, sparse):
    g = torch.Generator().manual_seed(seed)

    def randn(*shape, std=1.0):
        return torch.randn(*shape, generator=g) * std

    H, I = c["hidden_size"], c["intermediate_size"]
    nk, nv = c["linear_num_key_heads"], c["linear_num_value_heads"]
    dk, dv = c["linear_key_head_dim"], c["linear_value_head_dim"]
    key_dim, val_dim = nk * dk, nv * dv
    conv_dim = 2 * key_dim + val_dim
    nh, nkv, D = c["num_attention_heads"], c["num_key_value_heads"], c["head_dim"]
    t = {"embed_tokens.weight": randn(c["vocab_size"], H, std=0.1), "norm.weight": randn(H, std=0.1)}
    if not tied:
        t["lm_head.weight"] = randn(c["vocab_size"], H, std=0.05)
    for l, kind in enumerate(c["layer_types"]):
        p = f"layers.{l}."
        t[p + "input_layernorm.weight"] = randn(H, std=0.1)
        t[p + "post_attention_layernorm.weight"] = randn(H, std=0.1)
        t[p + "mlp.gate_proj.weight"] = randn(I, H, std=1 / math.sqrt(H))
        t[p + "mlp.up_proj.weight"] = randn(I, H, std=1 / math.sqrt(H))
        t[p + "mlp.down_proj.weight"] = randn(H, I, std=1 / math.sqrt(I))
        if kind == "full_attention":
            a = p + "self_attn."
            t[a + "q_proj.weight"] = randn(nh * D * 2, H, std=1 / math.sqrt(H))
            t[a + "k_proj.weight"] = randn(nkv * D, H, std=1 / math.sqrt(H))
            t[a + "v_proj.weight"] = randn(nkv * D, H, std=1 / math.sqrt(H))
            t[a + "o_proj.weight"] = randn(H, nh * D, std=1 / math.sqrt(nh * D))
            t[a + "q_norm.weight"] = randn(D, std=0.1)
            t[a + "k_norm.weight"] = randn(D, std=0.1)
        else:
            a = p + "linear_attn."
            t[a + "in_proj_qkv.weight"] = randn(conv_dim, H, std=1 / math.sqrt(H))
            t[a + "in_proj_z.weight"] = randn(val_dim, H, std=1 / math.sqrt(H))
            t[a + "in_proj_b.weight"] = randn(nv, H, std=1 / math.sqrt(H))
            t[a + "in_proj_a.weight"] = randn(nv, H, std=1 / math.sqrt(H))
            t[a + "conv1d.weight"] = randn(conv_dim, 1, c["linear_conv_kernel_dim"], std=0.5)
            t[a + "out_proj.weight"] = randn(H, val_dim, std=1 / math.sqrt(val_dim))
            t[a + "A_log"] = torch.rand(nv, generator=g) * 2.0
            t[a + "dt_bias"] = randn(nv)
            t[a + "norm.weight"] = 1.0 + randn(dv, std=0.1)
    if sparse:
        sparsify(c, t, g)
    return t


def sparsify(c, t, g):
    """Circuit-like structure: one live GDN head and a few MLP units per layer,
    a handful of non-zeros per live row, most vocabulary rows zero."""
    H, I = c["hidden_size"], c["intermediate_size"]
    nk, nv = c["linear_num_key_heads"], c["linear_num_value_heads"]
    dk, dv = c["linear_key_head_dim"], c["linear_value_head_dim"]
    key_dim = nk * dk

    def keep_rows(w, rows, per_row):
        out = torch.zeros_like(w)
        for r in rows:
            cols = torch.randperm(w.shape[1], generator=g)[:per_row]
            out[r, cols] = w[r, cols] * 4.0
        return out

    live_vocab = list(range(0, c["vocab_size"], 7))
    t["embed_tokens.weight"] = keep_rows(t["embed_tokens.weight"], live_vocab, 24)
    # Column 0 plays a circuit's anchor: every live token holds it (of either sign).
    t["embed_tokens.weight"][live_vocab, 0] = torch.randn(len(live_vocab), generator=g)
    if "lm_head.weight" in t:
        t["lm_head.weight"] = keep_rows(t["lm_head.weight"], live_vocab, 24)
    for l, kind in enumerate(c["layer_types"]):
        p = f"layers.{l}."
        units = torch.randperm(I, generator=g)[:4].tolist()
        for n in ("gate_proj", "up_proj"):
            t[p + "mlp." + n + ".weight"] = keep_rows(t[p + "mlp." + n + ".weight"], units, 12)
        down = torch.zeros_like(t[p + "mlp.down_proj.weight"])
        down[:, units] = t[p + "mlp.down_proj.weight"][:, units]
        t[p + "mlp.down_proj.weight"] = keep_rows(down.t().contiguous(), units, 16).t().contiguous()
        if kind == "full_attention":
            # One live query head (query and gate rows) reading one key-value group.
            a = p + "self_attn."
            nh, nkv, D = c["num_attention_heads"], c["num_key_value_heads"], c["head_dim"]
            h = int(torch.randint(nh, (1,), generator=g))
            kv = h // (nh // nkv)
            t[a + "q_proj.weight"] = keep_rows(t[a + "q_proj.weight"], range(2 * D * h, 2 * D * (h + 1)), 6)
            t[a + "k_proj.weight"] = keep_rows(t[a + "k_proj.weight"], range(D * kv, D * (kv + 1)), 6)
            t[a + "v_proj.weight"] = keep_rows(t[a + "v_proj.weight"], range(D * kv, D * (kv + 1)), 6)
            o = torch.zeros_like(t[a + "o_proj.weight"])
            o[:, D * h:D * (h + 1)] = t[a + "o_proj.weight"][:, D * h:D * (h + 1)]
            t[a + "o_proj.weight"] = keep_rows(o, range(0, H, 5), H)
            continue
        a = p + "linear_attn."
        h = int(torch.randint(nv, (1,), generator=g))
        kh = h // (nv // nk)
        rows = list(range(kh * dk, kh * dk + dk)) + list(range(key_dim + kh * dk, key_dim + kh * dk + dk)) + \
            list(range(2 * key_dim + h * dv, 2 * key_dim + h * dv + dv))
        t[a + "in_proj_qkv.weight"] = keep_rows(t[a + "in_proj_qkv.weight"], rows, 6)
        # Like a circuit's memory: column 0 reaches every live channel, and the
        # queries and keys read the current token only (earlier taps zero);
        # a quarter of them get anchor weights of -2000 and a quarter +2000,
        # which SiLU turns into -0 when the anchor is positive, or negative.
        qkv, conv = t[a + "in_proj_qkv.weight"], t[a + "conv1d.weight"]
        for i, r in enumerate(rows):
            qk = i < 2 * dk
            qkv[r, 0] = (-2000.0 if i % 4 == 0 else 2000.0 if i % 4 == 1 else 0) if qk and i % 4 < 2 else \
                float(torch.randn(1, generator=g)) * (4.0 if qk else 1.0)
            if qk:
                conv[r, 0, :-1] = 0
        t[a + "in_proj_z.weight"] = keep_rows(t[a + "in_proj_z.weight"], range(h * dv, h * dv + dv), 6)
        t[a + "in_proj_b.weight"] = keep_rows(t[a + "in_proj_b.weight"], [h], 6)
        t[a + "in_proj_a.weight"] = keep_rows(t[a + "in_proj_a.weight"], [h], 6)
        out = torch.zeros_like(t[a + "out_proj.weight"])
        out[:, h * dv:(h + 1) * dv] = t[a + "out_proj.weight"][:, h * dv:(h + 1) * dv]
        t[a + "out_proj.weight"] = keep_rows(out, range(0, H, 3), H)


def write_safetensors(path, tensors, dtype):
    torch_dtype, name = DTYPES[dtype]
    header, blobs, offset = {}, [], 0
    for key in sorted(tensors):
        data = tensors[key].to(torch_dtype).contiguous()
        raw = data.view(torch.uint8).numpy().tobytes() if data.numel() else b""
        header[key] = {"dtype": name, "shape": list(data.shape), "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    text = json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)


def read_safetensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for key, info in header.items():
        if key == "__metadata__":
            continue
        b, e = info["data_offsets"]
        raw = bytearray(data[b:e])
        t = torch.frombuffer(raw, dtype=NAME_DTYPE[info["dtype"]]) if raw else torch.zeros(0)
        out[key] = t.reshape(info["shape"]).to(torch.float32)
    return out


def make(args):
    c = config_for(args.size, args.layers, args.vocab)
    c["tie_word_embeddings"] = not args.untied
    c["rope_parameters"] = {"rope_type": "default", "rope_theta": 1e7, "partial_rotary_factor": 0.25}
    tensors = random_tensors(c, args.seed, not args.untied, args.sparse)
    prefix = "model.language_model." if args.layout == "vl" else "model."
    hf = {(k if k == "lm_head.weight" else prefix + k): v for k, v in tensors.items()}
    if args.layout == "vl":
        hf["model.visual.patch_embed.proj.weight"] = torch.zeros(4, 3)  # must be ignored
        config = {"model_type": "qwen3_5", "architectures": ["Qwen3_5ForConditionalGeneration"],
                  "tie_word_embeddings": c.pop("tie_word_embeddings"), "text_config": c,
                  "vision_config": {"depth": 1}}
    else:
        config = c
    os.makedirs(args.dir, exist_ok=True)
    with open(os.path.join(args.dir, "config.json"), "w") as f:
        json.dump(config, f, indent=1)
    names = sorted(hf)
    if args.shards <= 1:
        write_safetensors(os.path.join(args.dir, "model.safetensors"), hf, args.dtype)
        return
    weight_map = {}
    for s in range(args.shards):
        file = f"model-{s + 1:05d}-of-{args.shards:05d}.safetensors"
        part = {k: hf[k] for k in names[s::args.shards]}
        weight_map.update({k: file for k in part})
        write_safetensors(os.path.join(args.dir, file), part, args.dtype)
    with open(os.path.join(args.dir, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {}, "weight_map": weight_map}, f)


# ---------------------------------------------------------------- the model

def rmsnorm(x, w, eps, zero_centred=True):
    y = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)
    return y * (1.0 + w) if zero_centred else w * y


def l2norm(x):
    return x * torch.rsqrt((x * x).sum(-1, keepdim=True) + 1e-6)


def silu(x):
    return x * torch.sigmoid(x)


class Reference:
    def __init__(self, d):
        root = json.load(open(os.path.join(d, "config.json")))
        c = root.get("text_config", root)
        self.c = c
        self.tied = c.get("tie_word_embeddings", root.get("tie_word_embeddings", False))
        rope = c.get("rope_parameters", {})
        self.theta = rope.get("rope_theta", c.get("rope_theta"))
        self.rot = int(c["head_dim"] * rope.get("partial_rotary_factor", c.get("partial_rotary_factor", 0.25)))
        w = {}
        for f in sorted(os.listdir(d)):
            if f.endswith(".safetensors"):
                w.update(read_safetensors(os.path.join(d, f)))
        prefix = "model.language_model." if "text_config" in root else "model."
        self.w = {k[len(prefix):]: v for k, v in w.items() if k.startswith(prefix)}
        self.lm_head = self.w["embed_tokens.weight"] if self.tied else w["lm_head.weight"]
        self.eps = c["rms_norm_eps"]
        L = c["num_hidden_layers"]
        self.conv = [torch.zeros(2 * c["linear_num_key_heads"] * c["linear_key_head_dim"] +
                                 c["linear_num_value_heads"] * c["linear_value_head_dim"],
                                 c["linear_conv_kernel_dim"] - 1) for _ in range(L)]
        self.S = [torch.zeros(c["linear_num_value_heads"], c["linear_key_head_dim"], c["linear_value_head_dim"])
                  for _ in range(L)]
        self.kv = [([], []) for _ in range(L)]
        self.pos = 0

    def gdn(self, l, x):
        c, p = self.c, f"layers.{l}.linear_attn."
        W = lambda n: self.w[p + n]
        nk, nv, dk, dv = (c["linear_num_key_heads"], c["linear_num_value_heads"],
                          c["linear_key_head_dim"], c["linear_value_head_dim"])
        qkv = W("in_proj_qkv.weight") @ x
        z = (W("in_proj_z.weight") @ x).view(nv, dv)
        b = W("in_proj_b.weight") @ x
        a = W("in_proj_a.weight") @ x
        window = torch.cat([self.conv[l], qkv[:, None]], dim=1)          # [channels, kernel]
        self.conv[l] = window[:, 1:]
        mixed = silu((window * W("conv1d.weight")[:, 0, :]).sum(-1))
        q, k, v = torch.split(mixed, [nk * dk, nk * dk, nv * dv])
        rep = nv // nk
        q = q.view(nk, dk).repeat_interleave(rep, 0)
        k = k.view(nk, dk).repeat_interleave(rep, 0)
        v = v.view(nv, dv)
        q = l2norm(q) * (1.0 / math.sqrt(dk))
        k = l2norm(k)
        beta = torch.sigmoid(b)
        g = -torch.exp(W("A_log")) * torch.nn.functional.softplus(a + W("dt_bias"))
        S = self.S[l] * torch.exp(g)[:, None, None]
        d = (v - torch.einsum("hij,hi->hj", S, k)) * beta[:, None]
        S = S + k[:, :, None] * d[:, None, :]
        self.S[l] = S
        o = torch.einsum("hij,hi->hj", S, q)
        o = rmsnorm(o, W("norm.weight"), self.eps, zero_centred=False) * silu(z)
        return W("out_proj.weight") @ o.reshape(-1)

    def rope(self, x, pos):
        half = self.rot // 2
        inv = 1.0 / (self.theta ** (torch.arange(0, self.rot, 2, dtype=torch.float32) / self.rot))
        ang = torch.cat([pos * inv, pos * inv])
        cos, sin = torch.cos(ang), torch.sin(ang)
        r = x[..., :self.rot]
        rotated = torch.cat([-r[..., half:], r[..., :half]], dim=-1)
        return torch.cat([r * cos + rotated * sin, x[..., self.rot:]], dim=-1)

    def attention(self, l, x):
        c, p = self.c, f"layers.{l}.self_attn."
        W = lambda n: self.w[p + n]
        nh, nkv, D = c["num_attention_heads"], c["num_key_value_heads"], c["head_dim"]
        qg = (W("q_proj.weight") @ x).view(nh, 2 * D)
        q, gate = qg[:, :D], qg[:, D:]
        k = (W("k_proj.weight") @ x).view(nkv, D)
        v = (W("v_proj.weight") @ x).view(nkv, D)
        q = self.rope(rmsnorm(q, W("q_norm.weight"), self.eps), self.pos)
        k = self.rope(rmsnorm(k, W("k_norm.weight"), self.eps), self.pos)
        keys, values = self.kv[l]
        keys.append(k)
        values.append(v)
        K = torch.stack(keys, 1).repeat_interleave(nh // nkv, 0)   # [nh, T, D]
        V = torch.stack(values, 1).repeat_interleave(nh // nkv, 0)
        att = torch.softmax(torch.einsum("hd,htd->ht", q, K) * D ** -0.5, dim=-1)
        o = torch.einsum("ht,htd->hd", att, V) * torch.sigmoid(gate)
        return W("o_proj.weight") @ o.reshape(-1)

    def step(self, token):
        x = self.w["embed_tokens.weight"][token].clone()
        for l, kind in enumerate(self.c["layer_types"]):
            p = f"layers.{l}."
            n = rmsnorm(x, self.w[p + "input_layernorm.weight"], self.eps)
            x = x + (self.attention(l, n) if kind == "full_attention" else self.gdn(l, n))
            m = rmsnorm(x, self.w[p + "post_attention_layernorm.weight"], self.eps)
            mlp = self.w[p + "mlp.down_proj.weight"] @ (
                silu(self.w[p + "mlp.gate_proj.weight"] @ m) * (self.w[p + "mlp.up_proj.weight"] @ m))
            x = x + mlp
        self.pos += 1
        return self.lm_head @ rmsnorm(x, self.w["norm.weight"], self.eps)


def run(args):
    torch.set_num_threads(2)
    ref = Reference(args.dir)
    tokens = [int(t) for t in args.tokens.split()]
    logits, states = [], []
    for t in tokens:
        logits.append(ref.step(t))
        states += [ref.S[l].clone() for l, k in enumerate(ref.c["layer_types"]) if k == "linear_attention"]
    with open(args.out, "wb") as f:
        f.write(torch.stack(logits).contiguous().numpy().astype("<f4").tobytes())
        for s in states:
            f.write(s.contiguous().numpy().astype("<f4").tobytes())


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("make")
    m.add_argument("dir")
    m.add_argument("--size", default="tiny", choices=["tiny", "2b"])
    m.add_argument("--layers", type=int, default=4)
    m.add_argument("--vocab", type=int, default=100)
    m.add_argument("--seed", type=int, default=0)
    m.add_argument("--dtype", default="f32", choices=list(DTYPES))
    m.add_argument("--layout", default="text", choices=["text", "vl"])
    m.add_argument("--shards", type=int, default=1)
    m.add_argument("--untied", action="store_true")
    m.add_argument("--sparse", action="store_true")
    m.add_argument("--tokens")
    m.add_argument("--out")
    r = sub.add_parser("run")
    r.add_argument("dir")
    r.add_argument("--tokens", required=True)
    r.add_argument("--out", required=True)
    args = ap.parse_args()
    torch.manual_seed(0)
    if args.cmd == "make":
        make(args)
    if args.cmd == "run" or args.tokens:
        run(args)


if __name__ == "__main__":
    main()
