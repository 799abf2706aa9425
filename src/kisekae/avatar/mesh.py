"""Triangle meshes with kept quads, UV sets and cached derived data (normals, welded adjacency).

The :class:`Mesh` follows trimesh's pattern: plain arrays in, derived data computed on first use
and cached. Derived data is also available as free functions over arrays (libigl style):
:func:`vertex_normals`, :func:`weld_by_position`, :func:`unique_edges`, :func:`vertex_neighbors`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numba
import numpy as np
from scipy import sparse

from ..errors import KisekaeError
from ..validate import as_faces, as_points


def triangulate_quads(quads: np.ndarray) -> np.ndarray:
    """Split quads ``(Q, 4)`` into triangles ``(2Q, 3)`` along the 0-2 diagonal.

    Triangles ``2q`` and ``2q + 1`` come from quad ``q``: ``(a, b, c)`` and ``(a, c, d)``.
    """
    q = np.asarray(quads, dtype=np.int32).reshape(-1, 4)
    tri = np.empty((2 * len(q), 3), dtype=np.int32)
    tri[0::2] = q[:, [0, 1, 2]]
    tri[1::2] = q[:, [0, 2, 3]]
    return tri


def face_normals(vertices: np.ndarray, faces: np.ndarray, *, unit: bool = True) -> np.ndarray:
    """Per-triangle normals ``(F, 3)``; with ``unit=False`` their length is twice the area (m²)."""
    v = np.asarray(vertices, dtype=np.float64)
    f = np.asarray(faces)
    n = np.cross(v[f[:, 1]] - v[f[:, 0]], v[f[:, 2]] - v[f[:, 0]])
    if unit:
        ln = np.linalg.norm(n, axis=1, keepdims=True)
        n = np.divide(n, ln, out=np.zeros_like(n), where=ln > 0)
    return n


def vertex_normals(vertices: np.ndarray, faces: np.ndarray, weld: np.ndarray | None = None) -> np.ndarray:
    """Area-weighted unit vertex normals ``(N, 3)`` float32.

    With a ``weld`` map (see :func:`weld_by_position`), vertices that share a position also share
    a normal, so shading is continuous across UV seams. Isolated vertices get ``(0, 0, 0)``.
    """
    v = np.asarray(vertices, dtype=np.float64)
    f = np.asarray(faces)
    n = len(v)
    fn = face_normals(v, f, unit=False)
    target = f if weld is None else np.asarray(weld)[f]
    acc = np.zeros((n, 3))
    for c in range(3):
        np.add.at(acc, target[:, c], fn)
    if weld is not None:
        acc = acc[np.asarray(weld)]
    ln = np.linalg.norm(acc, axis=1, keepdims=True)
    return np.divide(acc, ln, out=np.zeros_like(acc), where=ln > 0).astype(np.float32)


@numba.njit(cache=True)
def _vertex_normals_kernel(v, f, acc, out):
    acc[:] = 0.0
    for i in range(f.shape[0]):
        a, b, c = f[i, 0], f[i, 1], f[i, 2]
        e1x, e1y, e1z = v[b, 0] - v[a, 0], v[b, 1] - v[a, 1], v[b, 2] - v[a, 2]
        e2x, e2y, e2z = v[c, 0] - v[a, 0], v[c, 1] - v[a, 1], v[c, 2] - v[a, 2]
        nx = e1y * e2z - e1z * e2y
        ny = e1z * e2x - e1x * e2z
        nz = e1x * e2y - e1y * e2x
        for k in (a, b, c):
            acc[k, 0] += nx
            acc[k, 1] += ny
            acc[k, 2] += nz
    for k in range(acc.shape[0]):
        ln = np.sqrt(acc[k, 0] * acc[k, 0] + acc[k, 1] * acc[k, 1] + acc[k, 2] * acc[k, 2])
        s = 1.0 / ln if ln > 0.0 else 0.0
        out[k, 0] = acc[k, 0] * s
        out[k, 1] = acc[k, 1] * s
        out[k, 2] = acc[k, 2] * s


def vertex_normals_numba(vertices: np.ndarray, faces: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """Numba twin of :func:`vertex_normals` without a weld map, for per-frame use.

    Parameters
    ----------
    vertices : (N, 3) positions, metres (float64 avoids a copy)
    faces : (F, 3) int32 triangles, indices below N (checked)
    out : (N, 3) float32 C-contiguous array to write into, optional

    Returns
    -------
    (N, 3) float32 area-weighted unit normals (``(0, 0, 0)`` for vertices on no face); the same
    float64 sums in the same face order as :func:`vertex_normals`, so the same float32 values.
    """
    v = vertices if (type(vertices) is np.ndarray and vertices.dtype == np.float64 and vertices.flags.c_contiguous
                     and vertices.ndim == 2 and vertices.shape[1] == 3) else as_points(vertices, "vertices")
    if not np.isfinite(v).all():
        raise KisekaeError("non-finite value (NaN or inf)", "vertices")
    f = faces if (type(faces) is np.ndarray and faces.dtype == np.int32 and faces.flags.c_contiguous
                  and faces.ndim == 2 and faces.shape[1] == 3) else as_faces(faces, len(v), "faces")
    if f.size and (f.min() < 0 or f.max() >= len(v)):
        raise KisekaeError(f"vertex index out of range 0..{len(v) - 1}", "faces")
    if out is None:
        out = np.empty((len(v), 3), np.float32)
    elif not (type(out) is np.ndarray and out.dtype == np.float32 and out.flags.c_contiguous
              and out.flags.writeable and out.shape == (len(v), 3)):
        raise KisekaeError(f"must be a writeable C-contiguous float32 array of shape ({len(v)}, 3)", "out")
    _vertex_normals_kernel(v, f, np.empty((len(v), 3)), out)
    return out


def weld_by_position(vertices: np.ndarray, tolerance: float = 1e-6) -> np.ndarray:
    """Map each vertex to the lowest-index vertex at the same position.

    Parameters
    ----------
    vertices : (N, 3) array, metres
    tolerance : float, metres
        Positions closer than this (per axis, after quantisation) are one point.

    Returns
    -------
    (N,) int32 array ``weld`` with ``weld[i] <= i`` and ``vertices[weld[i]] ≈ vertices[i]``.
    """
    v = np.asarray(vertices, dtype=np.float64)
    if len(v) == 0:
        return np.zeros(0, dtype=np.int32)
    key = np.round(v / tolerance).astype(np.int64)
    _, first, inverse = np.unique(key, axis=0, return_index=True, return_inverse=True)
    # np.unique's first index is the lowest one for each key.
    return first[inverse.ravel()].astype(np.int32)


def unique_edges(faces: np.ndarray, weld: np.ndarray | None = None) -> np.ndarray:
    """Unique undirected edges ``(E, 2)`` int32 (``e[:, 0] < e[:, 1]``) of triangles or quads.

    Quads give their four sides (not the diagonal). With ``weld``, edges are between welded
    representatives, so adjacency continues across seams.
    """
    f = np.asarray(faces)
    k = f.shape[1]
    e = np.concatenate([f[:, [i, (i + 1) % k]] for i in range(k)])
    if weld is not None:
        e = np.asarray(weld)[e]
    e = np.sort(e, axis=1)
    e = e[e[:, 0] != e[:, 1]]
    return np.unique(e, axis=0).astype(np.int32)


def vertex_neighbors(edges: np.ndarray, n_vertices: int) -> sparse.csr_matrix:
    """Symmetric 0/1 adjacency ``(N, N)`` CSR matrix from an edge list."""
    e = np.asarray(edges)
    data = np.ones(2 * len(e), dtype=np.float32)
    rows = np.concatenate([e[:, 0], e[:, 1]])
    cols = np.concatenate([e[:, 1], e[:, 0]])
    m = sparse.csr_matrix((data, (rows, cols)), shape=(n_vertices, n_vertices))
    m.data[:] = 1.0
    return m


@dataclass
class Mesh:
    """A triangle mesh, with the quads it came from where they exist.

    Parameters
    ----------
    vertices : (N, 3) float32, metres
    faces : (F, 3) int32 triangles
    quads : (Q, 4) int32 or None
        The source quads. When given, ``faces`` are exactly :func:`triangulate_quads` of them
        followed by any source triangles, and ``quad_of_face[f]`` names the quad of triangle f.
    uvs : dict[str, (N, 2) float32]
        Per-vertex UV sets (``"uv0"``, ``"uv1"``, ...). Meshes from OBJ keep the face-varying
        UVs in ``uv_faces``/``uv_coords`` as well, because a vertex on a seam has several UVs.
    name : str
    """

    vertices: np.ndarray
    faces: np.ndarray
    quads: np.ndarray | None = None
    uvs: dict = field(default_factory=dict)
    uv_faces: np.ndarray | None = None
    uv_coords: np.ndarray | None = None
    name: str = "mesh"

    def __post_init__(self):
        self.vertices = as_points(self.vertices, f"{self.name}.vertices", dtype=np.float32)
        self.faces = as_faces(self.faces, len(self.vertices), f"{self.name}.faces")
        if self.quads is not None:
            self.quads = as_faces(self.quads, len(self.vertices), f"{self.name}.quads", corners=4)
        for key, uv in list(self.uvs.items()):
            uv = np.ascontiguousarray(uv, dtype=np.float32)
            if uv.shape != (len(self.vertices), 2):
                raise KisekaeError(f"UV set must have shape ({len(self.vertices)}, 2), got {uv.shape}", f"{self.name}.{key}")
            self.uvs[key] = uv

    # --- derived data (cached) -------------------------------------------------------------
    @property
    def n_vertices(self) -> int:
        return len(self.vertices)

    @cached_property
    def weld(self) -> np.ndarray:
        """(N,) int32: representative vertex of each position (see :func:`weld_by_position`)."""
        return weld_by_position(self.vertices)

    @cached_property
    def edges(self) -> np.ndarray:
        """(E, 2) int32 unique edges between welded vertices (quad sides where quads exist)."""
        src = self.faces
        if self.quads is not None:
            n_quad_tris = 2 * len(self.quads)
            parts = [self.quads] if len(self.quads) else []
            extra = self.faces[n_quad_tris:]
            edges_q = unique_edges(self.quads, self.weld) if parts else np.zeros((0, 2), np.int32)
            edges_t = unique_edges(extra, self.weld) if len(extra) else np.zeros((0, 2), np.int32)
            return np.unique(np.concatenate([edges_q, edges_t]), axis=0).astype(np.int32)
        return unique_edges(src, self.weld)

    @cached_property
    def triangle_edges(self) -> np.ndarray:
        """(E, 2) int32 unique edges of the triangles (diagonals included), welded."""
        return unique_edges(self.faces, self.weld)

    @cached_property
    def neighbors(self) -> sparse.csr_matrix:
        """(N, N) CSR adjacency over welded edges; seam duplicates share their representative's row."""
        adj = vertex_neighbors(self.edges, self.n_vertices)
        w = self.weld
        if np.any(w != np.arange(len(w))):
            # Copy each representative's neighbourhood to its duplicates.
            pick = sparse.csr_matrix(
                (np.ones(len(w), np.float32), (np.arange(len(w)), w)), shape=(len(w), len(w))
            )
            adj = pick @ adj
            adj.data[:] = 1.0
        return adj.tocsr()

    @cached_property
    def normals(self) -> np.ndarray:
        """(N, 3) float32 area-weighted unit normals, continuous across seams."""
        return vertex_normals(self.vertices, self.faces, self.weld)

    @cached_property
    def quad_of_face(self) -> np.ndarray | None:
        """(F,) int32 index of the source quad of each triangle, -1 for source triangles."""
        if self.quads is None:
            return None
        q = np.full(len(self.faces), -1, dtype=np.int32)
        q[: 2 * len(self.quads)] = np.repeat(np.arange(len(self.quads), dtype=np.int32), 2)
        return q

    def bounds(self) -> np.ndarray:
        """(2, 3) min and max corner, metres."""
        return np.stack([self.vertices.min(axis=0), self.vertices.max(axis=0)])

    def with_vertices(self, vertices: np.ndarray) -> "Mesh":
        """A mesh with the same connectivity and UVs and new positions (derived data recomputed)."""
        return Mesh(vertices, self.faces, self.quads, dict(self.uvs), self.uv_faces, self.uv_coords, self.name)

    def __repr__(self) -> str:
        q = f", {len(self.quads)} quads" if self.quads is not None else ""
        return f"Mesh({self.name!r}, {self.n_vertices} vertices, {len(self.faces)} triangles{q})"
