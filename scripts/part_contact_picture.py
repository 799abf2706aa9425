"""docs/contact.md's part-contact picture: parts that meet away from any joint they share, under the contact body
without the part contact (``--no-part-contact``) and with it (the default), with the body vertices buried in another
part glowing (``kisekae check --self-contact``'s ``body_buried``). Rows: ``benchmarks/poses_contact/feet_together`` (thighs turned 12° inwards: the feet press into each other)
and two range-of-motion poses (seed 777, in no bake): 27, an upper arm driven into the chest, and 39, the thighs,
each seen from in front of where the part contact moves the body.

Run: ``.venv/bin/python scripts/part_contact_picture.py [OUT.png]`` (default ``docs/images/part_contact.png``; an
existing file is replaced: this script writes the docs' own picture).
"""
import sys
from pathlib import Path

import numpy as np
from kisekae.avatar import load_builtin_avatar
from kisekae.avatar.contact import GAP, apply_contact
from kisekae.avatar.poses import load_pose_file, range_of_motion_poses
from kisekae.qa.check import body_self_contact
from kisekae.render import materials as M
from kisekae.render.camera import Camera
from kisekae.render.renderer import default_renderer
from kisekae.render.scene import mesh_item
from kisekae.render.sheets import comparison_sheet

ROOT = Path(__file__).resolve().parent.parent
CELL = (480, 360)

plain = load_builtin_avatar()
bodies = {"joint planes only (--no-part-contact)": apply_contact(plain, GAP, part_contact=False),
          "with the part contact (default)": apply_contact(plain, GAP)}
sk = plain.skeleton
rom = range_of_motion_poses(sk, 40, seed=777)
poses = {"feet together": load_pose_file(sk, ROOT / "benchmarks" / "poses_contact" / "feet_together.json"),
         "range-of-motion 27: arm into chest": rom[27], "range-of-motion 39: thighs": rom[39]}
renderer = default_renderer()
measure = body_self_contact(plain)
rows, counts = [], []
for label, pose in poses.items():
    m = pose.skinning_matrices(sk)
    first, last = (av.body.posed(m).astype(np.float64) for av in bodies.values())
    moved = np.linalg.norm(last - first, axis=1) > 1e-3
    focus = first[moved].mean(axis=0) if moved.any() else first.mean(axis=0)
    cam = Camera(eye=tuple(focus + np.array([0.0, 0.15, 0.75])), target=tuple(focus), fov_y=30.0)
    row = []
    for av in bodies.values():
        x = av.body.posed(m)
        hot = measure.buried(x)
        counts.append(int(hot.sum()))
        item = mesh_item(plain.body.mesh, x, material=M.heatmap((0.0, 1.0), "inferno"),
                         attributes={"heat": hot.astype(np.float32)}, role="body")
        row.append(renderer.draw([item], cam, CELL).rgb)
    rows.append(row)
sheet = comparison_sheet(rows, row_labels=list(poses), col_labels=list(bodies), cell_width=CELL[0], font_size=18,
                         title="Parts that share no joint: body vertices buried in another part (bright)")
out = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "docs" / "images" / "part_contact.png"
sheet.save(out, optimize=True)
print(f"wrote {out}; buried without / with, row by row: {counts}")
