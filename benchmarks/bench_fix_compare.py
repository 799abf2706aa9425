#!/usr/bin/env python3
"""Plain skinning, the Shrinkwrap re-implementation and today's fix, side by side per pose and garment.

For each (pose, garment) of the built-in avatar, in the same run:

- ``skinning``: plain linear blend skinning (Numba), the garment as the engine leaves it;
- ``shrinkwrap``: :func:`kisekae.fit.shrinkwrap.shrinkwrap` (Blender's Nearest Surface Point, Outside,
  2 mm offset) applied to the skinned garment;
- ``fix``: :func:`kisekae.fit.fix.fix_pose`, what ``kisekae check --fix`` runs (skinning included);
- ``shape``: the same call with ``method="shape"`` (:mod:`kisekae.fit.shape_solve`, ``--fix-method shape``);
- ``runtime``: ``method="runtime"``, the per-frame path's result finished where it clips (``--fix-method runtime``);
- ``auto``: the default, what ``kisekae check --fix`` runs.

The fix's first call per garment bakes the garment's surface candidates (or reads them from the disk cache,
:mod:`kisekae.bake_cache`); that happens in the warm-up, outside the timings.

With ``--contact`` the avatar's body is the command line's default body (pose-space correctives and joint planes,
:func:`kisekae.avatar.contact.apply_contact`); with ``--planes`` the joint planes alone
(:meth:`Avatar.with_body_contact`).

Columns: wall and CPU time per (pose, garment) in ms (skinning and Shrinkwrap best of 5; the fix,
which takes seconds, timed once after a warm-up); then what :func:`kisekae.qa.check.check_pose` says
about the result: vertices inside the body, garment edges through the body, and the shape fields
relative to the skinned garment (flipped faces, folded face pairs, edge strain p99 and max, edges
through the garment's own faces, zero-area faces), and the largest move from the skinned position.
The posed body's BVH (shared by Shrinkwrap and the fix) is built once per pose, outside the timings.

Run: ``.venv/bin/python benchmarks/bench_fix_compare.py [--poses stand,crouch] [--pose-files a.json,b.json]
[--garments tights] [--contact]``; ``benchmarks/poses/`` holds poses outside the named set (deep squat, kneel, high
kick, wide squat, side split, reach, bow, side bend).
One core: ``NUMBA_NUM_THREADS=1`` is set unless given.
"""

from __future__ import annotations

import argparse
import os

os.environ.setdefault("NUMBA_NUM_THREADS", "1")

import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent))
from _timing import measure, table  # noqa: E402
from bench_frame import simd_report  # noqa: E402

from kisekae.avatar.builtin import load_builtin_avatar  # noqa: E402
from kisekae.avatar.poses import load_pose_file, named_pose  # noqa: E402
from kisekae.fit.fix import fix_pose  # noqa: E402
from kisekae.fit.shrinkwrap import shrinkwrap  # noqa: E402
from kisekae.qa import BodyQuery  # noqa: E402
from kisekae.qa.check import body_topology, check_pose  # noqa: E402

POSES = ("stand", "leg_raise", "crouch", "knee_bend", "sit")
GARMENTS = ("tights", "skirt")
#: Shrinkwrap's offset (m), as the Blender set-up it stands for.
SHRINKWRAP_OFFSET = 0.002
HEADERS = ["pose", "garment", "method", "wall ms", "cpu ms", "inside", "crossings", "flipped", "folded",
           "strain p99", "strain max", "self-x", "zero-area", "max move mm"]


def _once(fn):
    w, c = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - w, time.process_time() - c


def compare(avatar, poses=POSES, garments=GARMENTS, repeat: int = 5) -> list:
    """Rows of the comparison table (see the module docstring), six per (pose, garment).

    Parameters
    ----------
    avatar : kisekae.avatar.Avatar
    poses : names of :data:`kisekae.avatar.poses.NAMED_POSES`, or paths of JSON pose files (ending in ``.json``)
    garments : garment names of ``avatar``
    repeat : best-of count for the fast methods

    Returns
    -------
    list of rows (lists of str), in :data:`HEADERS` order.
    """
    sk = avatar.skeleton
    topo = body_topology(avatar)
    def load(name):
        return load_pose_file(sk, name) if str(name).endswith(".json") else named_pose(sk, name)

    for method in ("exact", "shape"):  # warm-up: Numba kernels of the solvers
        fix_pose(avatar, load(poses[0]), [garments[0]], method=method)
    for g in garments:  # warm-up: the per-frame path's kernels and each garment's surface candidates
        fix_pose(avatar, load(poses[0]), [g], method="runtime")
    rows = []
    for pose_name in poses:
        pose = load(pose_name)
        pose_name = Path(str(pose_name)).stem
        m = pose.skinning_matrices(sk)
        query = BodyQuery(topo, avatar.body.posed(m))
        for g in garments:
            part = avatar.part(g)
            skinned = part.posed(m)
            results = {}
            wall, cpu = measure(lambda: part.posed(m), repeat=repeat)
            results["skinning"] = (skinned, wall, cpu)
            wall, cpu = measure(lambda: shrinkwrap(query, skinned, SHRINKWRAP_OFFSET), repeat=repeat)
            results["shrinkwrap"] = (shrinkwrap(query, skinned, SHRINKWRAP_OFFSET), wall, cpu)
            for label, method in (("exact", "exact"), ("shape", "shape"), ("runtime", "runtime"), ("auto", "auto")):
                fixed, wall, cpu = _once(lambda: fix_pose(avatar, pose, [g], query=query, method=method))
                results[label] = (fixed[g].positions, wall, cpu)
            for method, (pts, wall, cpu) in results.items():
                rec = check_pose(avatar, pose, [g], posed_garments={g: pts})[0]
                move = float(np.linalg.norm(np.asarray(pts, np.float64) - skinned, axis=1).max(initial=0.0))
                rows.append([pose_name, g, method, f"{wall * 1e3:.2f}", f"{cpu * 1e3:.2f}", rec["inside_count"],
                             rec["edge_crossings"], rec["flipped_faces"], rec["folded_pairs"],
                             f"{rec['strain_p99']:.3f}", f"{rec['strain_max']:.3f}", rec["self_crossings"],
                             rec["zero_area_faces"], f"{move * 1e3:.1f}"])
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--poses", default=",".join(POSES), help="comma-separated named poses")
    ap.add_argument("--pose-files", default="", help="comma-separated JSON pose files (e.g. benchmarks/poses/*.json)")
    ap.add_argument("--garments", default=",".join(GARMENTS), help="comma-separated garments of the built-in avatar")
    ap.add_argument("--repeat", type=int, default=5, help="best-of count for skinning and Shrinkwrap")
    body = ap.add_mutually_exclusive_group()
    body.add_argument("--contact", action="store_true",
                      help="on the command line's default body: correctives and joint planes (docs/contact.md)")
    body.add_argument("--planes", action="store_true", help="on the joint planes alone, without the correctives")
    args = ap.parse_args(argv)
    poses = [p for p in args.poses.split(",") if p] + [p for p in args.pose_files.split(",") if p]
    garments = [g for g in args.garments.split(",") if g]
    avatar = load_builtin_avatar()
    if args.contact:
        from kisekae.avatar.contact import GAP, apply_contact

        avatar = apply_contact(avatar, GAP)
    elif args.planes:
        avatar = avatar.with_body_contact()
    rows = compare(avatar, poses, garments, repeat=args.repeat)
    body = ("default body (correctives + joint planes)" if args.contact else
            "joint planes alone" if args.planes else "plain skinning's body")
    print(f"plain skinning vs Shrinkwrap (nearest point, Outside, {SHRINKWRAP_OFFSET * 1e3:g} mm) vs fix_pose "
          f"(exact, shape, runtime, auto) on the {body}, "
          f"built-in avatar, one core (NUMBA_NUM_THREADS={os.environ.get('NUMBA_NUM_THREADS')}); "
          "counts by kisekae check, shape fields relative to the skinned garment")
    for line in simd_report():
        print(line)
    print(table(rows, HEADERS))
    return rows


if __name__ == "__main__":
    main()
