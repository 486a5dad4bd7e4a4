#!/usr/bin/python3
"""`qgpu logits` end to end: a random checkpoint from reference.py, the CLI's
--dump (dense and --sparse) against the reference logits.

  logits_cli_test.py QGPU_BINARY SCRATCH_DIR
"""
import os
import shutil
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    qgpu, scratch = sys.argv[1], sys.argv[2]
    shutil.rmtree(scratch, ignore_errors=True)
    os.makedirs(scratch)
    ck, expected = os.path.join(scratch, "ck"), os.path.join(scratch, "expected.bin")
    tokens = "3 1 4 1 5 9 2 6"
    subprocess.run(["/usr/bin/python3", os.path.join(HERE, "reference.py"), "make", ck, "--layers", "4",
                    "--vocab", "80", "--seed", "11", "--untied", "--tokens", tokens, "--out", expected], check=True)
    ref = np.fromfile(expected, dtype="<f4")[:8 * 80].reshape(8, 80)
    for extra in ([], ["--sparse"]):
        dump = os.path.join(scratch, "dump.bin")
        out = subprocess.run([qgpu, "logits", "--model", ck, "--tokens", tokens, "--dump", dump] + extra,
                             check=True, capture_output=True, text=True).stdout
        ours = np.fromfile(dump, dtype="<f4").reshape(8, 80)
        diff = np.abs(ours - ref).max()
        print(f"qgpu logits {' '.join(extra)}: max |diff| to reference {diff:.3g}")
        assert diff <= 1e-4, diff
        lines = [l for l in out.splitlines() if l.startswith("pos ")]
        assert len(lines) == 8, out
        # The first listed id at each position is the argmax of the reference.
        for t, line in enumerate(lines):
            assert int(line.split(":")[1].split()[0]) == int(ref[t].argmax()), line
    bad = subprocess.run([qgpu, "logits", "--model", ck, "--tokens", "1 x"], capture_output=True, text=True)
    assert bad.returncode != 0 and '"x" is not a token id' in bad.stderr, bad.stderr
    shutil.rmtree(scratch)


if __name__ == "__main__":
    main()
