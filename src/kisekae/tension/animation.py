"""Tension over an animation: per-frame maps, T-value curves (JSON + PNG plot), vertex-colour bakes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import NamedTuple

import numpy as np

from ..errors import KisekaeError
from .edge import TensionPlan
from .smoothing import TemporalSmoother, blur


class TensionSequence(NamedTuple):
    """Per-frame tension, float32, shape ``(T, N)`` for each map.

    Attributes
    ----------
    ratio, compress, stretch : (T, N) float32
    frame_names : list of str
    """

    ratio: np.ndarray
    compress: np.ndarray
    stretch: np.ndarray
    frame_names: list


def tension_sequence(
    plan: TensionPlan,
    frames,
    *,
    frame_names=None,
    blur_iterations: int = 0,
    smoother: TemporalSmoother | None = None,
    dt: float = 1.0 / 30.0,
) -> TensionSequence:
    """Evaluate ``plan`` on every frame of an iterable of deformed positions.

    Parameters
    ----------
    plan : TensionPlan
    frames : iterable of (N, 3) float arrays
        Deformed positions per frame, metres.
    frame_names : list of str, optional
        Defaults to ``"0", "1", ...``.
    blur_iterations : int, default 0
        Neighbourhood blur passes applied to compress and stretch (see :func:`blur`).
    smoother : TemporalSmoother, optional
        Temporal smoothing applied to compress and stretch after the blur; ``ratio`` stays raw.
    dt : float, default 1/30
        Seconds between frames (for the smoother).

    Returns
    -------
    TensionSequence
    """
    ratios, comps, strs = [], [], []
    for k, pos in enumerate(frames):
        r = plan.evaluate(pos, name=f"frame {k}")
        co, st = r.compress, r.stretch
        if blur_iterations:
            both = blur(np.stack([co, st], axis=1), plan.edges, iterations=blur_iterations, weld=plan.weld)
            co, st = both[:, 0], both[:, 1]
        if smoother is not None:
            both = smoother.update(np.stack([co, st]), dt)
            co, st = both[0], both[1]
        ratios.append(r.ratio)
        comps.append(np.array(co, np.float32))
        strs.append(np.array(st, np.float32))
    if not ratios:
        raise KisekaeError("no frames to evaluate", "frames")
    names = [str(k) for k in range(len(ratios))] if frame_names is None else [str(s) for s in frame_names]
    if len(names) != len(ratios):
        raise KisekaeError(f"{len(names)} names for {len(ratios)} frames", "frame_names")
    return TensionSequence(np.stack(ratios), np.stack(comps), np.stack(strs), names)


def _check_vertices(vertices, n):
    v = np.asarray(list(vertices), dtype=np.int64)
    if v.ndim != 1 or v.size == 0:
        raise KisekaeError("give at least one vertex index", "vertices")
    if v.min() < 0 or v.max() >= n:
        raise KisekaeError(f"index out of range: found {v.min()}..{v.max()}, mesh has {n} vertices", "vertices")
    return v


def t_curves(seq: TensionSequence, vertices) -> dict:
    """T-value curves in the layout of the article's export script.

    Returns
    -------
    dict
        ``{"<vertex>": [T per frame], ..., "min_index": [argmin T per frame],
        "max_index": [argmax T per frame]}``.
    """
    v = _check_vertices(vertices, seq.ratio.shape[1])
    data = {str(int(i)): seq.ratio[:, i].astype(float).tolist() for i in v}
    data["min_index"] = np.argmin(seq.ratio, axis=1).astype(int).tolist()
    data["max_index"] = np.argmax(seq.ratio, axis=1).astype(int).tolist()
    return data


def write_t_curves_json(path, seq: TensionSequence, vertices, *, x=None, x_label: str = "frame") -> Path:
    """Write :func:`t_curves` plus ``"frames"``, ``"x"`` and ``"x_label"`` keys to a JSON file."""
    data = t_curves(seq, vertices)
    data["frames"] = list(seq.frame_names)
    data["x"] = list(range(len(seq.frame_names))) if x is None else [float(a) for a in x]
    data["x_label"] = x_label
    path = Path(path)
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")
    return path


def plot_t_curves(path, seq: TensionSequence, vertices, *, x=None, x_label: str = "Frame") -> Path:
    """Plot the T-value curves of ``vertices`` to a PNG (matplotlib, Agg), like the article's plot."""
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    v = _check_vertices(vertices, seq.ratio.shape[1])
    xs = np.arange(len(seq.frame_names)) if x is None else np.asarray(x, dtype=float)
    fig, ax = plt.subplots(figsize=(7, 4.5), dpi=100)
    for i in v:
        ax.plot(xs, seq.ratio[:, i], linestyle="-", label=str(int(i)))
    ax.axhline(1.0, color="0.5", linewidth=0.8)
    ax.set_title("T Value Plot")
    ax.set_xlabel(x_label)
    ax.set_ylabel("T Value")
    ax.legend()
    ax.grid(True)
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path)
    plt.close(fig)
    return path


def bake_vertex_colors(seq: TensionSequence, *, dtype=np.uint8) -> np.ndarray:
    """Per-frame RGBA vertex colours: R = compress, G = stretch, B = 0, A = 1.

    Parameters
    ----------
    seq : TensionSequence
    dtype : numpy dtype, default uint8
        ``uint8`` (0..255, rounded) or a float type (0..1).

    Returns
    -------
    (T, N, 4) array of ``dtype``
    """
    t, n = seq.compress.shape
    rgba = np.zeros((t, n, 4), np.float32)
    rgba[..., 0] = seq.compress
    rgba[..., 1] = seq.stretch
    rgba[..., 3] = 1.0
    if np.dtype(dtype) == np.uint8:
        return np.rint(np.clip(rgba, 0, 1) * 255).astype(np.uint8)
    if not np.issubdtype(np.dtype(dtype), np.floating):
        raise KisekaeError(f"dtype must be uint8 or floating, got {dtype!r}", "dtype")
    return rgba.astype(dtype)


def save_npz(path, seq: TensionSequence, **extra) -> Path:
    """Save a sequence (ratio, compress, stretch, uint8 RGBA colours, frame names) to ``.npz``."""
    path = Path(path)
    np.savez_compressed(
        path, ratio=seq.ratio, compress=seq.compress, stretch=seq.stretch,
        colors=bake_vertex_colors(seq), frame_names=np.array(seq.frame_names), **extra,
    )
    return path


def avatar_frames(avatar, part: str, poses):
    """Yield posed positions ``(N, 3)`` float32 of ``avatar``'s ``part`` for each pose."""
    for pose in poses:
        yield avatar.posed_vertices(part, pose)


def avatar_plan(avatar, part: str = "body", **params) -> TensionPlan:
    """A :class:`TensionPlan` for an avatar part at rest: quad sides (Blender's edges) and the mesh's weld."""
    mesh = avatar.part(part).mesh
    return TensionPlan(mesh.vertices, edges=mesh.edges, weld=mesh.weld, **params)
