"""Measure a shape-preserving garment fix candidate on the built-in avatar (research script, not the product).

Candidate ("smooth then project"): start from the skinned garment, then repeat 20 times: every vertex
closer to the body than the margin is projected to margin along its closest-point normal (or, with
``--march``, an inside vertex is marched out of the body's union along its skinned normal); the
displacement is smoothed by Jacobi passes over the garment's one-ring. Printed beside today's exact
solver (``kisekae.fit.fix.fix_pose``): inside, edge crossings and the shape fields of ``kisekae check``.
docs/fit.md reports the numbers.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import scipy.sparse as sp

from kisekae.avatar import load_builtin_avatar
from kisekae.avatar.poses import named_pose
from kisekae.fit.exact import march_out, signed_body_distance
from kisekae.fit.fix import fix_pose, skinned_normals
from kisekae.qa.check import body_topology, check_pose
from kisekae.qa.penetration import BodyQuery

COLUMNS = ("inside_count", "edge_crossings", "flipped_faces", "folded_pairs", "strain_p99", "strain_max",
           "self_crossings")


def smooth_then_project(query, x, normals, edges, margin, rounds, passes, march):
    """The candidate: (P, 3) corrected positions of skinned garment ``x``."""
    n = len(x)
    adj = sp.coo_matrix((np.ones(2 * len(edges)), (np.r_[edges[:, 0], edges[:, 1]], np.r_[edges[:, 1], edges[:, 0]])),
                        (n, n)).tocsr()
    deg = np.maximum(np.asarray(adj.sum(1)).ravel(), 1)
    disp = np.zeros_like(x)
    for r in range(rounds):
        y = x + disp
        d, nrm, inside = signed_body_distance(query, y)
        close = (d < margin) & ~(inside & march)
        disp[close] += (margin - d[close])[:, None] * nrm[close]
        if march and inside.any():
            exit_points = march_out(query, y[inside], normals[inside], 0.12)
            exit_points = exit_points[0] if isinstance(exit_points, tuple) else exit_points
            disp[inside] = exit_points + margin * normals[inside] - x[inside]
        if r < rounds - 1:
            for _ in range(passes):
                disp = 0.5 * disp + 0.5 * (adj @ disp) / deg[:, None]
    return x + disp


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--march", action="store_true", help="march inside vertices out of the body's union")
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--passes", type=int, default=5)
    args = ap.parse_args()
    av = load_builtin_avatar()
    print(f"{'pose':10s} {'garment':7s} {'solver':9s} {'ms':>6s} " + " ".join(f"{c:>15s}" for c in COLUMNS))
    for name in ("leg_raise", "crouch", "knee_bend", "sit"):
        pose = named_pose(av.skeleton, name)
        m = pose.skinning_matrices(av.skeleton)
        query = BodyQuery(body_topology(av), av.body.posed(m))
        for g in ("tights", "skirt"):
            part = av.part(g)
            t = time.perf_counter()
            y = smooth_then_project(query, part.posed(m).astype(np.float64), skinned_normals(part, m), part.mesh.edges,
                                    0.002, args.rounds, args.passes, args.march)
            ours_ms = (time.perf_counter() - t) * 1e3
            t = time.perf_counter()
            exact = fix_pose(av, pose, [g], query=query)[g].positions
            exact_ms = (time.perf_counter() - t) * 1e3
            for label, pos, ms in (("candidate", y, ours_ms), ("exact", exact, exact_ms)):
                rec = check_pose(av, pose, [g], posed_garments={g: np.asarray(pos, np.float32)})[0]
                print(f"{name:10s} {g:7s} {label:9s} {ms:6.0f} " + " ".join(f"{rec[c]:15.3g}" for c in COLUMNS))


if __name__ == "__main__":
    main()
