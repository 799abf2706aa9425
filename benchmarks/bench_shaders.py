"""Capsule push-out in the HLSL core on the GPU (Mesa llvmpipe here) against the CPU implementations.

Runs as a script and prints a table. Workload: the built-in avatar's tights + skirt (3,394 vertices)
in the poses stand, crouch and leg_raise, and the same garments repeated with jitter to 50,000
vertices, pushed out of the posed capsule rig of ``kisekae.fit.fit_capsules`` (quantile method, 62
capsules, fits the 64-entry constant arrays). Baselines in the same run:

* ``numpy``: :func:`kisekae.fit.pushout.push_out_reference` (the reference the core is checked against);
* ``numba``: :func:`kisekae.fit.pushout.push_out_capsules` (the blocked kernel of ``CapsulePushPlan``, one core).

GPU rows run ``KisekaePushOut`` through the conformance kernel (:func:`kisekae.shaders.execute.gpu_push_out`),
one row per data source. Their time is end to end: upload of points and rig, one compute dispatch,
readback. CPU time is the whole process (llvmpipe's worker threads included), so it shows the cost
on a busy machine. Best of N repeats after a warm-up (shader JIT excluded).
"""

from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from _timing import measure, table  # noqa: E402


def workloads():
    from kisekae.avatar import load_builtin_avatar
    from kisekae.avatar.poses import named_pose
    from kisekae.avatar.capsules import transform_capsules
    from kisekae.fit import fit_capsules

    av = load_builtin_avatar()
    b = av.body
    rig = fit_capsules(b.mesh.vertices, b.skin.indices, b.skin.weights, av.skeleton.rest)
    rng = np.random.default_rng(0)
    for pose_name in ("stand", "crouch", "leg_raise"):
        pose = named_pose(av.skeleton, pose_name)
        a, bb, ra, rb = transform_capsules(rig.bone, rig.p0, rig.p1, rig.r0, rig.r1, pose.world_matrices(av.skeleton))
        caps = np.column_stack([a, ra, bb, rb]).astype(np.float32)
        pts = np.concatenate([av.posed_vertices(g, pose) for g in av.garments]).astype(np.float32)
        yield pose_name, caps, pts
        reps = -(-50_000 // len(pts))
        big = (np.tile(pts, (reps, 1))[:50_000] + rng.normal(0, 0.005, (50_000, 3))).astype(np.float32)
        yield pose_name, caps, big


def main(repeat: int = 5):
    from kisekae.fit.pushout import PushParams, push_out_capsules, push_out_reference
    from kisekae.shaders import execute as X

    params = PushParams(smooth_iterations=0)
    rows = []
    for pose, caps, pts in workloads():
        c = caps.astype(np.float64)
        p64 = pts.astype(np.float64)
        ref, _, _ = push_out_reference(p64, c[:, 0:3], c[:, 4:7], c[:, 3], c[:, 7], params)
        base_w, base_c = measure(lambda: push_out_reference(p64, c[:, 0:3], c[:, 4:7], c[:, 3], c[:, 7], params),
                                 repeat=max(1, repeat // 2))
        label = f"{pose} {len(pts):,}"
        rows.append([label, "numpy reference (baseline)", f"{base_w * 1e3:.2f}", f"{base_c * 1e3:.2f}", "1.0x", "-"])
        w, cpu = measure(lambda: push_out_capsules(p64, c[:, 0:3], c[:, 4:7], c[:, 3], c[:, 7], params), repeat=repeat)
        rows.append([label, "numba push_out_capsules, one core", f"{w * 1e3:.2f}", f"{cpu * 1e3:.2f}", f"{base_w / w:.1f}x",
                     "-"])
        for source in ("constants", "texture", "structured"):
            got, _, _ = X.gpu_push_out(pts, caps, source=source)
            err = float(np.abs(got - ref).max())
            w, cpu = measure(lambda: X.gpu_push_out(pts, caps, source=source), repeat=repeat)
            rows.append([label, f"GPU llvmpipe, {source}", f"{w * 1e3:.2f}", f"{cpu * 1e3:.2f}", f"{base_w / w:.1f}x",
                         f"{err:.1e}"])
    print(f"capsule push-out, built-in avatar tights + skirt, {len(caps)} capsules (kisekae.fit.fit_capsules), "
          f"{os.cpu_count()} CPUs")
    print(table(rows, ["pose vertices", "method", "wall ms", "cpu ms", "vs numpy", "max |dp| m"]))
    print("max |dp|: largest position difference from the NumPy reference over all vertices (includes the few "
          "ill-conditioned points next to capsule axes)")


if __name__ == "__main__":
    main()
