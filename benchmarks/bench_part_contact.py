#!/usr/bin/env python3
"""The contact between body parts that share no joint (kisekae.avatar.part_contact) against plain Numba skinning.

Run: ``.venv/bin/python benchmarks/bench_part_contact.py``. For the built-in body (13,380 vertices) in two named
poses and two range-of-motion poses (seed 777) that press an arm into the chest and the thighs together: plain
Numba skinning (the baseline, same run), the body without the part contact (correctives, skinning, joint planes),
the command line's body (the same with the part contact after it), one ``part_step`` alone, the whole step
(two steps and the one-ring passes), and its NumPy reference. Best-of-N CPU time, one core; the CPU's SIMD width is
printed first.
"""

import os
import sys
from pathlib import Path

os.environ.setdefault("NUMBA_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).parent))
from _timing import measure, table  # noqa: E402
from bench_frame import simd_report  # noqa: E402

from kisekae.avatar.builtin import load_builtin_avatar  # noqa: E402
from kisekae.avatar.contact import GAP, apply_contact  # noqa: E402
from kisekae.avatar.part_contact import part_contact, part_step  # noqa: E402
from kisekae.avatar.poses import named_pose, range_of_motion_poses  # noqa: E402
from kisekae.avatar.skinning import lbs  # noqa: E402


def run(repeat: int = 15):
    """Rows ``[pose, skinning ms, default body ms, with part contact ms, ratio, step ms, whole step ms, NumPy ms,
    vertices moved]``."""
    av = load_builtin_avatar()
    sk = av.skeleton
    default = apply_contact(av, GAP, part_contact=False)  # correctives and joint planes
    parts = apply_contact(av, GAP)                         # the command line's body: the part contact last
    fields = parts.body.deform.fields
    b = av.body
    rom = range_of_motion_poses(sk, 40, seed=777)
    rows = []
    for pose in (named_pose(sk, "stand"), named_pose(sk, "crouch"), rom[27], rom[39]):
        m = pose.skinning_matrices(sk)
        x = default.body.posed(m)
        _, skin = measure(lambda: lbs(b.mesh.vertices, b.skin.indices, b.skin.weights, m), repeat=repeat, number=5)
        _, body = measure(lambda: default.body.posed(m), repeat=repeat, number=5)
        _, full = measure(lambda: parts.body.posed(m), repeat=repeat, number=5)
        _, step = measure(lambda: part_step(x, fields, m), repeat=repeat, number=5)
        _, whole = measure(lambda: part_contact(x, fields, m), repeat=repeat, number=5)
        _, ref = measure(lambda: part_contact(x, fields, m, numpy=True), repeat=3)
        moved = int((abs(parts.body.posed(m) - x).max(axis=1) > 0).sum())
        rows.append([pose.name, f"{skin * 1e3:.3f}", f"{body * 1e3:.3f}", f"{full * 1e3:.3f}", f"{full / skin:.2f}",
                     f"{step * 1e3:.3f}", f"{whole * 1e3:.3f}", f"{ref * 1e3:.1f}", str(moved)])
    return rows


def main():
    for line in simd_report():
        print(line)
    print(table(run(), ["pose", "skinning ms", "planes body ms", "default body ms", "ratio to skinning",
                        "part_step ms", "part_contact ms", "NumPy ms", "vertices moved"]))


if __name__ == "__main__":
    main()
