"""Per-frame tension speed: Numba plan vs the NumPy bincount baseline, measured in the same run.

Run: ``.venv/bin/python benchmarks/bench_tension.py [--repeat N]``. Prints one table: per-frame
wall and CPU time (median of several batches, single thread) for

* a 224 x 224 grid (50,176 vertices) as triangles (149,633 edges) and as quads (99,904 edges),
* the built-in MakeHuman body (13,380 vertices, quad sides) and tights garment,

for the Numba kernel (:meth:`TensionPlan.evaluate` with preallocated outputs), the same with a
float64 input (conversion included) and the NumPy ``bincount`` reference
(:meth:`TensionPlan.evaluate_numpy`). The issue's target is 0.4 ms per frame for 50k vertices on
one core; Blender 5.0 Geometry Nodes needs about 4.3 ms for that job (DESIGN.md, measured
outside this script).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

os.environ.setdefault("NUMBA_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from kisekae.tension import TensionPlan, empty_result  # noqa: E402


def grid(n, h=0.01):
    xs, ys = np.meshgrid(np.arange(n) * h, np.arange(n) * h)
    pts = np.c_[xs.ravel(), ys.ravel(), np.zeros(n * n)].astype(np.float32)
    idx = np.arange(n * n).reshape(n, n)
    quads = np.c_[idx[:-1, :-1].ravel(), idx[:-1, 1:].ravel(), idx[1:, 1:].ravel(), idx[1:, :-1].ravel()]
    tris = np.r_[quads[:, [0, 1, 2]], quads[:, [0, 2, 3]]]
    return pts, quads.astype(np.int32), tris.astype(np.int32)


def timeit(fn, repeat, inner):
    fn()
    walls, cpus = [], []
    for _ in range(repeat):
        w0, c0 = time.perf_counter(), time.process_time()
        for _ in range(inner):
            fn()
        walls.append((time.perf_counter() - w0) / inner)
        cpus.append((time.process_time() - c0) / inner)
    return float(np.median(walls)) * 1e3, float(np.median(cpus)) * 1e3


def cases():
    pts, quads, tris = grid(224)
    rng = np.random.default_rng(0)
    bent = (pts + rng.normal(0, 0.001, pts.shape)).astype(np.float32)
    yield "grid 50k tris", pts, dict(faces=tris), bent
    yield "grid 50k quads", pts, dict(faces=quads), bent
    try:
        from kisekae.avatar.builtin import load_builtin_avatar
        from kisekae.avatar.poses import named_pose
    except ImportError:  # pragma: no cover
        return
    av = load_builtin_avatar()
    pose = named_pose(av.skeleton, "crouch")
    for part in ("body", "tights"):
        mesh = av.part(part).mesh
        yield f"avatar {part} (crouch)", mesh.vertices, dict(edges=mesh.edges, weld=mesh.weld), av.posed_vertices(part, pose)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=7, help="batches per measurement (median is reported)")
    args = ap.parse_args(argv)
    print(f"numpy {np.__version__}, python {sys.version.split()[0]}, NUMBA_NUM_THREADS={os.environ['NUMBA_NUM_THREADS']}")
    hdr = f"{'case':<24} {'verts':>7} {'edges':>7} {'plan ms':>8} | {'numba wall':>10} {'cpu':>6} | " \
          f"{'f64 in wall':>11} | {'numpy wall':>10} {'cpu':>6} | {'speed-up':>8}"
    print(hdr)
    print("-" * len(hdr))
    TensionPlan(*grid(3)[:2]).evaluate(grid(3)[0])  # load the compiled kernels before timing plans
    for name, rest, topo, deformed in cases():
        t0 = time.perf_counter()
        plan = TensionPlan(rest, **topo)
        plan_ms = (time.perf_counter() - t0) * 1e3
        out = empty_result(plan.n_vertices)
        d32 = np.ascontiguousarray(deformed, dtype=np.float32)
        d64 = d32.astype(np.float64)
        nb = timeit(lambda: plan.evaluate(d32, out), args.repeat, 200)
        nb64 = timeit(lambda: plan.evaluate(d64, out), args.repeat, 50)
        ref = timeit(lambda: plan.evaluate_numpy(d32), args.repeat, 5)
        a, b = plan.evaluate(d32), plan.evaluate_numpy(d32)
        assert np.allclose(a.ratio, b.ratio, rtol=1e-6) and np.allclose(a.color, b.color, atol=1e-5)
        print(f"{name:<24} {plan.n_vertices:>7} {len(plan.edges):>7} {plan_ms:>8.1f} | {nb[0]:>10.3f} {nb[1]:>6.3f} | "
              f"{nb64[0]:>11.3f} | {ref[0]:>10.3f} {ref[1]:>6.3f} | {ref[0] / nb[0]:>7.1f}x")
    print("times in ms per frame; 'plan' is the one-off rest-pose precompute (weld, edges, rest means).")
    return 0


if __name__ == "__main__":
    sys.exit(main())
