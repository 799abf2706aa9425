"""The README's before/after picture: the tights in stand, leg_raise and the crouch (knees close-up), before and after
``kisekae check --fix`` (method auto, the default body: correctives and joint planes).

Run: ``.venv/bin/python scripts/readme_before_after.py [OUT.png]`` (default ``docs/images/before_after.png``).
"""
import sys
from pathlib import Path

import numpy as np
from PIL import Image
from kisekae.avatar import load_builtin_avatar
from kisekae.avatar.contact import GAP, apply_contact
from kisekae.avatar.poses import named_pose
from kisekae.fit.fix import fix_pose
from kisekae.render.camera import named_camera
from kisekae.render.renderer import default_renderer
from kisekae.render.scene import avatar_items, avatar_landmarks
from kisekae.render.sheets import comparison_sheet

av = apply_contact(load_builtin_avatar(), GAP)
r = default_renderer()
cols = (("stand", "three_quarter"), ("leg_raise", "three_quarter"), ("crouch", "knees"))
rows = [[], []]
for pname, view in cols:
    pose = named_pose(av.skeleton, pname)
    fixed = fix_pose(av, pose, ["tights"])
    lm = avatar_landmarks(av, pose)
    for i, pos in enumerate((None, {"tights": fixed["tights"].positions})):
        body, gs = avatar_items(av, pose, garments=["tights"], positions=pos)
        cam = named_camera(view, body.positions, 1.0, landmarks=lm)
        rows[i].append(r.draw([body, gs["tights"]], cam, (420, 420)).rgb)
    print(pname, fixed["tights"].metrics["fix_method"])
sheet = comparison_sheet(rows, row_labels=["before", "after --fix"], cell_width=420,
                         col_labels=["stand", "leg_raise", "crouch (knees)"],
                         title="tights before and after --fix: skin no longer shows through; in the crouch the cloth keeps its shape")
out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parents[1] / "docs/images/before_after.png"
Image.fromarray(np.asarray(sheet)).save(out, optimize=True)
print(f"wrote {out}")
