#!/usr/bin/env python3
"""Expand a compact qgpu model directory into the HF checkpoint it stands for.

  expand_compact.py COMPACT_DIR OUT_DIR [--sha256 HEX]

COMPACT_DIR holds config.json and a sparse side file, qgpu-sparse.bin (format
in model_host/qwen/checkpoint.h; qgpu-sparse.bin.xz or .gz are read too): what
`qgpu build-model --compact` writes, or those two files of a full model
directory (whose side file also lists file stamps, ignored here).  OUT_DIR
gets config.json and
model.safetensors, written the way model_host/qwen/safetensors.cpp writes
them (tensors in name order, "model." before every name but lm_head, a
compact sorted JSON header padded with spaces to 8 bytes, fp32 data), so the
file is byte for byte the one `qgpu build-model` writes beside the same
compact form.  Prints the file's SHA-256; with --sha256 exits 1 unless it is
that one.

Needs only numpy: it runs where the compiled model cannot be built (a GPU
machine with transformers but none of qgpu's build dependencies), from a
compact form a few tens of MB in size.  One difference is possible: the
side file leaves out -0.0 weights (they are zeros), which come back as +0.0;
the compiled GPU has none, and --sha256 would tell.
"""
import argparse
import gzip
import hashlib
import json
import lzma
import mmap
import os
import re
import struct
import sys
import time

import numpy as np

MAGIC = b"QGPUSPR1"
SIDE_FILE = "qgpu-sparse.bin"


def open_side_file(directory):
    """The side file's bytes: a memory map of the plain file, or the decompressed file."""
    plain = os.path.join(directory, SIDE_FILE)
    if os.path.exists(plain):
        if os.path.getsize(plain) == 0:
            raise SystemExit(f"expand_compact: {plain} is empty")
        with open(plain, "rb") as f:
            return mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    for ext, opener in ((".xz", lzma.open), (".gz", gzip.open)):
        if os.path.exists(plain + ext):
            try:
                with opener(plain + ext, "rb") as f:
                    return f.read()
            except (EOFError, OSError, lzma.LZMAError) as e:
                raise SystemExit(f"expand_compact: cannot decompress {plain + ext}: {e}")
    raise SystemExit(f"expand_compact: no {SIDE_FILE} (or .xz, .gz) in {directory}")


class SideFile:
    """The tensors of a side file: name -> (shape, element count, flat indices, fp32 values), as views."""

    def __init__(self, data):
        self.data, self.pos = data, 0
        if self.raw(8) != MAGIC:
            raise SystemExit("expand_compact: the side file does not start with " + MAGIC.decode())
        self.config_text = self.raw(self.u64()).decode()
        for _ in range(self.u64()):  # stamps of safetensors files (none in the compact form)
            self.raw(self.u64())
            self.u64()
            self.u64()
        self.tensors = {}
        for _ in range(self.u64()):
            name = self.raw(self.u64()).decode()
            ndim = struct.unpack("<I", self.raw(4))[0]
            shape = [self.u64() for _ in range(ndim)]
            nnz = self.u64()
            self.need(12 * nnz)
            index = np.frombuffer(self.data, dtype="<i8", count=nnz, offset=self.pos)
            self.pos += 8 * nnz
            value = np.frombuffer(self.data, dtype="<f4", count=nnz, offset=self.pos)
            self.pos += 4 * nnz
            numel = int(np.prod(shape, dtype=np.int64))
            if nnz and (index[0] < 0 or index[-1] >= numel or np.any(np.diff(index) <= 0)):
                raise SystemExit(f"expand_compact: tensor {name}: indices not ascending within its {numel} values")
            self.tensors[name] = (shape, numel, index, value)
        if self.pos != len(self.data):
            raise SystemExit(f"expand_compact: {len(self.data) - self.pos} bytes after the last tensor")

    def need(self, n):
        if self.pos + n > len(self.data):
            raise SystemExit("expand_compact: the side file is truncated")

    def raw(self, n):
        self.need(n)
        out = bytes(self.data[self.pos:self.pos + n])
        self.pos += n
        return out

    def u64(self):
        return struct.unpack("<Q", self.raw(8))[0]


def hf_name(name):
    return name if name == "lm_head.weight" else "model." + name


def expand(compact_dir, out_dir):
    side = SideFile(open_side_file(compact_dir))
    with open(os.path.join(compact_dir, "config.json")) as f:
        config_text = f.read()
    if config_text != side.config_text:
        raise SystemExit("expand_compact: config.json is not the one the side file was written with")
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "config.json"), "w") as f:
        f.write(config_text)

    tensors = sorted((hf_name(n), t) for n, t in side.tensors.items())
    header, offset = {"__metadata__": {"format": "pt"}}, 0
    for name, (shape, numel, _, _) in tensors:
        size = 4 * numel
        header[name] = {"data_offsets": [offset, offset + size], "dtype": "F32", "shape": shape}
        offset += size
    text = json.dumps(header, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
    text += b" " * ((8 - len(text) % 8) % 8)

    digest, path = hashlib.sha256(), os.path.join(out_dir, "model.safetensors")
    start, nnz = time.time(), 0
    with open(path, "wb") as out:
        for chunk in (struct.pack("<Q", len(text)), text):
            out.write(chunk)
            digest.update(chunk)
        for name, (_, numel, index, value) in tensors:
            flat = np.zeros(numel, dtype="<f4")
            flat[index] = value
            nnz += len(index)
            view = memoryview(flat).cast("B")
            out.write(view)
            digest.update(view)
    gib = (offset + len(text) + 8) / 2**30
    print(f"expand_compact: {len(tensors)} tensors, {nnz} non-zero values, {gib:.2f} GiB written to {path} "
          f"in {time.time() - start:.1f} s", flush=True)
    return digest.hexdigest()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("compact_dir")
    ap.add_argument("out_dir")
    ap.add_argument("--sha256", help="the SHA-256 model.safetensors must have")
    args = ap.parse_args()
    if args.sha256 is not None and not re.fullmatch(r"[0-9a-fA-F]{64}", args.sha256):
        ap.error(f"--sha256 {args.sha256!r} is not 64 hex digits")
    sha = expand(args.compact_dir, args.out_dir)
    print(f"expand_compact: model.safetensors sha256 {sha}")
    if args.sha256 is not None and sha != args.sha256.lower():
        print(f"expand_compact: expected sha256 {args.sha256}: the expansion differs from build-model's file")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
