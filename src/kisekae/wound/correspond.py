"""Correspondence between a start mesh and a target mesh of possibly different topology.

Two methods, both returning, for every start vertex, a point on the target surface (a target face
and barycentric coordinates there):

``'closest'``
    Automatic: the closest point on the target surface in 3D. Needs no matching UV set.
``'uv'``
    The article's method: the start mesh carries a second UV set (``uv1``) laid out so that it
    overlaps the target's own UVs (``uv0``) where the two shapes correspond. Each start vertex is
    matched to the closest point of the target's UV layout (the article snaps to the nearest target
    vertex; we interpolate inside the UV triangle, which is never worse).

Both report *unmatched* vertices (farther than a tolerance) and *ambiguous* vertices (a second,
distinct part of the target is about as close, e.g. a point between two fingers, or overlapping
UV islands), grouped into connected regions of the start mesh.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components
from scipy.spatial import cKDTree

from ..errors import KisekaeError
from ..validate import as_faces, as_per_vertex, as_points, positive
from ..geom.closest import closest_point_candidates_numba
from ..geom.normals import vertex_normals


@dataclass
class Region:
    """A connected patch of flagged start vertices.

    Attributes
    ----------
    kind : str
        ``'unmatched'`` or ``'ambiguous'``.
    vertices : (K,) int64 start-vertex ids.
    centroid : (3,) float64, metres, mean start position of the patch.
    max_distance : float
        Largest match distance in the patch (metres for 'closest', UV units for 'uv').
    """

    kind: str
    vertices: np.ndarray
    centroid: np.ndarray
    max_distance: float

    def as_dict(self) -> dict:
        return {
            "kind": self.kind,
            "count": int(self.vertices.size),
            "centroid_m": [round(float(x), 5) for x in self.centroid],
            "max_distance": float(self.max_distance),
            "first_vertices": [int(i) for i in self.vertices[:8]],
        }


@dataclass
class Correspondence:
    """Where each start vertex lands on the target surface.

    Attributes
    ----------
    method : str
        ``'closest'`` or ``'uv'``.
    face : (N,) int64 target face per start vertex.
    bary : (N, 3) float64 barycentric coordinates in that face.
    distance : (N,) float64 match distance (metres for 'closest', UV units for 'uv').
    matched : (N,) bool, False where the match was rejected (distance over tolerance).
    ambiguous : (N,) bool, True where a distinct part of the target is nearly as close.
    positions : (N, 3) float64 exact target positions (start position where unmatched), metres.
    normals : (N, 3) float64 unit target normals (start normal where unmatched).
    regions : list of :class:`Region`.
    """

    method: str
    face: np.ndarray
    bary: np.ndarray
    distance: np.ndarray
    matched: np.ndarray
    ambiguous: np.ndarray
    positions: np.ndarray
    normals: np.ndarray
    regions: list = field(default_factory=list)

    def summary(self) -> dict:
        n = int(self.matched.size)
        return {
            "method": self.method,
            "vertices": n,
            "matched": int(self.matched.sum()),
            "unmatched": int((~self.matched).sum()),
            "ambiguous": int(self.ambiguous.sum()),
            "max_distance": float(self.distance[self.matched].max()) if self.matched.any() else None,
            "regions": [r.as_dict() for r in self.regions],
        }


def _candidates(points: np.ndarray, tv: np.ndarray, tf: np.ndarray, rel: float, abs_: float):
    """CSR lists of target faces that may hold the closest (and near-closest) point of each query."""
    a, b, c = tv[tf[:, 0]], tv[tf[:, 1]], tv[tf[:, 2]]
    cen = (a + b + c) / 3.0
    rmax = float(np.max(np.linalg.norm(np.stack([a, b, c]) - cen[None], axis=2))) if len(tf) else 0.0
    # the nearest target *vertex* bounds the closest surface distance from above
    used = np.unique(tf)
    d0, _ = cKDTree(tv[used]).query(points)
    radius = d0 * (1.0 + rel) + abs_ + rmax + 1e-12
    lists = cKDTree(cen).query_ball_point(points, radius)
    counts = np.fromiter((len(x) for x in lists), dtype=np.int64, count=len(lists))
    ptr = np.zeros(len(lists) + 1, dtype=np.int64)
    np.cumsum(counts, out=ptr[1:])
    idx = np.fromiter((j for x in lists for j in x), dtype=np.int64, count=int(ptr[-1]))
    return ptr, idx


def _regions(mask: np.ndarray, faces: np.ndarray, positions: np.ndarray, distance: np.ndarray, kind: str):
    """Connected components (over start-mesh edges) of the flagged vertices, largest first."""
    ids = np.flatnonzero(mask)
    if ids.size == 0:
        return []
    e = np.concatenate([faces[:, [0, 1]], faces[:, [1, 2]], faces[:, [2, 0]]])
    e = e[mask[e[:, 0]] & mask[e[:, 1]]]
    n = mask.size
    g = coo_matrix((np.ones(len(e)), (e[:, 0], e[:, 1])), shape=(n, n))
    _, labels = connected_components(g, directed=False)
    out = []
    for lab in np.unique(labels[ids]):
        vs = ids[labels[ids] == lab]
        d = distance[vs]
        d = d[np.isfinite(d)]
        out.append(Region(kind, vs, positions[vs].mean(axis=0), float(d.max()) if d.size else float("inf")))
    out.sort(key=lambda r: -r.vertices.size)
    return out


def _finish(method, start_v, start_f, start_n, tv, tf, tn, face, bary, dist, dist2, max_distance, amb_ratio, amb_abs):
    matched = (face >= 0) & (dist <= max_distance)
    ambiguous = matched & (dist2 <= dist * amb_ratio + amb_abs)
    fidx = np.where(face >= 0, face, 0)
    tri = tf[fidx]
    pos = np.einsum("nk,nkj->nj", bary, tv[tri])
    nrm = np.einsum("nk,nkj->nj", bary, tn[tri])
    ln = np.linalg.norm(nrm, axis=1, keepdims=True)
    nrm = np.divide(nrm, ln, out=np.zeros_like(nrm), where=ln > 0)
    pos = np.where(matched[:, None], pos, start_v)
    nrm = np.where(matched[:, None] & (ln > 0), nrm, start_n)
    regions = _regions(~matched, start_f, start_v, dist, "unmatched")
    regions += _regions(ambiguous, start_f, start_v, dist, "ambiguous")
    return Correspondence(method, face, bary, dist, matched, ambiguous, pos, nrm, regions)


def correspond_closest(start_vertices, start_faces, target_vertices, target_faces, *, target_normals=None,
                       max_distance=np.inf, ambiguity_ratio=1.02, ambiguity_abs=2e-4, separation=2e-3):
    """Match each start vertex to the closest point on the target surface (3D).

    Parameters
    ----------
    start_vertices : (N, 3) float, metres.
    start_faces : (F, 3) int.
    target_vertices : (M, 3) float, metres.
    target_faces : (G, 3) int.
    target_normals : (M, 3) float, optional
        Target vertex normals; area-weighted normals of ``target_faces`` when omitted.
    max_distance : float, metres, default inf
        Matches farther than this are *unmatched* (the vertex keeps its start position and normal).
    ambiguity_ratio, ambiguity_abs : float, default 1.02 and 0.2 mm
        A match is *ambiguous* when a second point of the target, farther than
        ``separation + distance`` from the best one, is within ``distance * ratio + abs``.
    separation : float, metres, default 2 mm.

    Returns
    -------
    Correspondence
    """
    sv = as_points(start_vertices, "start_vertices")
    sf = as_faces(start_faces, len(sv), "start_faces")
    tv = as_points(target_vertices, "target_vertices")
    tf = as_faces(target_faces, len(tv), "target_faces")
    if len(tf) == 0:
        raise KisekaeError("the target mesh has no faces", "target_faces")
    tn = (vertex_normals(tv, tf, dtype=np.float64) if target_normals is None
          else as_points(target_normals, "target_normals"))
    if tn.shape != tv.shape:
        raise KisekaeError(f"expected {tv.shape}, got {tn.shape}", "target_normals")
    max_distance = positive(max_distance, "max_distance", allow_zero=True) if np.isfinite(max_distance) else np.inf
    ptr, idx = _candidates(sv, tv, tf, ambiguity_ratio - 1.0, ambiguity_abs)
    face, bary, dist, _f2, dist2 = closest_point_candidates_numba(
        sv, tv, tf.astype(np.int64), ptr, idx, float(separation), 1.0, tv)
    sn = vertex_normals(sv, sf, dtype=np.float64)
    return _finish("closest", sv, sf, sn, tv, tf, tn, face, bary, dist, dist2, max_distance,
                   ambiguity_ratio, ambiguity_abs)


def correspond_uv(start_vertices, start_faces, start_uv1, target_vertices, target_faces, target_uv0, *,
                  target_normals=None, max_uv_distance=0.01, ambiguity_ratio=1.02, ambiguity_abs=1e-5,
                  separation=5e-3):
    """Match each start vertex by its second UV set to the closest point of the target's UV layout.

    Parameters
    ----------
    start_vertices : (N, 3) float, metres; start_faces : (F, 3) int.
    start_uv1 : (N, 2) float or None
        The start mesh's matching UV set. ``None`` raises a :class:`KisekaeError`.
    target_vertices : (M, 3) float, metres; target_faces : (G, 3) int.
    target_uv0 : (M, 2) float
        The target's own UVs.
    target_normals : (M, 3) float, optional.
    max_uv_distance : float, UV units, default 0.01
        Farther matches are *unmatched*.
    ambiguity_ratio, ambiguity_abs : float, default 1.02 and 1e-5 UV units.
    separation : float, metres, default 5 mm
        Two UV-space matches are *ambiguous* (overlapping islands) when their 3D target points are
        farther apart than this.

    Returns
    -------
    Correspondence
    """
    sv = as_points(start_vertices, "start_vertices")
    sf = as_faces(start_faces, len(sv), "start_faces")
    if start_uv1 is None:
        raise KisekaeError("the UV method needs a second UV set (uv1) on the start mesh; "
                           "give one or use method='closest'", "start_uv1")
    suv = as_per_vertex(start_uv1, len(sv), "start_uv1")
    if suv.ndim != 2 or suv.shape[1] != 2:
        raise KisekaeError(f"expected shape ({len(sv)}, 2), got {suv.shape}", "start_uv1")
    tv = as_points(target_vertices, "target_vertices")
    tf = as_faces(target_faces, len(tv), "target_faces")
    if target_uv0 is None:
        raise KisekaeError("the UV method needs the target's own UV set (uv0)", "target_uv0")
    tuv = as_per_vertex(target_uv0, len(tv), "target_uv0")
    if tuv.ndim != 2 or tuv.shape[1] != 2:
        raise KisekaeError(f"expected shape ({len(tv)}, 2), got {tuv.shape}", "target_uv0")
    if len(tf) == 0:
        raise KisekaeError("the target mesh has no faces", "target_faces")
    tn = (vertex_normals(tv, tf, dtype=np.float64) if target_normals is None
          else as_points(target_normals, "target_normals"))
    q = np.zeros((len(sv), 3))
    q[:, :2] = suv
    t3 = np.zeros((len(tv), 3))
    t3[:, :2] = tuv
    ptr, idx = _candidates(q, t3, tf, ambiguity_ratio - 1.0, ambiguity_abs)
    face, bary, dist, _f2, dist2 = closest_point_candidates_numba(
        q, t3, tf.astype(np.int64), ptr, idx, float(separation), 0.0, tv)
    sn = vertex_normals(sv, sf, dtype=np.float64)
    return _finish("uv", sv, sf, sn, tv, tf, tn, face, bary, dist, dist2,
                   positive(max_uv_distance, "max_uv_distance"), ambiguity_ratio, ambiguity_abs)
