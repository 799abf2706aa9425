"""docs/contact.md's elbow picture: the right elbow in two poses of ``benchmarks/poses_more``, under plain skinning,
the joint planes across the child bone (the body before 2026-12-07) and the default body (the rest-bend plane), with
the body vertices buried in another part glowing (``kisekae check --self-contact``'s ``body_buried``).

Run: ``.venv/bin/python scripts/elbow_rest_bend_picture.py [OUT.png]`` (default ``docs/images/elbow_rest_bend.png``;
an existing file is replaced: this script writes the docs' own picture).
"""
import sys
from pathlib import Path

import numpy as np
from kisekae.avatar import load_builtin_avatar
from kisekae.avatar.contact import GAP, apply_contact
from kisekae.avatar.poses import load_pose_file
from kisekae.qa.check import body_self_contact
from kisekae.render import materials as M
from kisekae.render.camera import named_camera
from kisekae.render.renderer import default_renderer
from kisekae.render.scene import mesh_item
from kisekae.render.sheets import comparison_sheet

ROOT = Path(__file__).resolve().parent.parent
CELL = (480, 360)

plain = load_builtin_avatar()
bodies = {"plain skinning": plain,
          "planes across the child (before)": apply_contact(plain, GAP, rest_bend_limit=0.0),
          "rest-bend plane (now)": apply_contact(plain, GAP)}
sk = plain.skeleton
renderer = default_renderer()
measure = body_self_contact(plain)
rows = []
for name in ("forearm_90", "run_stride"):
    pose = load_pose_file(sk, ROOT / "benchmarks" / "poses_more" / f"{name}.json")
    m = pose.skinning_matrices(sk)
    elbow = pose.world_matrices(sk)[sk.names.index("lowerarm_r")][:3, 3]
    row = []
    for av in bodies.values():
        x = av.body.posed(m)
        item = mesh_item(plain.body.mesh, x, material=M.heatmap((0.0, 1.0), "inferno"),
                         attributes={"heat": measure.buried(x).astype(np.float32)}, role="body")
        cam = named_camera("armpits", x, CELL[0] / CELL[1], landmarks={"armpits": elbow[None]})
        row.append(renderer.draw([item], cam, CELL).rgb)
    rows.append(row)
sheet = comparison_sheet(rows, row_labels=["forearm 90°", "running stride"], col_labels=list(bodies),
                         cell_width=CELL[0], font_size=18,
                         title="Right elbow: body vertices buried in another part (bright)")
out = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "docs" / "images" / "elbow_rest_bend.png"
sheet.save(out, optimize=True)
print(f"wrote {out}")
