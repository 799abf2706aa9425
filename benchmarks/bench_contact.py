#!/usr/bin/env python3
"""The body's joint-plane contact (kisekae.avatar.contact) against plain Numba skinning, one core.

Run: ``.venv/bin/python benchmarks/bench_contact.py``. For the built-in body (13,380 vertices) in each
pose: plain Numba skinning (the baseline, same run), the contact step alone, skinning + contact from the rest mesh
(``BodyContact.pose``), its ratio (the issue's gate: at most 3x plain skinning), and the NumPy reference of the step;
then the command line's body without its last step, the part contact (``Avatar.body.posed``): the correctives'
features (one Numba call), the offsets and skinning in one loop, the contact step, and its ratio to plain skinning;
the same stages called one after the other through their public functions; last, the command line's whole body, the
part contact included (``benchmarks/bench_part_contact.py`` times that step alone and poses where parts meet), and its
ratio to plain skinning: the issue's gate is read on this one. Best-of-N CPU time; the CPU's SIMD width is printed first (AVX2 and
AVX-512 machines differ by up to 3x).
"""

import os
import sys
from pathlib import Path

os.environ.setdefault("NUMBA_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).parent))
from _timing import measure, table  # noqa: E402
from bench_frame import simd_report  # noqa: E402

from kisekae.avatar.builtin import load_builtin_avatar  # noqa: E402
from kisekae.avatar.contact import (GAP, BodyContact, apply_contact, contact_planes, contact_planes_numpy,  # noqa: E402
                                    joint_contact_of)
from kisekae.avatar.correctives import corrective_offsets, packaged_correctives  # noqa: E402
from kisekae.avatar.poses import named_pose  # noqa: E402
from kisekae.avatar.skinning import lbs  # noqa: E402


def run(poses=("stand", "knee_bend", "crouch"), repeat: int = 15):
    """Rows ``[pose, skinning ms, contact ms, skinning + contact ms (one pass), ratio, NumPy contact ms, features ms,
    body without the part contact ms, its ratio, stages one after another ms, the command line's body ms, its ratio]``
    (CPU time)."""
    av = load_builtin_avatar()
    b, sk = av.body, av.skeleton
    default = apply_contact(av, GAP, part_contact=False).body  # correctives, then the joint planes
    whole = apply_contact(av, GAP).body  # ... and the part contact: the command line's body
    planes = joint_contact_of(default.deform).planes
    contact = BodyContact(planes)
    corr = packaged_correctives(av)
    rows = []
    for name in poses:
        m = named_pose(sk, name).skinning_matrices(sk)
        x = lbs(b.mesh.vertices, b.skin.indices, b.skin.weights, m)
        _, skin = measure(lambda: lbs(b.mesh.vertices, b.skin.indices, b.skin.weights, m), repeat=repeat, number=5)
        _, step = measure(lambda: contact_planes(x, planes, m), repeat=repeat, number=5)
        _, both = measure(lambda: contact.pose(b.mesh.vertices, b.skin, m), repeat=repeat, number=5)
        _, ref = measure(lambda: contact_planes_numpy(x, planes, m), repeat=3)
        _, feat = measure(lambda: corr.features(sk, m), repeat=repeat, number=5)
        _, full = measure(lambda: default.posed(m), repeat=repeat, number=5)
        f = corr.features(sk, m)
        _, staged = measure(lambda: contact_planes(lbs(b.mesh.vertices + corrective_offsets(corr, f), b.skin.indices,
                                                       b.skin.weights, m), planes, m), repeat=repeat, number=5)
        _, cli = measure(lambda: whole.posed(m), repeat=repeat, number=5)
        rows.append([name, f"{skin * 1e3:.3f}", f"{step * 1e3:.3f}", f"{both * 1e3:.3f}", f"{both / skin:.2f}",
                     f"{ref * 1e3:.1f}", f"{feat * 1e3:.3f}", f"{full * 1e3:.3f}", f"{full / skin:.2f}",
                     f"{(staged + feat) * 1e3:.3f}", f"{cli * 1e3:.3f}", f"{cli / skin:.2f}"])
    return rows


def main():
    for line in simd_report():
        print(line)
    rows = run()
    print(table(rows, ["pose", "skinning ms", "contact ms", "skinning+contact ms (one pass)", "ratio (gate <= 3)",
                       "NumPy contact ms", "features ms", "without part contact ms (features + one pass)", "ratio",
                       "stages one by one ms", "command line's body ms", "ratio (gate <= 3)"]))


if __name__ == "__main__":
    main()
