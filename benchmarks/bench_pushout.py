"""Capsule push-out speed: 50,000 garment vertices x 48 capsules, one core.

Runs as a script and prints a table: NumPy reference, brute-force Numba and the one-call
``push_out_capsules`` (baselines, same run) against ``CapsulePushPlan.run`` (checks
done once per garment; per frame: float32 block-local pre-selection, float64 re-evaluation of the
nearest capsule for the vertices that may move), with all outputs, positions only, and positions
only in place. Wall and CPU time per frame, best of repeats, one thread (``NUMBA_NUM_THREADS=1``;
the kernels are serial anyway). The issue-3 gate is 1 ms per frame. Two garments:
``dress`` (a coherent mesh-like vertex order, clearances -3..+30 mm: a garment that mostly sits
off the body) and ``stress`` (random vertex order, clearances -10..+20 mm: most vertices in
contact). Then the built-in avatar's tights + skirt per pose (capsule mode, fitted rig).
"""

from __future__ import annotations

import os

os.environ.setdefault("NUMBA_NUM_THREADS", "1")

import time  # noqa: E402

import numpy as np  # noqa: E402

from kisekae.fit.pushout import (CapsulePushPlan, PushParams, push_out_capsules,  # noqa: E402
                                 push_out_reference, spatial_order)
from kisekae.fit.sdf import capsule_field_numba


def mannequin(c=48):
    """48 capsules laid out like a standing body (metres, +Y up)."""
    rng = np.random.default_rng(0)
    segs = []
    for i in range(8):  # torso column
        segs.append(([0, 0.9 + 0.07 * i, 0], [0, 0.97 + 0.07 * i, 0], 0.13 - 0.005 * i, 0.125 - 0.005 * i))
    for side in (-1, 1):
        x = 0.1 * side
        for i in range(6):  # leg chain
            segs.append(([x, 0.9 - 0.14 * i, 0], [x, 0.76 - 0.14 * i, 0.01], 0.08 - 0.008 * i, 0.075 - 0.008 * i))
        for i in range(6):  # arm chain
            segs.append(([0.2 * side + 0.09 * side * i, 1.4, 0], [0.29 * side + 0.09 * side * i, 1.39, 0], 0.045 - 0.004 * i, 0.042 - 0.004 * i))
        for i in range(4):  # hips, chest, shoulder, neck side
            y = 0.95 + 0.15 * i
            segs.append(([0.06 * side, y, 0.02], [0.09 * side, y + 0.1, 0.02], 0.09 - 0.01 * i, 0.085 - 0.01 * i))
        for i in range(4):  # hand / fingers
            segs.append(([0.74 * side, 1.39, -0.03 + 0.02 * i], [0.8 * side, 1.38, -0.03 + 0.02 * i], 0.01, 0.009))
    segs = segs[:c]
    a = np.array([s[0] for s in segs], float) + rng.normal(0, 1e-4, (len(segs), 3))
    b = np.array([s[1] for s in segs], float)
    return a, b, np.array([s[2] for s in segs]), np.array([s[3] for s in segs])


def garment(a, b, ra, rb, n, lo, hi, coherent, seed=1):
    rng = np.random.default_rng(seed)
    big = np.flatnonzero(ra > 0.03)  # dress the torso, legs and arms
    per = n // len(big) + 1
    pts = []
    for i in big:
        rings = int(np.sqrt(per))
        t = np.repeat(np.linspace(0, 1, rings), per // rings + 1)[:per]
        ang = np.tile(np.linspace(0, 2 * np.pi, per // rings + 1, endpoint=False), rings)[:per]
        u = (b[i] - a[i]) / np.linalg.norm(b[i] - a[i])
        e1 = np.cross(u, [0, 0, 1.0])
        e1 /= np.linalg.norm(e1)
        e2 = np.cross(u, e1)
        r = ra[i] + t * (rb[i] - ra[i]) + rng.uniform(lo, hi, per)
        c = a[i] + t[:, None] * (b[i] - a[i])
        pts.append(c + r[:, None] * (np.cos(ang)[:, None] * e1 + np.sin(ang)[:, None] * e2))
    p = np.concatenate(pts)[:n]
    if not coherent:
        p = p[rng.permutation(len(p))]
    return np.ascontiguousarray(p)


def best(fn, repeats):
    walls, cpus = [], []
    for _ in range(repeats):
        w0, c0 = time.perf_counter(), time.process_time()
        fn()
        walls.append(time.perf_counter() - w0)
        cpus.append(time.process_time() - c0)
    return 1e3 * min(walls), 1e3 * min(cpus)


def main():
    a, b, ra, rb = mannequin()
    params = PushParams()
    rows = []
    for name, lo, hi, coherent in (("dress", -0.003, 0.03, True), ("stress", -0.01, 0.02, False)):
        p = garment(a, b, ra, rb, 50_000, lo, hi, coherent)
        push_out_capsules(p, a, b, ra, rb, params)  # compile
        capsule_field_numba(p[:10], a, b, ra, rb)
        ref, push_r, _ = push_out_reference(p, a, b, ra, rb, params)
        out, push, _ = push_out_capsules(p, a, b, ra, rb, params)
        err = float(np.abs(out - ref).max())
        rows.append((name, "numpy reference", *best(lambda: push_out_reference(p, a, b, ra, rb, params), 2), ""))
        rows.append((name, "numba brute force (field only)", *best(lambda: capsule_field_numba(p, a, b, ra, rb), 5), ""))
        rows.append((name, "push_out_capsules, one call", *best(lambda: push_out_capsules(p, a, b, ra, rb, params), 30),
                     f"moved {100 * (push > 0).mean():.1f}%, max |diff| vs numpy {err:.1e} m"))
        order = spatial_order(p)  # once per garment, not per frame
        out_b, push_b, _ = push_out_capsules(p, a, b, ra, rb, params, order=order)
        err_b = float(np.abs(out_b - ref).max())
        rows.append((name, "push_out_capsules, one call, order given",
                     *best(lambda: push_out_capsules(p, a, b, ra, rb, params, order=order), 30),
                     f"moved {100 * (push_b > 0).mean():.1f}%, max |diff| vs numpy {err_b:.1e} m"))
        plan = CapsulePushPlan(p, params)  # once per garment
        out_p, push_p, _ = plan.run(p, a, b, ra, rb)
        err_p = max(float(np.abs(out_p - ref).max()), float(np.abs(push_p - push_r).max()))
        rows.append((name, "plan.run: points + push + d",
                     *best(lambda: plan.run(p, a, b, ra, rb), 100), f"max |diff| vs numpy {err_p:.1e} m"))
        rows.append((name, "plan.run: points only",
                     *best(lambda: plan.run(p, a, b, ra, rb, diagnostics=False), 100), ""))
        q = p.copy()

        def in_place():
            plan.run(q, a, b, ra, rb, out=q, diagnostics=False)
            q[:] = p  # restore for the next repeat (timed below and subtracted)

        in_place()
        w_r, c_r = best(lambda: q.__setitem__(slice(None), p), 100)
        w_i, c_i = best(in_place, 100)
        rows.append((name, "plan.run: points only, in place", w_i - w_r, c_i - c_r,
                     f"restore copy ({c_r:.3f} ms CPU) subtracted"))
    print(f"capsule push-out, {len(a)} capsules, 50,000 vertices, one core "
          f"(NUMBA_NUM_THREADS={os.environ.get('NUMBA_NUM_THREADS')}), best of N, per frame; gate 1 ms")
    print(f"{'garment':8s} {'method':34s} {'wall ms':>9s} {'cpu ms':>9s}  note")
    for r in rows:
        print(f"{r[0]:8s} {r[1]:34s} {r[2]:9.3f} {r[3]:9.3f}  {r[4]}")
    try:
        avatar_rows()
    except ImportError as exc:  # pragma: no cover
        print("built-in avatar not available:", exc)


def avatar_rows():
    from kisekae.avatar.builtin import load_builtin_avatar
    from kisekae.avatar.poses import named_pose
    from kisekae.fit.fitting import fit_capsules

    av = load_builtin_avatar()
    sk, body = av.skeleton, av.body
    rig = fit_capsules(body.mesh.vertices, body.skin.indices, body.skin.weights, sk.rest, sk.names,
                       faces=body.mesh.faces)
    print(f"\nbuilt-in avatar, medial-fitted rig ({len(rig)} capsules), tights + skirt capsule push per pose")
    print(f"{'pose':10s} {'vertices':>9s} {'call wall':>9s} {'call cpu':>9s} {'ord wall':>9s} {'ord cpu':>9s} "
          f"{'plan wall':>9s} {'plan cpu':>9s}  (ms)")
    for name in ("stand", "leg_raise", "crouch"):
        pose = named_pose(sk, name)
        m = pose.skinning_matrices(sk)
        a, b, ra, rb = rig.posed(pose.world_matrices(sk))
        xs = [av.part(g).posed(m) for g in ("tights", "skirt")]
        orders = [spatial_order(x) for x in xs]
        plans = [CapsulePushPlan(x) for x in xs]

        def run():
            for x in xs:
                push_out_capsules(x, a, b, ra, rb)

        def run_blocked():
            for x, o in zip(xs, orders):
                push_out_capsules(x, a, b, ra, rb, order=o)

        def run_plan():
            for x, pl in zip(xs, plans):
                pl.run(x, a, b, ra, rb)

        run()
        run_blocked()
        run_plan()
        w, c = best(run, 20)
        wb, cb = best(run_blocked, 20)
        wp, cp = best(run_plan, 50)
        print(f"{name:10s} {sum(len(x) for x in xs):9d} {w:9.2f} {c:9.2f} {wb:9.2f} {cb:9.2f} {wp:9.2f} {cp:9.2f}")


if __name__ == "__main__":
    main()
