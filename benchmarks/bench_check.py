#!/usr/bin/env python3
"""The penetration check per (pose, garment) on the built-in avatar.

Compares the BVH path (refit + hierarchical winding number + closest point + edge crossings)
with the brute-force NumPy winding number over all body triangles, measured in the same run.
Run: ``.venv/bin/python benchmarks/bench_check.py``.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _timing import measure, table  # noqa: E402

from kisekae.avatar.builtin import load_builtin_avatar  # noqa: E402
from kisekae.avatar.poses import VERIFICATION_POSES, named_pose  # noqa: E402
from kisekae.geom.winding import winding_number_numpy  # noqa: E402
from kisekae.qa import BodyQuery, BodyTopology, penetration_stats  # noqa: E402


def main():
    av = load_builtin_avatar()
    topo = BodyTopology.from_mesh(av.body.mesh.vertices, av.body.mesh.faces)
    rows = []
    for pose_name in VERIFICATION_POSES:
        m = named_pose(av.skeleton, pose_name).skinning_matrices(av.skeleton)
        body = av.body.posed(m)
        wall_refit, _ = measure(lambda: BodyQuery(topo, body), repeat=5)
        q = BodyQuery(topo, body)
        for g in ("tights", "skirt"):
            pts = av.garments[g].posed(m)
            edges = av.garments[g].mesh.edges
            wall, cpu = measure(lambda: penetration_stats(q, pts, edges), repeat=5)
            row = [pose_name, g, len(pts), f"{(wall + wall_refit) * 1e3:.1f}", f"{cpu * 1e3:.1f}"]
            if pose_name == "crouch":
                sub = pts[:200]
                bw, _ = measure(lambda: winding_number_numpy(sub, body, av.body.mesh.faces), repeat=1)
                brute = bw * len(pts) / len(sub)
                row += [f"{brute * 1e3:.0f}", f"{brute / (wall + wall_refit):.0f}x"]
            else:
                row += ["", ""]
            rows.append(row)
    print("kisekae check per (pose, garment), built-in avatar (target: <= 50 ms)")
    print("brute force = NumPy winding number over all 26,756 body triangles (inside test only), same run")
    print(table(rows, ["pose", "garment", "vertices", "check wall ms (incl. refit)", "cpu ms", "brute force ms",
                       "speed-up"]))


if __name__ == "__main__":
    main()
