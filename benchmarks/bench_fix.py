#!/usr/bin/env python3
"""Fixing the built-in avatar's tights + skirt per pose: time and result of each method, same run.

Methods: the Blender-Shrinkwrap re-implementation (nearest surface point, Outside, 2 mm; the
baseline), the capsule push-out (runtime path), capsules + skin-bound clearance, and the exact
solver (offline). For each: wall and CPU ms per pose for both garments, and vertices left inside
and edge crossings afterwards (by the penetration check).
Run: ``.venv/bin/python benchmarks/bench_fix.py``.
"""

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from _timing import table  # noqa: E402

from kisekae.avatar.builtin import load_builtin_avatar  # noqa: E402
from kisekae.avatar.poses import VERIFICATION_POSES, named_pose  # noqa: E402
from kisekae.fit import PushParams, fit_capsules, push_out_capsules  # noqa: E402
from kisekae.fit.bound import bind_to_skin, push_out_runtime  # noqa: E402
from kisekae.fit.fix import fix_pose  # noqa: E402
from kisekae.fit.shrinkwrap import shrinkwrap  # noqa: E402
from kisekae.qa import BodyQuery  # noqa: E402
from kisekae.qa.check import body_topology, check_pose  # noqa: E402

GARMENTS = ("tights", "skirt")


def timed(fn):
    w, c = time.perf_counter(), time.process_time()
    out = fn()
    return out, (time.perf_counter() - w) * 1e3, (time.process_time() - c) * 1e3


def main():
    av = load_builtin_avatar()
    b, sk = av.body, av.skeleton
    rig = fit_capsules(b.mesh.vertices, b.skin.indices, b.skin.weights, sk.rest, sk.names, faces=b.mesh.faces)
    binds = {g: bind_to_skin(av.garments[g].mesh.vertices, b.mesh.vertices, b.mesh.faces) for g in GARMENTS}
    params = PushParams()
    rows = []
    for pose_name in VERIFICATION_POSES:
        pose = named_pose(sk, pose_name)
        m = pose.skinning_matrices(sk)
        body = b.posed(m)
        q = BodyQuery(body_topology(av), body)
        x = {g: av.garments[g].posed(m) for g in GARMENTS}
        a, bb, ra, rb = rig.posed(pose.world_matrices(sk))
        push_out_capsules(x["tights"], a, bb, ra, rb, params)  # JIT warm-up

        def capsule():
            return {g: push_out_capsules(x[g], a, bb, ra, rb, params)[0] for g in GARMENTS}

        def bound():
            return {g: push_out_runtime(binds[g], x[g], (a, bb, ra, rb), body, b.mesh.faces, params)[0]
                    for g in GARMENTS}

        methods = [
            ("shrinkwrap nearest/outside 2 mm (baseline)", lambda: {g: shrinkwrap(q, x[g], 0.002) for g in GARMENTS}),
            ("capsule push-out (runtime)", capsule),
            ("capsules + skin-bound (runtime)", bound),
            ("exact union projection (offline)", lambda: {g: r.positions for g, r in fix_pose(av, pose, GARMENTS,
                                                                                             query=q).items()}),
        ]
        for name, fn in methods:
            out, wall, cpu = timed(fn)
            recs = check_pose(av, pose, list(GARMENTS), posed_garments=out)
            inside = " / ".join(str(r["inside_count"]) for r in recs)
            cross = " / ".join(str(r["edge_crossings"]) for r in recs)
            push = max(float(np.linalg.norm(out[g] - x[g], axis=1).max()) for g in GARMENTS)
            rows.append([pose_name, name, f"{wall:.1f}", f"{cpu:.1f}", inside, cross, f"{push * 1e3:.0f}"])
    print("Fix tights + skirt per pose, built-in avatar (inside / crossings: tights / skirt, by kisekae check)")
    print(table(rows, ["pose", "method", "wall ms", "cpu ms", "inside after", "crossings after", "max move mm"]))


if __name__ == "__main__":
    main()
