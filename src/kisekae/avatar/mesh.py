"""Triangle meshes with kept quads, UV sets and cached derived data (normals, welded adjacency).

The :class:`Mesh` follows trimesh's pattern: plain arrays in, derived data computed on first use
and cached. The derived data comes from the free functions over arrays in :mod:`kisekae.geom`
(:func:`~kisekae.geom.normals.vertex_normals`, :func:`~kisekae.geom.weld.weld_map`,
:func:`~kisekae.geom.edges.unique_edges`, :func:`~kisekae.geom.edges.vertex_neighbors`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
from scipy import sparse

from ..errors import KisekaeError
from ..geom.edges import face_edges, unique_edges, unique_pairs, vertex_neighbors
from ..geom.normals import vertex_normals
from ..geom.weld import weld_map
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
        """(N,) int32: representative vertex of each position (see :func:`kisekae.geom.weld.weld_map`)."""
        return weld_map(self.vertices)

    @cached_property
    def edges(self) -> np.ndarray:
        """(E, 2) int32 unique edges between welded vertices (quad sides where quads exist)."""
        if self.quads is None:
            return unique_edges(self.faces, self.weld)
        extra = self.faces[2 * len(self.quads):]
        return unique_pairs(np.concatenate([face_edges(self.quads), face_edges(extra)]), self.weld)

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
