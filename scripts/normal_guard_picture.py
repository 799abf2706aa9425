"""docs/fit.md's normal-guard picture: the tights carried from ``benchmarks/poses``' side split into its deep squat
(one second at 30 fps, the built-in avatar with its contact body) through the per-frame path with and without the
guarded body normals (:mod:`kisekae.geom.guarded_normals`). Left: the tights' largest pop per frame. Right: the
frame of the largest pop without the guard, seen from in front of the vertex that jumped, the tights coloured by how
far each vertex jumped in that frame.

Run: ``.venv/bin/python scripts/normal_guard_picture.py [OUT.png]`` (default ``docs/images/normal_guard_squat.png``;
an existing file is replaced: this script writes the docs' own picture).
"""
import sys
from pathlib import Path

import numpy as np

from _jump_picture import carry, jump_sheet, pop_plot, side_by_side
from kisekae.avatar import load_builtin_avatar
from kisekae.avatar.contact import GAP, apply_contact
from kisekae.avatar.poses import load_pose_file
from kisekae.render.animation import inbetween
from kisekae.render.camera import Camera

ROOT = Path(__file__).resolve().parent.parent

av = apply_contact(load_builtin_avatar(), GAP)
sk = av.skeleton
ends = [load_pose_file(sk, ROOT / "benchmarks" / "poses" / f"{name}.json") for name in ("side_split", "deep_squat")]
poses = inbetween(ends, 30)
runs = {"without": carry(av, poses, "tights", normal_guard=False),
        "with the guard": carry(av, poses, "tights", normal_guard=True)}
worst = int(np.argmax(runs["without"][0]))
plot = pop_plot({"every triangle": runs["without"], "guarded normals": runs["with the guard"]},
                "tights' largest pop (mm)", "Side split to deep squat: per-frame tights pops")
vertex = int(np.argmax(runs["without"][1][worst][1]))
target = runs["with the guard"][1][worst][0][vertex]
cam = Camera(eye=tuple(target + np.array([0.0, 0.1, 0.8])), target=tuple(target), fov_y=30.0)
sheet = jump_sheet(av, "tights", poses[worst], runs, worst, cam,
                   "The tights' jump this frame (blue 0, red 10 mm and more)")
out = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "docs" / "images" / "normal_guard_squat.png"
side_by_side(plot, sheet).save(out, optimize=True)
print(f"wrote {out}: frame {worst}, vertex {vertex}, pops {runs['without'][0].max():.1f} -> "
      f"{runs['with the guard'][0].max():.1f} mm")
