#!/usr/bin/python3
"""Trains a tiny byte-level BPE in Qwen's tokenizer.json format and writes the
expected pre-tokenizer pieces and ids for test strings, computed here
independently of the C++ tokenizer (Python's re engine runs the Qwen2
pattern, with the Unicode classes spelled out from unicodedata).

  make_tokenizer.py OUT_DIR  ->  OUT_DIR/tokenizer.json, OUT_DIR/cases.json
"""
import collections
import json
import os
import re
import sys
import unicodedata

QWEN2_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}"
                 r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
WHITE_SPACE = "\t\n\x0b\x0c\r \x85\xa0\u1680" + "".join(map(chr, range(0x2000, 0x200B))) + \
    "\u2028\u2029\u202f\u205f\u3000"


def category_class(major):
    out, start, prev = [], None, None
    for cp in range(0x110000):
        if unicodedata.category(chr(cp))[0] == major:
            if start is None:
                start = cp
            prev = cp
        elif start is not None:
            out.append(re.escape(chr(start)) + ("-" + re.escape(chr(prev)) if prev > start else ""))
            start = None
    return "".join(out)


def python_pattern():
    L, N = category_class("L"), category_class("N")
    S = "".join(re.escape(c) for c in WHITE_SPACE)
    return re.compile(rf"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n{L}{N}]?[{L}]+|[{N}]| ?[^{S}{L}{N}]+[\r\n]*"
                      rf"|[{S}]*[\r\n]+|[{S}]+(?![^{S}])|[{S}]+")


def bytes_to_unicode():
    printable = list(range(33, 127)) + list(range(161, 173)) + list(range(174, 256))
    mapping, extra = {}, 256
    for b in range(256):
        if b in printable:
            mapping[b] = chr(b)
        else:
            mapping[b] = chr(extra)
            extra += 1
    return mapping


CORPUS = """The quick brown fox jumps over the lazy dog. It's the dog's day, isn't it?
We'll see what they've done: 12345 apples and 678 oranges!!
    Indented code(x) { return x + 1; }
Unicode: naïve café, Straße, 数字, привет мир, γειά σου.
the the the these those there then than that this thin thing things
"""
SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
CASES = ["Hello world", "It's  a test's!!\n\n  ok", "数字123 and émigré", "\U0001F600 emoji\r\n\ttab",
         "<|im_start|>user\nhi there<|im_end|>\n", "don'T WE'LL", "   trailing   ", "a\u0301b", "x\n \n y",
         "the thing's thin, then that."]


def main():
    out = sys.argv[1]
    pat = python_pattern()
    b2u = bytes_to_unicode()
    words = collections.Counter(
        tuple(b2u[b] for b in piece.encode()) for piece in pat.findall(CORPUS))
    vocab = {}
    for b in sorted(b2u, key=lambda b: (b2u[b] != chr(b), b2u[b])):  # printable bytes first, like GPT-2
        vocab[b2u[b]] = len(vocab)
    merges = []
    for _ in range(150):
        pairs = collections.Counter()
        for w, n in words.items():
            for a, b in zip(w, w[1:]):
                pairs[(a, b)] += n
        if not pairs:
            break
        best = min(pairs, key=lambda p: (-pairs[p], p))
        merges.append(best)
        vocab[best[0] + best[1]] = len(vocab)
        merged = collections.Counter()
        for w, n in words.items():
            nw, i = [], 0
            while i < len(w):
                if i + 1 < len(w) and (w[i], w[i + 1]) == best:
                    nw.append(w[i] + w[i + 1])
                    i += 2
                else:
                    nw.append(w[i])
                    i += 1
            merged[tuple(nw)] += n
        words = merged
    added = [{"id": len(vocab) + i, "content": s, "single_word": False, "lstrip": False, "rstrip": False,
              "normalized": False, "special": True} for i, s in enumerate(SPECIALS)]
    tok = {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": added,
        "normalizer": {"type": "NFC"},
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": QWEN2_PATTERN}, "behavior": "Isolated", "invert": False},
            {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False}]},
        "post_processor": None,
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": "",
                  "end_of_word_suffix": "", "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                  "vocab": vocab, "merges": [a + " " + b for a, b in merges]},
    }
    rank = {m: i for i, m in enumerate(merges)}
    special = {a["content"]: a["id"] for a in added}

    def bpe(piece):
        syms = [b2u[b] for b in piece.encode()]
        while len(syms) > 1:
            ranked = [rank[p] for p in zip(syms, syms[1:]) if p in rank]
            if not ranked:
                break
            best = merges[min(ranked)]
            nw, i = [], 0
            while i < len(syms):
                if i + 1 < len(syms) and (syms[i], syms[i + 1]) == best:
                    nw.append(syms[i] + syms[i + 1])
                    i += 2
                else:
                    nw.append(syms[i])
                    i += 1
            syms = nw
        return [vocab[s] for s in syms]

    def encode(text):
        ids = []
        for part in re.split("(" + "|".join(map(re.escape, SPECIALS)) + ")", text):
            if part in special:
                ids.append(special[part])
            else:
                for piece in pat.findall(unicodedata.normalize("NFC", part)):  # the normalizer
                    ids += bpe(piece)
        return ids

    cases = [{"text": t, "nfc": unicodedata.normalize("NFC", t), "pieces": pat.findall(unicodedata.normalize("NFC", t)),
              "ids": encode(t)} for t in CASES]
    os.makedirs(out, exist_ok=True)
    json.dump(tok, open(os.path.join(out, "tokenizer.json"), "w"), ensure_ascii=False)
    json.dump(cases, open(os.path.join(out, "cases.json"), "w"), ensure_ascii=False)


if __name__ == "__main__":
    main()
