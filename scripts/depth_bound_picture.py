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

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from PIL import Image  # noqa: E402

from kisekae.avatar import load_builtin_avatar  # noqa: E402
from kisekae.avatar.contact import GAP, apply_contact  # noqa: E402
from kisekae.fit.carry import CarryState  # noqa: E402
from kisekae.fit.runtime import pop_mm, runtime_pose  # noqa: E402
from kisekae.io.bvh import load_bvh  # noqa: E402
from kisekae.render import materials as M  # noqa: E402
from kisekae.render.animation import inbetween  # noqa: E402
from kisekae.render.camera import Camera  # noqa: E402
from kisekae.render.renderer import default_renderer  # noqa: E402
from kisekae.render.scene import mesh_item  # noqa: E402
from kisekae.render.sheets import comparison_sheet  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
CELL = (420, 420)

av = apply_contact(load_builtin_avatar("cmu_mb"), GAP)
sk = av.skeleton
clip = load_bvh(ROOT / "src" / "kisekae" / "data" / "samples" / "cmu_35_01_excerpt.bvh", sk)
poses = inbetween(list(clip.poses[1:3]), 40)
skirt = av.part("skirt")
runs = {}
for bound in (False, True):
    state, previous, pops, frames = CarryState(), None, [], []
    for pose in poses:
        y = runtime_pose(av, pose, ["skirt"], state=state, depth_bound=bound)["skirt"][0].astype(np.float64)
        correction = y - skirt.posed(pose.skinning_matrices(sk))
        pops.append(0.0 if previous is None else pop_mm(previous, correction))
        jumps = np.zeros(len(y)) if previous is None else np.linalg.norm(correction - previous, axis=1)
        frames.append((y, jumps))
        previous = correction
    runs[bound] = (np.array(pops), frames)
worst = int(np.argmax(runs[False][0]))

fig, ax = plt.subplots(figsize=(6.0, 4.2), dpi=100)
for bound, style in ((False, "C3-"), (True, "C0-")):
    ax.plot(np.arange(len(poses)), runs[bound][0], style, lw=2,
            label=f"{'with' if bound else 'without'} the depth bound (largest {runs[bound][0].max():.1f} mm)")
ax.axhline(5.0, color="0.5", ls="--", lw=1, label="issue 16: 5 mm at 30 fps")
ax.set_xlabel("frame (30 fps)")
ax.set_ylabel("skirt's largest pop (mm)")
ax.set_title("Packaged walk, mid-stride: per-frame skirt pops")
ax.legend(loc="upper left", fontsize=8)
fig.tight_layout()
fig.canvas.draw()
plot = Image.fromarray(np.asarray(fig.canvas.buffer_rgba())[:, :, :3])
plt.close(fig)

renderer = default_renderer()
pose = poses[worst]
body = av.body.posed(pose.skinning_matrices(sk))
vertex = int(np.argmax(runs[False][1][worst][1]))
# look at the hem vertex from outside, 0.9 m away along its horizontal direction from the body's axis
target = runs[True][1][worst][0][vertex]
out_dir = target - body.mean(axis=0)
out_dir[1] = 0.0
out_dir /= np.linalg.norm(out_dir)
cam = Camera(eye=tuple(target + 0.9 * out_dir + np.array([0.0, 0.15, 0.0])), target=tuple(target), fov_y=25.0)
cells = []
for bound in (False, True):
    y, jumps = runs[bound][1][worst]
    items = [mesh_item(av.body.mesh, body, material=M.skin(), role="body"),
             mesh_item(skirt.mesh, y, material=M.heatmap((0.0, 0.01), "coolwarm"),
                       attributes={"heat": jumps.astype(np.float32)}, role="garment")]
    cells.append(renderer.draw(items, cam, CELL).rgb)
sheet = comparison_sheet([cells], row_labels=[f"frame {worst}"], col_labels=["without", "with the depth bound"],
                         cell_width=CELL[0], font_size=16,
                         title="The skirt's jump this frame (blue 0, red 10 mm and more)")
sheet = Image.fromarray(np.asarray(sheet.convert("RGB")))
height = max(plot.height, sheet.height)
out_img = Image.new("RGB", (plot.width + sheet.width, height), "white")
out_img.paste(plot, (0, (height - plot.height) // 2))
out_img.paste(sheet, (plot.width, 0))
out = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "docs" / "images" / "depth_bound_walk.png"
out_img.save(out, optimize=True)
print(f"wrote {out}: frame {worst}, vertex {vertex}, pops {runs[False][0].max():.1f} -> {runs[True][0].max():.1f} mm")
