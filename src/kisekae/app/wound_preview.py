"""Preview frames of a wound morph: the morph weight going from 0 to 1, rendered offscreen.

Frame ``k`` of ``steps`` draws the start mesh morphed with ``w = t_k * p`` (``t_k = k / (steps - 1)``),
where ``p`` is the per-vertex morph parameter: all ones for a bake (the whole damaged shape appears),
or the hits' damage mask for ``kisekae wound hit``. The morph runs on the CPU (:func:`morph_numba`,
the reference the shader port is checked against), then the mesh is optionally skinned
(:func:`kisekae.avatar.skinning.lbs_with_normals`) and drawn by :mod:`kisekae.render` with the ``skin`` material, whose ``wound``
attribute tints the damaged skin. The camera is fixed for all frames, framed on the start and the
fully morphed shape together, so nothing but the morph changes between frames.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..errors import KisekaeError
from ..validate import as_faces, as_per_vertex, as_points
from ..avatar.skinning import lbs_with_normals
from ..wound.runtime import morph_numba


def _morph_inputs(vertices, faces, normals, target_positions, target_normals, p):
    """Validated float32 ``(start, faces, start normals, target positions, target normals, p)``."""
    s = as_points(vertices, "vertices", dtype=np.float32)
    n = len(s)
    f = as_faces(faces, n, "faces")
    sn = as_per_vertex(normals, n, "normals", dtype=np.float32)
    tp = as_per_vertex(target_positions, n, "target_positions", dtype=np.float32)
    tn = as_per_vertex(target_normals, n, "target_normals", dtype=np.float32)
    for a, name in ((sn, "normals"), (tp, "target_positions"), (tn, "target_normals")):
        if a.shape != (n, 3):
            raise KisekaeError(f"expected shape ({n}, 3), got {a.shape}", name)
    pp = np.ones(n, np.float32) if p is None else as_per_vertex(p, n, "p", dtype=np.float32)
    if pp.shape != (n,) or pp.min(initial=0) < 0 or pp.max(initial=0) > 1:
        raise KisekaeError(f"expected ({n},) values in [0, 1], got shape {pp.shape}", "p")
    return s, f, sn, tp, tn, pp


def _skin_inputs(skin, n: int):
    """Validated ``(indices int32 (N, K), weights float32 (N, K), matrices float32 (B, 4, 4))``."""
    idx = np.ascontiguousarray(skin[0], dtype=np.int32)
    wts = np.ascontiguousarray(skin[1], dtype=np.float32)
    mats = np.ascontiguousarray(skin[2], dtype=np.float32)
    if idx.shape[0] != n or wts.shape != idx.shape or mats.ndim != 3 or mats.shape[1:] != (4, 4):
        raise KisekaeError(f"expected skin (indices (N, K), weights (N, K), matrices (B, 4, 4)) for N={n}", "skin")
    if idx.size and (idx.min() < 0 or idx.max() >= len(mats)):
        raise KisekaeError(f"bone index out of range 0..{len(mats) - 1}", "skin")
    return idx, wts, mats


def morph_frames(vertices, normals, faces, target_positions, target_normals, p=None, *, steps: int = 5,
                 invert: bool = False, tint: str = "p", skin=None, deform=None, view: str = "three_quarter",
                 size="480x480", preset: str = "realistic", renderer=None):
    """Render the morph from 0 to 1.

    Parameters
    ----------
    vertices, normals : (N, 3) float, start mesh (bind pose), metres / unit.
    faces : (F, 3) int.
    target_positions, target_normals : (N, 3) float, the decoded damaged shape per vertex.
    p : (N,) float in [0, 1], optional, the morph parameter at full strength (default all ones).
    steps : int, default 5, frames (>= 2); frame k uses ``w = k / (steps - 1) * p``.
    invert : bool, default False, morph by ``1 - w`` instead (a bake whose start mesh is the damaged
        one: its sidecar says ``morph_weight: 1 - p``).
    tint : ``"p"`` (default) tints the skin by the damage weight; ``"displacement"`` by the weight
        times ``min(1, |target - start| / 5 mm)``, so only the parts whose shape changes are tinted
        (for a bake, where ``p`` is 1 everywhere).
    skin : optional ``(indices (N, K), weights (N, K), skin_matrices (B, 4, 4))`` to pose the mesh.
    deform : optional callable ``deform(points (N, 3), skin_matrices) -> (N, 3)`` applied to the skinned positions
        (a body's :attr:`~kisekae.avatar.SkinnedMesh.deform`, such as the joint-plane contact); the normals stay the
        skinned ones, as in the engine's vertex stage. Needs ``skin``.
    view : str, a :data:`kisekae.render.VIEWS` name, default ``three_quarter`` (shows the character's
        left arm and the chest).
    size : resolution (``"WxH"``, a name from :data:`kisekae.render.RESOLUTIONS`), default 480x480.
    preset : ``realistic`` or ``anime`` (skin material preset).
    renderer : kisekae.render.Renderer, optional (default one without MSAA, the fast path on llvmpipe).

    Returns
    -------
    list of ``(t, rgb)`` with ``rgb`` (H, W, 3) uint8.
    """
    from ..render import DrawItem, Renderer, materials, named_camera
    from ..render.camera import resolution

    s, f, sn, tp, tn, pp = _morph_inputs(vertices, faces, normals, target_positions, target_normals, p)
    n = len(s)
    if tint not in ("p", "displacement"):
        raise KisekaeError(f"expected 'p' or 'displacement', got {tint!r}", "tint")
    ts = _times(steps)
    w_img, h_img = resolution(size)
    if skin is not None:
        idx, wts, mats = _skin_inputs(skin, n)
    elif deform is not None:
        raise KisekaeError("a deform after skinning needs skin", "deform")

    def shape(weight):
        mp, mn = morph_numba(s, sn, tp, tn, weight, np.empty_like(s), np.empty_like(s))
        if skin is None:
            return mp, mn
        op, on = np.empty_like(s), np.empty_like(s)
        lbs_with_normals(mp, mn, idx, wts, mats, op, on)
        if deform is not None:
            op = np.asarray(deform(op, mats), dtype=np.float32)
        return op, on

    weights = [(1.0 - t * pp if invert else t * pp).astype(np.float32) for t in ts]
    shapes = [(t, *shape(wt)) for t, wt in zip(ts, weights)]
    frame_pts = np.vstack([shapes[0][1], shapes[-1][1]])
    cam = named_camera(view, frame_pts, w_img / h_img)
    r = renderer if renderer is not None else Renderer(samples=0)
    mat = materials.skin(preset)
    moved = np.ones(n, np.float32)
    if tint == "displacement":
        moved = np.minimum(1.0, np.linalg.norm(tp - s, axis=1) / 0.005).astype(np.float32)
    out = []
    for (t, pos, nrm), wt in zip(shapes, weights):
        damage = (1.0 - wt if invert else wt) * moved
        item = DrawItem(pos, f, mat, normals=nrm, attributes={"wound": damage}, role="body", name="wound")
        out.append((float(t), r.draw([item], cam, (w_img, h_img)).rgb))
    return out


def _times(steps) -> np.ndarray:
    """The morph weights of the preview frames: ``steps`` (an integer >= 2) values from 0 to 1."""
    if isinstance(steps, bool) or int(steps) != steps or steps < 2:
        raise KisekaeError(f"need an integer >= 2, got {steps!r}", "steps")
    return np.linspace(0.0, 1.0, int(steps))


def _frame_name(stem: str, k: int, t: float) -> str:
    return f"{stem}_{k:02d}_p{t:.2f}.png"


def frame_file_names(steps: int, stem: str = "morph") -> list:
    """Names of the files :func:`write_frames` writes for ``steps`` frames of :func:`morph_frames`
    (PNG per frame, the GIF, the sheet), known before rendering."""
    return [_frame_name(stem, k, t) for k, t in enumerate(_times(steps))] + [f"{stem}.gif", f"{stem}_sheet.png"]


def write_frames(frames, out_dir, stem: str = "morph", *, fps: float = 4.0) -> dict:
    """Write frames from :func:`morph_frames` as PNGs, an animated GIF (forth and back) and a labelled sheet.

    Returns
    -------
    dict with ``frames`` (list of PNG paths), ``gif`` and ``sheet`` paths.
    """
    from PIL import Image

    from ..render.sheets import comparison_sheet, save_gif

    if not frames:
        raise KisekaeError("no frames", "frames")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    pngs = []
    for k, (t, rgb) in enumerate(frames):
        path = out / _frame_name(stem, k, t)
        Image.fromarray(np.asarray(rgb)).save(path)
        pngs.append(path)
    imgs = [rgb for _t, rgb in frames]
    gif = save_gif(imgs + imgs[-2:0:-1], out / f"{stem}.gif", fps=fps)
    sheet = comparison_sheet([imgs], col_labels=[f"p x {t:.2f}" for t, _ in frames], title="wound morph 0 -> 1",
                             cell_width=min(320, imgs[0].shape[1]))
    sheet_path = out / f"{stem}_sheet.png"
    sheet.save(sheet_path)
    return {"frames": pngs, "gif": gif, "sheet": sheet_path}
