#!/usr/bin/env python3
"""Which kernels of a PTX module use floating point.

Usage: ptx_floats.py FILE.ptx...

For every .entry in the given PTX files, prints one line
    float|integer  <entry name>  <first floating-point evidence or ->
An entry counts as floating point when it, or any .func it calls
(transitively, through direct calls), declares a register of a
floating-point type (.f16, .f16x2, .bf16, .bf16x2, .f32, .f64) or executes an
instruction whose type suffix is floating point (add.f32, cvt.rn.f32.s32,
ld.global.f64, mma ... .f16, tex ... .f32, ...).
"""
import re
import sys

FLOAT_SUFFIX = re.compile(r"\.(f16x2|f16|bf16x2|bf16|f32|f64|tf32|e4m3|e5m2)\b")
FUNC_HEAD = re.compile(r"^\s*(?:\.visible\s+|\.weak\s+|\.extern\s+)*\.(entry|func)\s+(?:\([^)]*\)\s*)?([A-Za-z_$][\w$]*)")
CALL = re.compile(r"\bcall(?:\.uni)?\s+(?:\([^)]*\)\s*,\s*)?([A-Za-z_$][\w$]*)")


def split_functions(text):
    """Yields (kind, name, body) for every .entry/.func with a body."""
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        m = FUNC_HEAD.match(lines[i])
        if not m:
            i += 1
            continue
        kind, name = m.group(1), m.group(2)
        # The body starts at the first '{' after the header; a ';' first
        # means a declaration (prototype) only.
        j = i
        body = []
        depth = 0
        started = False
        while j < len(lines):
            line = lines[j]
            if not started:
                if "{" in line:
                    started = True
                elif line.rstrip().endswith(";") and j > i:
                    break
            if started:
                body.append(line)
                depth += line.count("{") - line.count("}")
                if depth <= 0:
                    break
            j += 1
        if started:
            yield kind, name, "\n".join(body)
        i = j + 1


def float_evidence(body):
    for line in body.splitlines():
        s = line.split("//", 1)[0].strip()
        if not s:
            continue
        if FLOAT_SUFFIX.search(s):
            return s
    return None


def analyse(text):
    funcs = {}
    entries = []
    for kind, name, body in split_functions(text):
        funcs[name] = (float_evidence(body), set(CALL.findall(body)))
        if kind == "entry":
            entries.append(name)
    result = []
    for e in entries:
        seen, stack, evidence = set(), [e], None
        while stack and evidence is None:
            f = stack.pop()
            if f in seen or f not in funcs:
                continue
            seen.add(f)
            ev, calls = funcs[f]
            if ev:
                evidence = ev if f == e else f"{f}: {ev}"
            stack.extend(calls)
        result.append((e, evidence))
    return result


def main(paths):
    for p in paths:
        with open(p, errors="replace") as fh:
            for entry, ev in analyse(fh.read()):
                print(f"{'float' if ev else 'integer'}\t{entry}\t{ev or '-'}")


if __name__ == "__main__":
    main(sys.argv[1:])
