#!/usr/bin/env python3
"""The include graph of model_host, checked against its layers.

Each top-level folder of model_host/ is a layer; a file may include files of
its own layer or of a lower one, never of a higher one, and no group of files
may include itself round in a cycle. Run from anywhere:

    tools/check_layers/check_layers.py [--root CHECKOUT] [--graph]

Prints every violation (exit 1) or a one-line summary (exit 0); --graph also
prints the layer-to-layer include counts.
"""
import argparse
import os
import re
import sys
from collections import defaultdict

# Lowest first. A layer may include itself and any layer before it.
LAYERS = ["launch", "ptx", "machine", "lower", "qwen", "circuit", "tokens", "machine_circuit", "model_cache", "backends", "daemon", "chat"]
INCLUDE = re.compile(r'^\s*#\s*include\s*"(model_host/[^"]+)"', re.M)


def layer_of(path):
    parts = path.split("/")
    return parts[1] if len(parts) > 2 and parts[0] == "model_host" else None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    ap.add_argument("--graph", action="store_true")
    args = ap.parse_args()
    root = os.path.abspath(args.root)
    edges = defaultdict(set)
    files = []
    for dirpath, _, names in os.walk(os.path.join(root, "model_host")):
        for n in names:
            if n.endswith((".h", ".cpp", ".inc")):
                rel = os.path.relpath(os.path.join(dirpath, n), root)
                files.append(rel)
                with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as f:
                    for m in INCLUDE.finditer(f.read()):
                        edges[rel].add(m.group(1))
    problems = []
    counts = defaultdict(int)
    rank = {name: i for i, name in enumerate(LAYERS)}
    for src in sorted(edges):
        for dst in sorted(edges[src]):
            a, b = layer_of(src), layer_of(dst)
            if a not in rank:
                problems.append(f"{src}: its folder model_host/{a}/ is not a known layer (tools/check_layers)")
                continue
            if b not in rank:
                problems.append(f"{src} includes {dst}: model_host/{b}/ is not a known layer")
                continue
            if a != b:
                counts[(a, b)] += 1
            if rank[b] > rank[a]:
                problems.append(f"{src} includes {dst}: layer '{a}' reaches up to '{b}'")
    # Cycles among files (Tarjan's strongly connected components).
    index, low, stack, on, sccs = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                sccs.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(edges):
        if v not in index:
            visit(v)
    for comp in sccs:
        problems.append("include cycle: " + " <-> ".join(comp))
    if args.graph:
        for (a, b), n in sorted(counts.items(), key=lambda kv: (rank.get(kv[0][0], 99), rank.get(kv[0][1], 99))):
            print(f"{a} -> {b}: {n}")
    for p in problems:
        print(p)
    if problems:
        print(f"check_layers: {len(problems)} problems in {len(files)} files", file=sys.stderr)
        return 1
    print(f"check_layers: {len(files)} files, {sum(len(v) for v in edges.values())} includes, no upward include, no cycle")
    return 0


if __name__ == "__main__":
    sys.exit(main())
