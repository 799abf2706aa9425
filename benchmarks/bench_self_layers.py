#!/usr/bin/env python3
"""What the self layers cost per frame (:mod:`kisekae.fit.self_layers`), beside plain skinning of the same garment.

For each garment of several sheets (default: both sample ``.mhclo`` suits on the built-in contact body), in the
crouch: the garment's per-frame result without the stage (``self_layers=False``) is the input, and the stage
(:func:`kisekae.fit.self_layers.self_layer_stage`: two push passes with their smoothing) is timed with the Numba
kernel and with the NumPy reference, beside plain Numba skinning of the garment in the same run (one core, best of
7, CPU time). Also printed: the vertices with candidates, the bake's time, and the garment's self-crossings in that
result and after the stage applied to it (in the per-frame path the stage runs inside the frame, before the edge
lift, so ``kisekae check --runtime`` reports a little less). The CPU's SIMD width is printed first.

Run: ``.venv/bin/python benchmarks/bench_self_layers.py [--pose crouch] [--garments A.mhclo,B.mhclo] [--json FILE]``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("NUMBA_NUM_THREADS", "1")
import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent))
from _timing import json_out, measure, table, write_json  # noqa: E402
from bench_frame import simd_report  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "src" / "kisekae" / "data" / "samples"
GARMENTS = (str(SAMPLES / "female_casualsuit01.mhclo"), str(SAMPLES / "male_worksuit01.mhclo"))


def main(argv=None) -> int:
    from kisekae.avatar import load_builtin_avatar
    from kisekae.avatar.contact import GAP, apply_contact
    from kisekae.avatar.poses import named_pose
    from kisekae.fit.runtime import garment_own_layers, garment_ring, runtime_pose
    from kisekae.fit.self_layers import self_layer_stage
    from kisekae.io.mhclo import add_garments
    from kisekae.qa.check import check_pose

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pose", default="crouch", help="named pose")
    ap.add_argument("--garments", default=",".join(GARMENTS), help="comma-separated .mhclo files")
    ap.add_argument("--json", metavar="FILE", help="write the rows (not overwritten)")
    args = ap.parse_args(argv)
    json_out(args.json, "bench_self_layers")
    for line in simd_report():
        print(line)
    av = apply_contact(load_builtin_avatar(), GAP)
    names = add_garments(av, args.garments.split(","))
    pose = named_pose(av.skeleton, args.pose)
    m = pose.skinning_matrices(av.skeleton)
    rows = []
    for name in names:
        t = time.perf_counter()
        own = garment_own_layers(av, name)
        bake_s = time.perf_counter() - t
        if own is None:
            print(f"{name}: one sheet, no self layers")
            continue
        ring = garment_ring(av, name)
        start = runtime_pose(av, pose, [name], self_layers=False)[name][0].astype(np.float64)
        self_layer_stage(start, *own, ring)  # compile
        numba_ms = measure(lambda: self_layer_stage(start, *own, ring))[1] * 1e3
        numpy_ms = measure(lambda: self_layer_stage(start, *own, ring, numpy=True), repeat=3)[1] * 1e3
        skin_ms = measure(lambda: av.part(name).posed(m))[1] * 1e3
        kept = self_layer_stage(start, *own, ring)
        before, after = (check_pose(av, pose, [name], posed_garments={name: p})[0]["self_crossings"]
                         for p in (start, kept))
        rows.append({"garment": name, "vertices": av.part(name).mesh.n_vertices, "with_candidates":
                     len(own[0].vertices), "bake_s": bake_s, "stage_numba_ms": numba_ms, "stage_numpy_ms": numpy_ms,
                     "skinning_ms": skin_ms, "self_crossings_without": before, "self_crossings_with": after})
    print(table([[r["garment"], r["vertices"], r["with_candidates"], f"{r['bake_s']:.2f}", f"{r['stage_numba_ms']:.3f}",
                  f"{r['stage_numpy_ms']:.1f}", f"{r['skinning_ms']:.3f}",
                  f"{r['self_crossings_without']} -> {r['self_crossings_with']}"] for r in rows],
                ["garment", "vertices", "with candidates", "bake s", "stage ms (Numba)", "stage ms (NumPy)",
                 "skinning ms (Numba)", f"self-crossings, {args.pose}"]))
    if args.json:
        write_json(args.json, {"pose": args.pose, "rows": rows})
    return 0


if __name__ == "__main__":
    sys.exit(main())
