"""Neighbourhood blur over mesh edges and temporal smoothing over frames."""

from __future__ import annotations

import math

import numpy as np

from ..errors import KisekaeError


def blur(values, edges, *, iterations: int = 1, weld=None) -> np.ndarray:
    """Average each vertex with its edge neighbours, ``iterations`` times.

    Each pass replaces a value by the unweighted mean of itself and its neighbours (the rule of
    Blender's Blur Attribute node on points with Weight 1). Boundaries are not pinned.

    Parameters
    ----------
    values : (N,) or (N, C) float array
        Per-vertex values (e.g. compress, stretch or a colour).
    edges : (E, 2) int array
        Undirected edges; for a welded mesh the representative edges of a
        :class:`~kisekae.tension.TensionPlan` (``plan.edges``) with ``weld=plan.weld``.
    iterations : int, default 1
        Number of passes (0 returns a copy).
    weld : (N,) int array, optional
        Representative of each vertex; duplicates take their representative's blurred value.

    Returns
    -------
    numpy.ndarray of float32, shape of ``values``
    """
    v = np.array(values, dtype=np.float64)
    if v.ndim not in (1, 2):
        raise KisekaeError(f"expected shape (N,) or (N, C), got {v.shape}", "values")
    if not np.all(np.isfinite(v)):
        raise KisekaeError("non-finite value (NaN or inf)", "values")
    if int(iterations) != iterations or iterations < 0:
        raise KisekaeError(f"must be an integer >= 0, got {iterations!r}", "iterations")
    n = v.shape[0]
    e = np.asarray(edges)
    if e.ndim != 2 or e.shape[1] != 2 or (e.size and (e.min() < 0 or e.max() >= n)):
        raise KisekaeError(f"expected (E, 2) indices below {n}", "edges")
    e = e.astype(np.int64)
    i, j = np.concatenate([e[:, 0], e[:, 1]]), np.concatenate([e[:, 1], e[:, 0]])
    count = 1.0 + np.bincount(i, minlength=n)
    flat = v.reshape(n, -1)
    for _ in range(int(iterations)):
        acc = flat.copy()
        for c in range(flat.shape[1]):
            acc[:, c] += np.bincount(i, flat[j, c], minlength=n)
        flat = acc / count[:, None]
    out = flat.reshape(v.shape)
    if weld is not None:
        out = out[np.asarray(weld)]
    return out.astype(np.float32)


class TemporalSmoother:
    """Exponential smoothing of per-vertex values over frames, with separate rise and fall rates.

    ``y_t = y_{t-1} + alpha * (x_t - y_{t-1})`` with ``alpha = 1 - exp(-dt / tau)``, where ``tau``
    is ``rise`` when the value grows and ``fall`` when it shrinks (wrinkles can appear quickly and
    fade slowly). The first frame is passed through.

    Parameters
    ----------
    rise : float, default 0.05
        Time constant in seconds for increasing values (0 = follow immediately).
    fall : float, default 0.15
        Time constant in seconds for decreasing values.
    """

    def __init__(self, rise: float = 0.05, fall: float = 0.15):
        for name, val in (("rise", rise), ("fall", fall)):
            if not math.isfinite(float(val)) or float(val) < 0:
                raise KisekaeError(f"must be a time in seconds >= 0, got {val!r}", name)
        self.rise = float(rise)
        self.fall = float(fall)
        self.state: np.ndarray | None = None

    def reset(self) -> None:
        """Forget the previous frame."""
        self.state = None

    @staticmethod
    def _alpha(tau, dt):
        return 1.0 if tau == 0 else 1.0 - math.exp(-dt / tau)

    def update(self, values, dt: float = 1.0 / 30.0) -> np.ndarray:
        """Feed one frame (any shape, constant across frames); returns the smoothed values (float32)."""
        x = np.asarray(values, dtype=np.float32)
        if not math.isfinite(float(dt)) or dt <= 0:
            raise KisekaeError(f"must be > 0 seconds, got {dt!r}", "dt")
        if self.state is None:
            self.state = x.copy()
            return self.state.copy()
        if x.shape != self.state.shape:
            raise KisekaeError(f"shape changed from {self.state.shape} to {x.shape}", "values")
        a_up, a_dn = self._alpha(self.rise, dt), self._alpha(self.fall, dt)
        alpha = np.where(x > self.state, np.float32(a_up), np.float32(a_dn))
        self.state = (self.state + alpha * (x - self.state)).astype(np.float32)
        return self.state.copy()


def smooth_sequence(frames, *, rise: float = 0.05, fall: float = 0.15, dt: float = 1.0 / 30.0) -> np.ndarray:
    """Apply :class:`TemporalSmoother` to a ``(T, ...)`` stack of frames; returns float32 (T, ...)."""
    arr = np.asarray(frames, dtype=np.float32)
    sm = TemporalSmoother(rise, fall)
    return np.stack([sm.update(f, dt) for f in arr]) if len(arr) else arr.copy()
