"""docs/fit.md's self-layers picture: the sample ``female_casualsuit01`` on the built-in contact body in the stand pose,
around the waist, where the shirt's hem lies over the trousers' waistband lining. Columns: skinned, the per-frame
path without the self layers (``--no-self-layers``) and with them (the default). The garment in a heat colour: the
vertices of its edges that pass through its own faces red, the rest blue; the body in skin colour. Seen from the
front and from the back.

Run: ``.venv/bin/python scripts/self_layers_picture.py [OUT.png]`` (default ``docs/images/self_layers.png``; an existing
file is replaced: this script writes the docs' own picture).
"""
import sys
from pathlib import Path

import numpy as np
from kisekae.avatar import load_builtin_avatar
from kisekae.avatar.contact import GAP, apply_contact
from kisekae.avatar.poses import named_pose
from kisekae.fit.runtime import runtime_pose
from kisekae.geom.bvh import build_bvh, refit
from kisekae.geom.crossings import edge_crossings
from kisekae.io.mhclo import add_garments
from kisekae.render import materials as M
from kisekae.render.camera import Camera
from kisekae.render.renderer import default_renderer
from kisekae.render.scene import mesh_item
from kisekae.render.sheets import comparison_sheet

ROOT = Path(__file__).resolve().parent.parent
CELL = (420, 360)
SUIT = ROOT / "src" / "kisekae" / "data" / "samples" / "female_casualsuit01.mhclo"

av = apply_contact(load_builtin_avatar(), GAP)
name = add_garments(av, [str(SUIT)])[0]
mesh = av.part(name).mesh
pose = named_pose(av.skeleton, "stand")
m = pose.skinning_matrices(av.skeleton)
body = av.body.posed(m)
skinned = av.part(name).posed(m).astype(np.float64)
without = runtime_pose(av, pose, [name], self_layers=False)[name][0].astype(np.float64)
with_layers = runtime_pose(av, pose, [name])[name][0].astype(np.float64)
edges = np.asarray(mesh.edges)
faces = np.asarray(mesh.faces)


def crossing_heat(v):
    """1 on the vertices of the garment's edges through its own faces (not their own), else 0; and their count."""
    tree = build_bvh(v, faces)
    hit = edge_crossings(v, edges, tree, refit(tree, v, faces), exclude_incident=faces)
    heat = np.zeros(len(v), np.float32)
    heat[edges[hit].ravel()] = 1.0
    return heat, int(hit.sum())


renderer = default_renderer()
columns, counts = [], []
for label, v in (("skinned", skinned), ("per-frame path, --no-self-layers", without),
                 ("per-frame path, self layers (default)", with_layers)):
    heat, n = crossing_heat(v)
    columns.append((label, v, heat))
    counts.append(n)
waist = skinned[np.abs(skinned[:, 1] - 0.93) < 0.03].mean(axis=0)
rows = []
for side in (1.0, -1.0):  # from the front, then from the back
    cam = Camera(eye=tuple(waist + np.array([0.12 * side, 0.12, 0.42 * side])), target=tuple(waist), fov_y=40.0)
    row = []
    for _, v, heat in columns:
        items = [mesh_item(av.body.mesh, body, material=M.skin(), role="body"),
                 mesh_item(mesh, v.astype(np.float32), material=M.heatmap((0.0, 1.0), "coolwarm"),
                           attributes={"heat": heat}, role="garment")]
        row.append(renderer.draw(items, cam, CELL).rgb)
    rows.append(row)
sheet = comparison_sheet(rows, row_labels=["waist, front", "waist, back"],
                         col_labels=[f"{label}: {n} edges through the suit" for (label, _, _), n in zip(columns, counts)],
                         cell_width=CELL[0], font_size=16,
                         title="Self layers: the casual suit's hem kept over its waistband lining (red: edges through "
                               "the suit itself)")
out = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "docs" / "images" / "self_layers.png"
sheet.save(out, optimize=True)
print(f"wrote {out}; edges through the suit itself (skinned, without, with): {counts}")
