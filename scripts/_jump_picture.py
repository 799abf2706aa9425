"""Shared by docs/fit.md's motion pictures (``depth_bound_picture.py``, ``normal_guard_picture.py``): a garment carried
through a motion by the per-frame path under two settings, the largest pop per frame of each as a plot, and the
frame of the worst pop drawn both ways, coloured by how far each vertex jumped in that frame."""
import numpy as np
from PIL import Image

from kisekae.fit.carry import CarryState
from kisekae.fit.runtime import pop_mm, runtime_pose

CELL = (420, 420)


def carry(av, poses, name: str, **kw) -> tuple:
    """``(pops (F,) mm, [(positions (N, 3), jumps (N,) m)] per frame)`` of garment ``name`` carried through ``poses``
    by :func:`kisekae.fit.runtime.runtime_pose` with keywords ``kw``."""
    part = av.part(name)
    state, previous, pops, frames = CarryState(), None, [], []
    for pose in poses:
        y = runtime_pose(av, pose, [name], state=state, **kw)[name][0].astype(np.float64)
        correction = y - part.posed(pose.skinning_matrices(av.skeleton))
        pops.append(0.0 if previous is None else pop_mm(previous, correction))
        frames.append((y, np.zeros(len(y)) if previous is None else np.linalg.norm(correction - previous, axis=1)))
        previous = correction
    return np.array(pops), frames


def pop_plot(runs: dict, ylabel: str, title: str) -> Image.Image:
    """The largest pop per frame of each run (label -> :func:`carry`'s result; the first red, the second blue) with
    the issue's 5 mm line."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.0, 4.2), dpi=100)
    for (label, (pops, _)), style in zip(runs.items(), ("C3-", "C0-")):
        ax.plot(np.arange(len(pops)), pops, style, lw=2, label=f"{label} (largest {pops.max():.1f} mm)")
    ax.axhline(5.0, color="0.5", ls="--", lw=1, label="issue 16: 5 mm at 30 fps")
    ax.set_xlabel("frame (30 fps)")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend(loc="upper left", fontsize=8)
    fig.tight_layout()
    fig.canvas.draw()
    plot = Image.fromarray(np.asarray(fig.canvas.buffer_rgba())[:, :, :3])
    plt.close(fig)
    return plot


def jump_sheet(av, name: str, pose, runs: dict, frame: int, camera, title: str) -> Image.Image:
    """Frame ``frame`` of each run, the body posed and the garment coloured by its jump (0 to 10 mm), side by side."""
    from kisekae.render import materials as M
    from kisekae.render.renderer import default_renderer
    from kisekae.render.scene import mesh_item
    from kisekae.render.sheets import comparison_sheet

    renderer = default_renderer()
    body = av.body.posed(pose.skinning_matrices(av.skeleton))
    cells = []
    for _, frames in runs.values():
        y, jumps = frames[frame]
        items = [mesh_item(av.body.mesh, body, material=M.skin(), role="body"),
                 mesh_item(av.part(name).mesh, y, material=M.heatmap((0.0, 0.01), "coolwarm"),
                           attributes={"heat": jumps.astype(np.float32)}, role="garment")]
        cells.append(renderer.draw(items, camera, CELL).rgb)
    sheet = comparison_sheet([cells], row_labels=[f"frame {frame}"], col_labels=list(runs), cell_width=CELL[0],
                             font_size=16, title=title)
    return Image.fromarray(np.asarray(sheet.convert("RGB")))


def side_by_side(plot: Image.Image, sheet: Image.Image) -> Image.Image:
    height = max(plot.height, sheet.height)
    out = Image.new("RGB", (plot.width + sheet.width, height), "white")
    out.paste(plot, (0, (height - plot.height) // 2))
    out.paste(sheet, (plot.width, 0))
    return out
