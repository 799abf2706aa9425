"""docs/contact.md's flip-guard picture: the heavy MakeHuman shape (``gender=0.9,weight=0.9,muscle=0.2``) in the two
range-of-motion poses (seed 777, in no bake) where its part contact turned the most body triangles over, a hand
pressed into the torso. Columns: the joint planes only (``--no-part-contact``), the part contact without the flip
guard, and with it (the default). Skin colour, with the vertices of triangles turned over against the planes body
red (the rest light grey); seen from outside the body where the unguarded step turned triangles over.

Run: ``.venv/bin/python scripts/flip_guard_picture.py [OUT.png]`` (default ``docs/images/flip_guard.png``; an existing
file is replaced: this script writes the docs' own picture).
"""
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
from kisekae.avatar import load_builtin_avatar
from kisekae.avatar.contact import GAP, apply_contact
from kisekae.avatar.part_contact import part_contact
from kisekae.avatar.poses import range_of_motion_poses
from kisekae.avatar.shape import parse_body
from kisekae.render import materials as M
from kisekae.render.camera import Camera
from kisekae.render.renderer import default_renderer
from kisekae.render.scene import mesh_item
from kisekae.render.sheets import comparison_sheet

ROOT = Path(__file__).resolve().parent.parent
CELL = (420, 360)
POSES = (7, 33)

plain = load_builtin_avatar(shape=parse_body("gender=0.9,weight=0.9,muscle=0.2", "--body"))
planes = apply_contact(plain, GAP, part_contact=False)
fields = apply_contact(plain, GAP).body.deform.fields
unguarded = replace(fields, faces=None, vertex_faces=None)
faces = np.asarray(plain.body.mesh.faces)
renderer = default_renderer()
rom = range_of_motion_poses(plain.skeleton, max(POSES) + 1, seed=777)
columns = ("joint planes only", "part contact, no flip guard", "with the flip guard (default)")
rows, counts = [], []
for k in POSES:
    m = rom[k].skinning_matrices(plain.skeleton)
    x = planes.body.posed(m).astype(np.float64)
    bodies = (x, part_contact(x, unguarded, m), part_contact(x, fields, m))
    flipped = [np.dot((np.cross(b[faces[:, 1]] - b[faces[:, 0]], b[faces[:, 2]] - b[faces[:, 0]])
                       * np.cross(x[faces[:, 1]] - x[faces[:, 0]], x[faces[:, 2]] - x[faces[:, 0]])), np.ones(3)) < 0
               for b in bodies]
    counts.append([int(f.sum()) for f in flipped])
    moved = np.linalg.norm(bodies[1] - x, axis=1) > 1e-3
    focus = x[faces[flipped[1]].ravel()].mean(axis=0) if flipped[1].any() else x[moved].mean(axis=0)
    out_dir = focus - x.mean(axis=0)  # look at the spot from outside the body, a little from above
    out_dir[1] = 0.0
    out_dir /= np.linalg.norm(out_dir)
    cam = Camera(eye=tuple(focus + 0.45 * out_dir + np.array([0.0, 0.1, 0.0])), target=tuple(focus), fov_y=35.0)
    row = []
    for b, f in zip(bodies, flipped):
        hot = np.zeros(len(b), np.float32)
        hot[faces[f].ravel()] = 1.0
        item = mesh_item(plain.body.mesh, b.astype(np.float32), material=M.heatmap((-1.0, 1.0), "coolwarm"),
                         attributes={"heat": hot}, role="body")
        row.append(renderer.draw([item], cam, CELL).rgb)
    rows.append(row)
sheet = comparison_sheet(rows, row_labels=[f"heavy shape, range-of-motion {k}" for k in POSES], col_labels=list(columns),
                         cell_width=CELL[0], font_size=18,
                         title="The flip guard: body triangles the part contact turned over (red)")
out = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "docs" / "images" / "flip_guard.png"
sheet.save(out, optimize=True)
print(f"wrote {out}; triangles turned over (planes, no guard, guard), row by row: {counts}")
