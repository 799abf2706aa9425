"""The body against itself: buried vertices, self-crossings and volume change after posing.

Linear blend skinning lets one body part pass into another (calf into thigh, thigh into belly)
and collapses the flesh at bent joints. No garment can be outside two body parts that occupy
the same space, so these numbers are measured before any garment is judged.

- ``body_buried``: body vertices inside another part of the same body. A probe point 1 mm out
  along the vertex normal is tested by generalized winding number against the whole posed body;
  the vertex counts when the probe's winding number exceeds its rest-pose value by more than
  :data:`BURIED_EXCESS`. Comparing against the rest pose keeps creases that already touch at
  rest (lips, toes, which read above 0.5 there) out of the count.
- ``body_self_crossings``: body edges that pass through body triangles other than those that
  share one of the edge's vertices (seam duplicates count as shared).
- ``body_volume_change``: the change of the enclosed (signed) volume, as a fraction of the rest
  volume. Regions where parts overlap count twice and collapsed regions subtract, which is what
  the divergence theorem gives for a self-intersecting surface.
- ``body_dihedral_p99_deg``: the 99th percentile over the body's interior edges (seam duplicates welded) of the
  angle between the normals of the edge's two triangles, degrees (0: flat; a crease folded shut reads near 180).
  Pairs with a triangle of zero area are left out.
- ``body_flipped_faces`` (:func:`flipped_faces`): triangles whose normal turned more than 90 degrees from the same
  triangle under another posing of the body, plain skinning in :func:`kisekae.qa.check.self_contact_pose`;
  triangles of zero area there are left out.
- ``body_inverted_faces`` (:func:`inverted_faces`): triangles whose normal points more than 90 degrees away from
  their rest normal carried by the mean of their corners' blended bone rotations, i.e. turned inside out by the
  posing. Plain skinning inverts triangles where it collapses a fold (139 in the crouch); a contact body that
  repairs them counts as "flipped" against plain skinning there, so the two fields are read together, with
  ``body_new_inverted_faces``: the triangles a contact body turns inside out that plain skinning keeps right side
  out (the damage the contact does; 10 of the default body's 95 flips in the crouch, 70 being repairs).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..geom.crossings import edge_crossings
from ..geom.edges import unique_edges
from ..geom.normals import face_normals, vertex_normals
from ..validate import as_faces, as_points
from .penetration import BodyQuery, BodyTopology
from .shape import face_adjacency

#: Probe distance along the outward vertex normal, metres.
PROBE_M = 1e-3
#: Winding-number excess over the rest pose above which a body vertex counts as buried.
BURIED_EXCESS = 0.25
#: Percentile of the dihedral angles that ``body_dihedral_p99_deg`` reports.
DIHEDRAL_PERCENTILE = 99.0
#: Squared norm below which a triangle's (unnormalised) normal counts as zero area, m^4 (a 0.1 mm triangle: 1e-16).
ZERO_NORMAL2 = 1e-24


def _unit_normals(vertices, faces) -> tuple:
    """(unit face normals (F, 3) float64, nonzero (F,) bool): :func:`~kisekae.geom.normals.face_normals` with
    triangles under :data:`ZERO_NORMAL2` marked as having no normal."""
    n = face_normals(vertices, faces, unit=False)
    size2 = np.einsum("ij,ij->i", n, n)
    ok = size2 > ZERO_NORMAL2
    n[ok] /= np.sqrt(size2[ok])[:, None]
    return n, ok


def dihedral_angles(vertices, faces, adjacency) -> np.ndarray:
    """(P,) float64 angle between the normals of each adjacent triangle pair, degrees, pairs with a zero-area
    triangle left out.

    Parameters
    ----------
    vertices : (N, 3) positions, metres
    faces : (F, 3) int triangles
    adjacency : (P, 2) int triangle pairs sharing an edge (:func:`kisekae.qa.shape.face_adjacency` of the welded
        triangles)
    """
    n, ok = _unit_normals(vertices, faces)
    a = np.asarray(adjacency, dtype=np.int64).reshape(-1, 2)
    keep = ok[a[:, 0]] & ok[a[:, 1]]
    c = np.einsum("ij,ij->i", n[a[keep, 0]], n[a[keep, 1]])
    return np.degrees(np.arccos(np.clip(c, -1.0, 1.0)))


def inverted_mask(vertices, rest_vertices, faces, blend) -> np.ndarray:
    """(F,) bool: triangles of posed ``vertices`` (N, 3) turned inside out against their rest normal (from
    ``rest_vertices`` (N, 3)) carried by ``blend`` (N, 3, 3), each vertex's weighted sum of its bones' skinning
    rotations (:func:`kisekae.avatar.correctives.blended_rotations`), averaged over the triangle's corners;
    triangles of zero area at rest or posed are False."""
    n, ok = _unit_normals(vertices, faces)
    r, ok_r = _unit_normals(rest_vertices, faces)
    f = np.asarray(faces, dtype=np.int64)
    carried = np.einsum("fij,fj->fi", np.asarray(blend, dtype=np.float64)[f].mean(axis=1), r)
    return (np.einsum("ij,ij->i", n, carried) < 0.0) & ok & ok_r


def inverted_faces(vertices, rest_vertices, faces, blend) -> int:
    """How many triangles :func:`inverted_mask` finds inside out."""
    return int(inverted_mask(vertices, rest_vertices, faces, blend).sum())


def flipped_faces(vertices, reference, faces) -> int:
    """Triangles of ``vertices`` whose normal points more than 90 degrees away from the same triangle's in
    ``reference`` (both (N, 3)), triangles of zero area in either left out."""
    n, ok = _unit_normals(vertices, faces)
    r, ok_r = _unit_normals(reference, faces)
    return int(((np.einsum("ij,ij->i", n, r) < 0.0) & ok & ok_r).sum())


def signed_volume(vertices, faces) -> float:
    """Enclosed signed volume (m³) of a triangle mesh by the divergence theorem.

    Parameters
    ----------
    vertices : (N, 3) metres
    faces : (F, 3) int, outward (counter-clockwise seen from outside) for a positive result
    """
    t = np.asarray(vertices, dtype=np.float64)[np.asarray(faces)]
    return float(np.einsum("ij,ij->i", t[:, 0], np.cross(t[:, 1], t[:, 2])).sum() / 6.0)


@dataclass
class BodySelfContact:
    """Rest-pose data for the body's self-contact measures, built once per body mesh.

    Parameters
    ----------
    rest_vertices : (N, 3) rest positions, metres
    faces : (F, 3) int triangles of the closed body
    weld : (N,) int or None, representative vertex of each position (seam duplicates)
    edges : (E, 2) int or None, the edges to test for self-crossings (default: triangle edges)
    """

    rest_vertices: np.ndarray
    faces: np.ndarray
    weld: np.ndarray | None = None
    edges: np.ndarray | None = None
    topology: BodyTopology = field(init=False)
    adjacency: np.ndarray = field(init=False)
    rest_winding: np.ndarray = field(init=False)
    rest_volume: float = field(init=False)

    def __post_init__(self):
        self.rest_vertices = as_points(self.rest_vertices, "body rest vertices")
        self.faces = as_faces(self.faces, len(self.rest_vertices), "body faces")
        n = len(self.rest_vertices)
        self.weld = np.arange(n) if self.weld is None else np.asarray(self.weld, dtype=np.int64)
        if self.edges is None:
            self.edges = unique_edges(self.faces, self.weld)
        self.edges = np.ascontiguousarray(self.edges, dtype=np.int64)
        self.topology = BodyTopology.from_mesh(self.rest_vertices, self.faces)
        self.adjacency = face_adjacency(self.weld[self.faces])
        self.rest_winding = self._probe_winding(self.rest_vertices)
        self.rest_volume = signed_volume(self.rest_vertices, self.faces) * self.topology.orientation

    def _probe_winding(self, vertices):
        n = vertex_normals(vertices, self.faces, self.weld) * self.topology.orientation
        return BodyQuery(self.topology, vertices).winding(vertices + PROBE_M * n)

    def buried(self, vertices) -> np.ndarray:
        """(N,) bool: body vertices inside another part of the posed body ``vertices (N, 3)``."""
        v = as_points(vertices, "posed body vertices")
        return self._probe_winding(v) - self.rest_winding > BURIED_EXCESS

    def self_crossings(self, vertices) -> np.ndarray:
        """(E,) bool per body edge passing through a body triangle that it does not touch."""
        v = as_points(vertices, "posed body vertices")
        query = BodyQuery(self.topology, v)
        return edge_crossings(v, self.edges, query.topology.bvh, query.state,
                              exclude_incident=self.weld[self.faces])

    def measure(self, vertices) -> dict:
        """The three JSON fields for one posed body ``vertices (N, 3)``, plus the ``buried`` mask."""
        v = as_points(vertices, "posed body vertices")
        buried = self.buried(v)
        volume = signed_volume(v, self.faces) * self.topology.orientation
        angles = dihedral_angles(v, self.faces, self.adjacency)
        return {
            "body_buried": int(buried.sum()),
            "body_self_crossings": int(self.self_crossings(v).sum()),
            "body_volume_change": volume / self.rest_volume - 1.0,
            "body_dihedral_p99_deg": float(np.percentile(angles, DIHEDRAL_PERCENTILE)) if len(angles) else 0.0,
            "buried": buried,
        }
