"""Small mesh helpers the renderer needs: vertex normals and unique edges (plain NumPy)."""

from __future__ import annotations

import numpy as np

from ..errors import KisekaeError
from ..validate import as_faces, as_points


def vertex_normals(positions, faces, weld=None) -> np.ndarray:
    """Area-weighted vertex normals.

    Parameters
    ----------
    positions : (N,3) float
        Vertex positions, metres.
    faces : (F,3) int
        Triangles, counter-clockwise seen from outside.
    weld : (N,) int, optional
        Representative vertex of each position (UV-seam duplicates share one); vertices with the
        same representative get the same normal, so shading is continuous across seams.

    Returns
    -------
    (N,3) float32
        Unit normals; vertices used by no face (or only by degenerate faces) get ``(0, 1, 0)``.
    """
    p = as_points(positions, "positions")
    f = as_faces(faces, len(p), "faces")
    fn = np.cross(p[f[:, 1]] - p[f[:, 0]], p[f[:, 2]] - p[f[:, 0]])  # length = 2 * area
    n = np.zeros_like(p)
    if weld is not None:
        weld = np.asarray(weld, dtype=np.int64)
        if weld.shape != (len(p),) or (len(p) and (weld.min() < 0 or weld.max() >= len(p))):
            raise KisekaeError(f"expected {len(p)} indices in range, got shape {weld.shape}", "weld")
    idx = (f if weld is None else weld[f]).ravel()
    for c in range(3):
        n[:, c] = np.bincount(idx, weights=np.repeat(fn[:, c], 3), minlength=len(p))
    if weld is not None:
        n = n[weld]
    length = np.linalg.norm(n, axis=1)
    ok = length > 1e-20
    n[ok] /= length[ok, None]
    n[~ok] = (0.0, 1.0, 0.0)
    return n.astype(np.float32)


def unique_edges(faces, n_vertices: int | None = None) -> np.ndarray:
    """Unique undirected edges of a polygon list.

    Parameters
    ----------
    faces : (F,K) int
        Triangles (K=3) or quads (K=4); quads give their four sides, not their diagonals.
    n_vertices : int, optional
        Vertex count, for index validation.

    Returns
    -------
    (E,2) int32
        Sorted pairs ``(i, j)`` with ``i < j``, lexicographically ordered.
    """
    arr = np.asarray(faces)
    k = arr.shape[1] if arr.ndim == 2 else 3
    f = as_faces(arr, int(n_vertices) if n_vertices is not None else int(arr.max()) + 1 if arr.size else 0,
                 "faces", corners=k)
    if len(f) == 0:
        return np.zeros((0, 2), np.int32)
    e = np.stack([f, np.roll(f, -1, axis=1)], axis=2).reshape(-1, 2)
    e = np.sort(e, axis=1)
    e = e[e[:, 0] != e[:, 1]]
    return np.unique(e, axis=0).astype(np.int32)
