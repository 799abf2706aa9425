"""Mesh topology for tension: welding by position and unique polygon edges.

Tension is measured over the edges of the *welded* mesh: vertices that a glTF or OBJ importer split
along UV or normal seams share one position, and they must share their edges too, otherwise the
edge mean jumps across every seam. Blender meshes are already welded (a vertex is a position;
seams live in face corners), so welding also makes imported meshes match Blender's topology.
"""

from __future__ import annotations

import numpy as np

from ..errors import KisekaeError
from ..validate import as_faces


def weld_map(points, tolerance: float = 0.0) -> np.ndarray:
    """Map every vertex to a representative vertex at the same position.

    Parameters
    ----------
    points : (N, 3) float array
        Positions in metres (normally the rest pose).
    tolerance : float, default 0.0
        0 welds exactly equal float32 positions only (what seam splitting produces). A positive
        value (metres) welds positions that fall in the same cell of a grid of that size; it is
        meant for meshes written with rounded coordinates, and can miss pairs that straddle a
        cell boundary.

    Returns
    -------
    (N,) int32 array
        ``weld[i]`` is the smallest index of a vertex welded to ``i`` (so ``weld[weld] == weld``).
    """
    p = np.ascontiguousarray(points, dtype=np.float32)
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
    return first[inverse.reshape(-1)].astype(np.int32)


def face_edges(faces, n_vertices: int, name: str = "faces") -> np.ndarray:
    """Boundary edges of each polygon, as vertex pairs (not yet unique).

    Parameters
    ----------
    faces : (F, 3) or (F, 4) int array
        Triangles or quads. Quads contribute their four sides only (no diagonal), as in Blender.
    n_vertices : int
        Vertex count, for the range check.
    name : str
        Argument name used in error messages.

    Returns
    -------
    (F * k, 2) int32 array
    """
    arr = np.asarray(faces)
    if arr.ndim != 2 or arr.shape[1] not in (3, 4):
        raise KisekaeError(f"expected shape (F, 3) triangles or (F, 4) quads, got {arr.shape}", name)
    f = as_faces(arr, n_vertices, name, corners=arr.shape[1])
    k = f.shape[1]
    return np.stack([f, np.roll(f, -1, axis=1)], axis=-1).reshape(-1, 2).astype(np.int32)


def unique_edges(pairs, weld=None) -> np.ndarray:
    """Unique undirected edges after welding; edges collapsed by the weld are dropped.

    Parameters
    ----------
    pairs : (E, 2) int array
        Vertex pairs, possibly repeated and in either order.
    weld : (N,) int array, optional
        Representative of each vertex (see :func:`weld_map`).

    Returns
    -------
    (U, 2) int32 array
        Sorted rows ``(i, j)`` with ``i < j``, in representative indices, ordered by ``i`` then
        ``j`` (this order keeps the per-frame scatter cache friendly).
    """
    e = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    if weld is not None:
        e = np.asarray(weld, dtype=np.int64)[e]
    e = np.sort(e, axis=1)
    e = e[e[:, 0] != e[:, 1]]
    if e.size == 0:
        return np.zeros((0, 2), np.int32)
    key = np.unique(e[:, 0] * (int(e.max()) + 1) + e[:, 1])
    m = int(e.max()) + 1
    return np.stack([key // m, key % m], axis=1).astype(np.int32)


def check_edges(edges, n_vertices: int, name: str = "edges") -> np.ndarray:
    """Validate an explicit ``(E, 2)`` edge array and return it as int32."""
    arr = np.asarray(edges)
    if arr.ndim != 2 or arr.shape[1] != 2:
        raise KisekaeError(f"expected shape (E, 2), got {arr.shape}", name)
    return as_faces(arr, n_vertices, name, corners=2)
