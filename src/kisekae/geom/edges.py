"""Edges and adjacency of a polygon mesh.

- :func:`face_edges`: the boundary edges of each triangle or quad, in face order (not unique);
  quads give their four sides, not the diagonal (as Blender does).
- :func:`unique_edges`: unique undirected edges ``(i, j)``, ``i < j``, ordered by ``i`` then
  ``j``; with a weld map they join welded representatives and edges collapsed by the weld are
  dropped.
- :func:`vertex_neighbors`: the symmetric 0/1 adjacency matrix of an edge list.
- :func:`check_edges`: validate an explicit edge array.

These are sorts and scatters over whole arrays that run once per topology, never per frame, so
they are NumPy only (no Numba kernel).
"""

from __future__ import annotations

import numpy as np
from scipy import sparse

from ..errors import KisekaeError
from ..validate import as_faces


def face_edges(faces, n_vertices: int | None = None, name: str = "faces") -> np.ndarray:
    """Boundary edges of each polygon, as vertex pairs (repeated where faces share an edge).

    Parameters
    ----------
    faces : (F, 3) or (F, 4) int
        Triangles or quads.
    n_vertices : int, optional
        Vertex count; when given, the faces are validated against it.
    name : str
        Argument name for error messages.

    Returns
    -------
    (F·k, 2) int32, face ``t``'s edges at rows ``k·t … k·t + k − 1``.
    """
    arr = np.asarray(faces)
    if arr.ndim != 2 or arr.shape[1] not in (3, 4):
        raise KisekaeError(f"expected shape (F, 3) triangles or (F, 4) quads, got {arr.shape}", name)
    f = arr if n_vertices is None else as_faces(arr, int(n_vertices), name, corners=arr.shape[1])
    return np.stack([f, np.roll(f, -1, axis=1)], axis=-1).reshape(-1, 2).astype(np.int32)


def unique_pairs(pairs, weld=None) -> np.ndarray:
    """Unique undirected edges of a list of vertex pairs, after welding.

    Parameters
    ----------
    pairs : (E, 2) int
        Vertex pairs, possibly repeated and in either order.
    weld : (N,) int, optional
        Representative of each vertex (:func:`kisekae.geom.weld.weld_map`).

    Returns
    -------
    (U, 2) int32, rows ``(i, j)`` with ``i < j``, ordered by ``i`` then ``j``.
    """
    e = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    if weld is not None:
        e = np.asarray(weld, dtype=np.int64)[e]
    e = np.sort(e, axis=1)
    e = e[e[:, 0] != e[:, 1]]
    if e.size == 0:
        return np.zeros((0, 2), np.int32)
    m = int(e.max()) + 1
    key = np.unique(e[:, 0] * m + e[:, 1])
    return np.stack([key // m, key % m], axis=1).astype(np.int32)


def unique_edges(faces, weld=None, *, n_vertices: int | None = None) -> np.ndarray:
    """Unique undirected edges of triangles or quads (see :func:`unique_pairs` for the order).

    Parameters
    ----------
    faces : (F, 3) or (F, 4) int
    weld : (N,) int, optional
        Edges join welded representatives, so adjacency continues across seams.
    n_vertices : int, optional
        Vertex count, to validate ``faces``.

    Returns
    -------
    (E, 2) int32
    """
    arr = np.asarray(faces)
    if arr.size == 0:
        return np.zeros((0, 2), np.int32)
    return unique_pairs(face_edges(arr, n_vertices), weld)


def vertex_neighbors(edges, n_vertices: int) -> sparse.csr_matrix:
    """Symmetric 0/1 adjacency ``(N, N)`` CSR matrix (float32) from an ``(E, 2)`` edge list."""
    e = np.asarray(edges).reshape(-1, 2)
    data = np.ones(2 * len(e), dtype=np.float32)
    rows = np.concatenate([e[:, 0], e[:, 1]])
    cols = np.concatenate([e[:, 1], e[:, 0]])
    m = sparse.csr_matrix((data, (rows, cols)), shape=(n_vertices, n_vertices))
    m.data[:] = 1.0
    return m


def check_edges(edges, n_vertices: int, name: str = "edges") -> np.ndarray:
    """Validate an explicit ``(E, 2)`` edge array against ``n_vertices``; returns it as int32."""
    arr = np.asarray(edges)
    if arr.ndim != 2 or arr.shape[1] != 2:
        raise KisekaeError(f"expected shape (E, 2), got {arr.shape}", name)
    return as_faces(arr, n_vertices, name, corners=2)
