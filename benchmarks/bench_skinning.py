#!/usr/bin/env python3
"""Linear blend skinning of the built-in avatar (body + garments): NumPy reference vs Numba kernel.

Run: ``.venv/bin/python benchmarks/bench_skinning.py``. Prints best-of-N wall and CPU time per
frame; the NumPy reference, measured in the same run, is the baseline.
"""

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from _timing import measure, table  # noqa: E402

from kisekae.avatar.builtin import load_builtin_avatar  # noqa: E402
from kisekae.avatar.poses import named_pose  # noqa: E402
from kisekae.avatar.skinning import lbs, lbs_numpy  # noqa: E402


def main():
    av = load_builtin_avatar()
    m = named_pose(av.skeleton, "crouch").skinning_matrices(av.skeleton)
    parts = [av.body] + list(av.garments.values())
    v = np.concatenate([p.mesh.vertices for p in parts])
    idx = np.concatenate([p.skin.indices for p in parts])
    w = np.concatenate([p.skin.weights for p in parts])
    rows = []
    base = None
    for name, fn in (("numpy (baseline)", lbs_numpy), ("numba", lbs)):
        wall, cpu = measure(lambda: fn(v, idx, w, m), repeat=9)
        base = base or wall
        rows.append([name, len(v), idx.shape[1], f"{wall * 1e3:.2f}", f"{cpu * 1e3:.2f}", f"{base / wall:.1f}x"])
    print(f"Linear blend skinning, built-in avatar body + tights + skirt, crouch pose")
    print(table(rows, ["method", "vertices", "influences", "wall ms", "cpu ms", "speed-up"]))


if __name__ == "__main__":
    main()
