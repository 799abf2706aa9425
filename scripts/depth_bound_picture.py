"""docs/fit.md's depth-bound picture: the packaged walk (clip frames 1 to 2 slerped into 41 frames at 30 fps, the
``cmu_mb`` rig, the built-in skirt) through the per-frame path with and without the body's depth bound. Left: the
skirt's largest pop per frame (``pop_mm``). Right: the frame of the largest pop without the bound, the skirt drawn as
each path leaves it, seen from outside the hem vertex that jumped, coloured by how far each vertex jumped in that
frame.

Run: ``.venv/bin/python scripts/depth_bound_picture.py [OUT.png]`` (default ``docs/images/depth_bound_walk.png``; an
existing file is replaced: this script writes the docs' own picture).
"""
import sys
from pathlib import Path

import numpy as np

from _jump_picture import carry, jump_sheet, pop_plot, side_by_side
from kisekae.avatar import load_builtin_avatar
from kisekae.avatar.contact import GAP, apply_contact
from kisekae.io.bvh import load_bvh
from kisekae.render.animation import inbetween
from kisekae.render.camera import Camera

ROOT = Path(__file__).resolve().parent.parent

av = apply_contact(load_builtin_avatar("cmu_mb"), GAP)
sk = av.skeleton
clip = load_bvh(ROOT / "src" / "kisekae" / "data" / "samples" / "cmu_35_01_excerpt.bvh", sk)
poses = inbetween(list(clip.poses[1:3]), 40)
runs = {"without": carry(av, poses, "skirt", depth_bound=False),
        "with the depth bound": carry(av, poses, "skirt", depth_bound=True)}
worst = int(np.argmax(runs["without"][0]))
plot = pop_plot({"without the depth bound": runs["without"], "with the depth bound": runs["with the depth bound"]},
                "skirt's largest pop (mm)", "Packaged walk, mid-stride: per-frame skirt pops")
pose = poses[worst]
body = av.body.posed(pose.skinning_matrices(sk))
vertex = int(np.argmax(runs["without"][1][worst][1]))
# look at the hem vertex from outside, 0.9 m away along its horizontal direction from the body's axis
target = runs["with the depth bound"][1][worst][0][vertex]
out_dir = target - body.mean(axis=0)
out_dir[1] = 0.0
out_dir /= np.linalg.norm(out_dir)
cam = Camera(eye=tuple(target + 0.9 * out_dir + np.array([0.0, 0.15, 0.0])), target=tuple(target), fov_y=25.0)
sheet = jump_sheet(av, "skirt", pose, runs, worst, cam, "The skirt's jump this frame (blue 0, red 10 mm and more)")
out = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "docs" / "images" / "depth_bound_walk.png"
side_by_side(plot, sheet).save(out, optimize=True)
print(f"wrote {out}: frame {worst}, vertex {vertex}, pops {runs['without'][0].max():.1f} -> "
      f"{runs['with the depth bound'][0].max():.1f} mm")
