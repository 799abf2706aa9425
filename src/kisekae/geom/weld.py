"""Welding: map every vertex to one representative vertex at the same position.

Importers split vertices along UV and normal seams, so one surface position appears several
times. Normals, edges and tension must treat those copies as one vertex (otherwise shading and
edge means jump across every seam); a *weld map* ``w`` with ``w[i]`` the lowest index at the
position of vertex ``i`` lets them do so (``w[w] == w``, ``w[i] <= i``).

This is a sort (``np.unique`` over position keys) that runs once per topology, so it is NumPy
only (no Numba kernel).
"""

from __future__ import annotations

import numpy as np

from ..errors import KisekaeError


def weld_map(points, tolerance: float = 0.0) -> np.ndarray:
    """Map every vertex to the lowest-index vertex at the same position.

    Parameters
    ----------
    points : (N, 3) float
        Positions in metres (normally the rest pose).
    tolerance : float, default 0.0
        0 welds exactly equal float32 positions only (what seam splitting produces; ``-0.0``
        and ``0.0`` are equal). A positive value (metres) welds positions that fall in the same
        cell of a grid of that size; it is meant for meshes written with rounded coordinates,
        and can miss pairs that straddle a cell boundary.

    Returns
    -------
    (N,) int32 ``weld`` with ``weld[i] <= i`` and ``weld[weld] == weld``.
    """
    p = np.ascontiguousarray(points, dtype=np.float32).reshape(-1, 3)
    n = p.shape[0]
    if n == 0:
        return np.zeros(0, np.int32)
    if tolerance < 0 or not np.isfinite(tolerance):
        raise KisekaeError(f"must be finite and >= 0, got {tolerance!r}", "weld_tolerance")
    if tolerance > 0:
        key = np.floor(p.astype(np.float64) / tolerance).astype(np.int64)
    else:
        key = p + np.float32(0.0)  # turns -0.0 into +0.0 so both weld together
        key = key.view(np.int32)
    key = np.ascontiguousarray(key)
    _, first, inverse = np.unique(key, axis=0, return_index=True, return_inverse=True)
    # np.unique's first index is the lowest one for each key.
    return first[inverse.reshape(-1)].astype(np.int32)


def as_weld(weld, n_vertices: int, name: str = "weld") -> np.ndarray:
    """Validate a weld map for ``n_vertices`` vertices: ``(N,)`` integers in range, returned as int64.

    Raises :class:`~kisekae.errors.KisekaeError` naming ``name`` otherwise.
    """
    w = np.asarray(weld)
    if w.shape != (n_vertices,) or (w.size and not np.issubdtype(w.dtype, np.integer)):
        raise KisekaeError(f"expected ({n_vertices},) integer array, got shape {w.shape}", name)
    if n_vertices and (w.min() < 0 or w.max() >= n_vertices):
        raise KisekaeError("index out of range", name)
    return w.astype(np.int64, copy=False)
