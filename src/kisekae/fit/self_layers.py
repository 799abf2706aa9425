"""Self layers: a garment's outer sheets kept outside its own inner sheets in the per-frame path.

Many garments are several sheets of cloth in one mesh: a shirt's hem over the trousers' waistband, a jacket over a
shirt, a lining, a collar, a pocket. At rest the sheets lie a few millimetres apart, and the inner one often dips
under the skin (MakeHuman hides the body there). The per-frame correction (:func:`kisekae.fit.surface.
surface_runtime`) pushes each vertex out of the *body* by the margin: the inner sheet, being deeper, moves farther
than the outer one and passes through it. On the sample ``female_casualsuit01`` in the stand pose the waistband
lining moved 6-9 mm out through a shirt hem that moved 0.3-1.6 mm, and the garment's self-crossings went from 5 to
41 (docs/fit.md, "Self layers").

**Bake** (:func:`bake_self_layers`, once per garment, rest pose): for each vertex ``v``, the garment's own triangles
within :data:`SELF_REACH` of it that are not near it on the mesh (no corner within :data:`SELF_RINGS` rings of
``v``: its own sheet), and that lie *beneath* it: the triangle's closest point ``q`` is nearer the body than ``v``
(``(v - q) . N >= 0`` with ``N`` the outward normal of the body vertex nearest ``q``), but not within
:data:`SELF_TOUCH` of it (the two sides of a double-sided cloth have no order). Up to :data:`SELF_K` of them,
nearest first, each with the side of its plane ``v`` is on (the winding of a garment's sheets is not always
outward), and ``v``'s gap: its rest clearance above them, at most :data:`SELF_GAP`.

**Per frame** (:func:`self_layer_push`, one Jacobi pass; :func:`self_layer_stage`: :data:`SELF_PASSES` passes, each
spread to the one-ring by :data:`SELF_SMOOTH` passes of :func:`kisekae.geom.ring.smooth_push` so the outer sheet
rises as a sheet, not as spikes): a vertex whose projection falls on a candidate triangle (barycentric coordinates
above ``-SELF_OVERHANG``) at a signed clearance ``s`` (on its rest side) below its gap, and not more than
:data:`SELF_REACH` behind it, moves out along that triangle's normal by ``gap - s``; with several candidates, the
largest move (moves of :data:`SELF_TOL` or less are rounding and left out), faded out from :data:`SELF_FADE` to twice
it (:func:`self_fade`: an inner sheet far above its outer one is a fold). Only outer sheets move, always away from the body, after the stretch limit and before the edge lift
and unflip (:func:`~kisekae.fit.surface.surface_runtime`'s ``self_layers``), so the stages against the body keep
the last word. A garment of one sheet (the built-in tights and skirt) gets no candidates and nothing changes.

NumPy reference (:func:`self_layer_push_numpy`) and Numba kernel (:func:`self_layer_push`) agree to 1e-12 m.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np

from ..errors import KisekaeError
from ..geom.closest import closest_point_triangles_numpy
from ..geom.edges import unique_edges
from ..geom.ring import one_ring, smooth_push, smooth_push_numpy
from ..validate import as_faces, as_points

#: Rest distance (m) within which a triangle of another sheet of the same garment is a candidate.
SELF_REACH = 0.01
#: Rings of mesh neighbours around a vertex whose triangles count as its own sheet (never candidates).
SELF_RINGS = 3
#: Candidates kept per vertex.
SELF_K = 4
#: Rest distance (m) below which two sheets coincide (a double-sided mesh, or faces duplicated in the asset), not
#: layers: no order between them can be read at rest, and two copies each kept above the other would ratchet apart, so
#: they are never candidates of each other. 1 um: the sample work suit's touching layers, 13-58 um apart, stay
#: layers (a 10 um floor dropped some of them and its deep squat turned 3 more faces over).
SELF_TOUCH = 1e-6
#: Largest clearance (m) an outer sheet keeps above the sheet beneath it (less where it was closer at rest).
SELF_GAP = 0.002
#: Push passes per frame, each spread to the one-ring.
SELF_PASSES = 2
#: One-ring smoothing passes over each push pass's moves.
SELF_SMOOTH = 2
#: How far (in barycentric coordinates) a vertex's projection may fall outside a candidate triangle and still count.
SELF_OVERHANG = 0.1
#: Moves (m) at or below this are rounding, not a layer out of order (a vertex exactly at its gap stays).
SELF_TOL = 1e-9
#: A move (m) above this is taken only in part, linearly down to nothing at twice it, as the layer push's
#: (:data:`kisekae.fit.layer_push.LAYER_FADE`): an inner sheet centimetres above its outer one is a fold, and following
#: it crumples the cloth (68 cells: flipped faces 21 -> 18 with the fade, self-crossings 5,172 -> 5,185).
SELF_FADE = 0.005


def self_fade(need):
    """Share of a self-layer move ``need`` (m, array or float) that is taken: 1 up to :data:`SELF_FADE`, 0 from twice
    it, linear between."""
    return np.clip(2.0 - np.asarray(need, dtype=np.float64) / SELF_FADE, 0.0, 1.0)


@dataclass(frozen=True)
class SelfLayers:
    """A garment's self-layer bake (:func:`bake_self_layers`).

    Attributes
    ----------
    triangles : (N, K) int32 garment triangle ids beneath each vertex, nearest first, -1 after the last (a vertex of
        one sheet has -1 only)
    sides : (N, K) int8, +1 where the vertex lay on the positive side of that triangle's plane (its winding normal)
        at rest, -1 on the negative side, 0 after the last
    gap : (N,) float64 metres, the clearance each vertex keeps above its candidates
    n_faces : int, triangles of the garment it was baked on
    """

    triangles: np.ndarray
    sides: np.ndarray
    gap: np.ndarray
    n_faces: int

    @property
    def vertices(self) -> np.ndarray:
        """(M,) int64 ids of the vertices with at least one candidate."""
        return np.flatnonzero(self.triangles[:, 0] >= 0)

    def check(self, n_points: int, faces) -> None:
        """Raise :class:`KisekaeError` unless this bake fits ``n_points`` vertices and ``faces``."""
        if self.triangles.shape[0] != n_points or self.gap.shape != (n_points,):
            raise KisekaeError(f"baked for {self.triangles.shape[0]} garment vertices, got {n_points}", "self layers")
        if len(faces) != self.n_faces:
            raise KisekaeError(f"baked for {self.n_faces} garment triangles, got {len(faces)}", "self layers")


def _ring_neighbourhoods(n: int, faces, weld, rings: int):
    """CSR (ptr, idx) of the welded vertices within ``rings`` edges of each welded vertex (itself included): the
    one-ring (:func:`kisekae.geom.ring.one_ring` over every triangle edge) raised to the ``rings``-th power."""
    from scipy.sparse import csr_matrix, identity

    ptr, idx = one_ring(n, unique_edges(faces, weld), weld)
    a = csr_matrix((np.ones(len(idx), dtype=np.int8), idx, ptr), shape=(n, n))
    a = ((a + identity(n, dtype=np.int8, format="csr")) > 0).astype(np.int8)
    r = a
    for _ in range(rings - 1):
        r = ((r @ a) > 0).astype(np.int8)
    r = r.tocsr()
    r.sort_indices()
    return r.indptr, r.indices


def bake_self_layers(vertices, faces, body_vertices, body_normals, weld=None, *, reach: float = SELF_REACH,
                     rings: int = SELF_RINGS, k: int = SELF_K, gap: float = SELF_GAP) -> SelfLayers:
    """The triangles of other sheets beneath each garment vertex, at rest.

    Parameters
    ----------
    vertices : (N, 3) garment rest positions, metres; faces : (F, 3) int
    body_vertices, body_normals : (Nb, 3) the body at rest and its outward unit vertex normals (which side is out)
    weld : (N,) ``Mesh.weld`` of the garment or None (vertices at one position count as one for the rings)
    reach : float metres; rings : int >= 1; k : int >= 1; gap : float metres >= 0 (see the module constants)

    Returns
    -------
    SelfLayers
    """
    from scipy.spatial import cKDTree

    v = as_points(vertices, "garment vertices").astype(np.float64)
    f = as_faces(faces, len(v), "garment faces").astype(np.int64)
    bv = as_points(body_vertices, "body vertices").astype(np.float64)
    bn = as_points(body_normals, "body normals").astype(np.float64)
    if bn.shape != bv.shape:
        raise KisekaeError(f"{len(bn)} normals for {len(bv)} body vertices", "body normals")
    for value, what in ((reach, "self layer reach"), (gap, "self layer gap")):
        if not (np.isfinite(value) and value >= 0):
            raise KisekaeError(f"must be a finite length >= 0, got {value!r}", what)
    for value, what in ((rings, "self layer rings"), (k, "self layer candidates")):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise KisekaeError(f"must be an integer >= 1, got {value!r}", what)
    n = len(v)
    w = np.arange(n) if weld is None else np.asarray(weld, dtype=np.int64)
    tri = -np.ones((n, k), dtype=np.int32)
    sides = np.zeros((n, k), dtype=np.int8)
    gaps = np.zeros(n)
    if n == 0 or len(f) == 0:
        return SelfLayers(tri, sides, gaps, len(f))
    nf = np.cross(v[f[:, 1]] - v[f[:, 0]], v[f[:, 2]] - v[f[:, 0]])
    area2 = np.linalg.norm(nf, axis=1)
    nf = nf / np.where(area2 > 0, area2, 1.0)[:, None]
    ptr, idx = _ring_neighbourhoods(n, f, w, rings)
    own = np.repeat(np.arange(n, dtype=np.int64), np.diff(ptr)) * n + idx  # sorted keys (row, neighbour)
    body = cKDTree(bv)
    for vv, tt in _near_pairs(v, f, reach):
        keep = area2[tt] > 0
        for c in range(3):  # a triangle with a corner on the vertex's own sheet nearby is not another sheet
            key = w[vv] * n + w[f[tt, c]]
            at = np.minimum(np.searchsorted(own, key), len(own) - 1)
            keep &= own[at] != key
        vv, tt = vv[keep], tt[keep]
        q, _, dist = closest_point_triangles_numpy(v[vv], v[f[tt, 0]], v[f[tt, 1]], v[f[tt, 2]])
        d = v[vv] - q
        _, j = body.query(q)
        keep = (dist < reach) & (dist > SELF_TOUCH) & (np.einsum("ij,ij->i", d, bn[j]) >= 0.0)  # beneath the vertex
        _take_nearest(vv[keep], tt[keep], dist[keep], np.einsum("ij,ij->i", d[keep], nf[tt[keep]]), tri, sides,
                      gaps, gap)
    return SelfLayers(tri, sides, gaps, len(f))


def _near_pairs(v, f, reach: float, chunk: int = 2048):
    """Yield ``(vertex ids, triangle ids)`` (P,) int64 of the pairs whose triangle's bounding sphere (about its
    centroid) comes within ``reach`` of the vertex, ``chunk`` vertices at a time."""
    from itertools import chain

    from scipy.spatial import cKDTree

    centre = v[f].mean(axis=1)
    radius = np.linalg.norm(v[f] - centre[:, None], axis=2).max(axis=1)
    tree = cKDTree(centre)
    for start in range(0, len(v), chunk):
        lists = tree.query_ball_point(v[start:start + chunk], reach + float(radius.max()))
        counts = np.fromiter(map(len, lists), dtype=np.int64, count=len(lists))
        vv = np.repeat(np.arange(start, start + len(lists), dtype=np.int64), counts)
        tt = np.fromiter(chain.from_iterable(lists), dtype=np.int64, count=int(counts.sum()))
        near = np.einsum("ij,ij->i", v[vv] - centre[tt], v[vv] - centre[tt]) <= (reach + radius[tt]) ** 2
        yield vv[near], tt[near]


def _take_nearest(vv, tt, dist, side, tri, sides, gaps, gap: float) -> None:
    """Write each vertex's nearest candidates (by distance, then triangle id) into ``tri``, ``sides`` and ``gaps``
    (one row per vertex, ``tri.shape[1]`` at most): the pairs ``(vv, tt)`` at ``dist`` with signed clearance ``side``
    along the triangle's winding normal."""
    if not len(vv):
        return
    order = np.lexsort((tt, dist, vv))
    vv, tt, dist, side = vv[order], tt[order], dist[order], side[order]
    first = np.r_[0, np.flatnonzero(np.diff(vv)) + 1]
    rank = np.arange(len(vv)) - np.repeat(first, np.diff(np.r_[first, len(vv)]))
    keep = rank < tri.shape[1]
    vv, tt, side, rank = vv[keep], tt[keep], side[keep], rank[keep]
    tri[vv, rank] = tt
    sides[vv, rank] = np.where(side >= 0.0, 1, -1)
    nearest = np.full(len(gaps), np.inf)
    np.minimum.at(nearest, vv, np.abs(side))
    has = np.isfinite(nearest)
    gaps[has] = np.minimum(gap, nearest[has])


def _inputs(points, layers: SelfLayers, faces):
    p = as_points(points, "garment vertices").astype(np.float64)
    f = as_faces(faces, len(p), "garment faces").astype(np.int64)
    layers.check(len(p), f)
    return p, f


def self_layer_push_numpy(points, layers: SelfLayers, faces, reach: float = SELF_REACH):
    """One self-layer pass, NumPy reference (module docstring).

    Parameters
    ----------
    points : (N, 3) the garment's corrected vertices, metres; layers : SelfLayers; faces : (F, 3) int
    reach : float metres, how far behind a candidate's plane a vertex may lie and still be pushed

    Returns
    -------
    new_points : (N, 3) float64; moved : (N,) bool
    """
    p, f = _inputs(points, layers, faces)
    out = p.copy()
    moved = np.zeros(len(p), dtype=bool)
    for v in layers.vertices:
        best, direction = 0.0, None
        for t, side in zip(layers.triangles[v], layers.sides[v]):
            if t < 0:
                break
            a, b, c = p[f[t, 0]], p[f[t, 1]], p[f[t, 2]]
            n = np.cross(b - a, c - a)
            ln = np.linalg.norm(n)
            if ln <= 0.0:
                continue
            n = n * (side / ln)
            s = float((p[v] - a) @ n)
            e0, e1, e2 = b - a, c - a, p[v] - s * n - a
            d00, d01, d11, d20, d21 = e0 @ e0, e0 @ e1, e1 @ e1, e2 @ e0, e2 @ e1
            den = d00 * d11 - d01 * d01
            if den <= 0.0:
                continue
            u = (d11 * d20 - d01 * d21) / den
            w = (d00 * d21 - d01 * d20) / den
            if u < -SELF_OVERHANG or w < -SELF_OVERHANG or u + w > 1.0 + SELF_OVERHANG:
                continue
            need = layers.gap[v] - s
            if s > -reach and need > best and need > SELF_TOL:
                best, direction = need, n
        take = float(self_fade(best))
        if direction is not None and best * take > 0.0:
            out[v] = p[v] + (take * best) * direction
            moved[v] = True
    return out, moved


@numba.njit(cache=True, error_model="numpy")
def _push_kernel(p, f, ids, tri, sides, gap, reach, overhang, tol, fade, out, moved):  # pragma: no cover - compiled
    out[:] = p
    moved[:] = False
    for m in range(ids.shape[0]):
        v = ids[m]
        best = 0.0
        bx = by = bz = 0.0
        for k in range(tri.shape[1]):
            t = tri[v, k]
            if t < 0:
                break
            i, j, l = f[t, 0], f[t, 1], f[t, 2]
            e0x, e0y, e0z = p[j, 0] - p[i, 0], p[j, 1] - p[i, 1], p[j, 2] - p[i, 2]
            e1x, e1y, e1z = p[l, 0] - p[i, 0], p[l, 1] - p[i, 1], p[l, 2] - p[i, 2]
            nx, ny, nz = e0y * e1z - e0z * e1y, e0z * e1x - e0x * e1z, e0x * e1y - e0y * e1x
            ln = np.sqrt(nx * nx + ny * ny + nz * nz)
            if ln <= 0.0:
                continue
            sc = sides[v, k] / ln
            nx, ny, nz = nx * sc, ny * sc, nz * sc
            rx, ry, rz = p[v, 0] - p[i, 0], p[v, 1] - p[i, 1], p[v, 2] - p[i, 2]
            s = rx * nx + ry * ny + rz * nz
            e2x, e2y, e2z = rx - s * nx, ry - s * ny, rz - s * nz
            d00 = e0x * e0x + e0y * e0y + e0z * e0z
            d01 = e0x * e1x + e0y * e1y + e0z * e1z
            d11 = e1x * e1x + e1y * e1y + e1z * e1z
            d20 = e2x * e0x + e2y * e0y + e2z * e0z
            d21 = e2x * e1x + e2y * e1y + e2z * e1z
            den = d00 * d11 - d01 * d01
            if den <= 0.0:
                continue
            u = (d11 * d20 - d01 * d21) / den
            w = (d00 * d21 - d01 * d20) / den
            if u < -overhang or w < -overhang or u + w > 1.0 + overhang:
                continue
            need = gap[v] - s
            if s > -reach and need > best and need > tol:
                best = need
                bx, by, bz = nx, ny, nz
        take = min(max(2.0 - best / fade, 0.0), 1.0)
        if best * take > 0.0:
            out[v, 0] = p[v, 0] + (take * best) * bx
            out[v, 1] = p[v, 1] + (take * best) * by
            out[v, 2] = p[v, 2] + (take * best) * bz
            moved[v] = True


def self_layer_push(points, layers: SelfLayers, faces, reach: float = SELF_REACH):
    """:func:`self_layer_push_numpy` as a Numba kernel (one core); the same arithmetic in the same order."""
    p, f = _inputs(points, layers, faces)
    out = np.empty_like(p)
    moved = np.empty(len(p), dtype=np.bool_)
    _push_kernel(p, f, layers.vertices, np.ascontiguousarray(layers.triangles, dtype=np.int64),
                 np.ascontiguousarray(layers.sides, dtype=np.float64), np.ascontiguousarray(layers.gap),
                 float(reach), SELF_OVERHANG, SELF_TOL, SELF_FADE, out, moved)
    return out, moved


def self_layer_stage(points, layers: SelfLayers, faces, ring, passes: int = SELF_PASSES, smooth: int = SELF_SMOOTH,
                     numpy: bool = False):
    """The per-frame self-layer stage: ``passes`` times a push pass whose moves are spread to the one-ring by
    ``smooth`` passes of the smoothing (a pushed vertex keeps its own move).

    Parameters
    ----------
    points : (N, 3) metres; layers : SelfLayers; faces : (F, 3) int; ring : the garment's one-ring
        (:func:`kisekae.geom.ring.one_ring`)
    passes, smooth : int >= 0
    numpy : bool, the NumPy references instead of the Numba kernels

    Returns
    -------
    (N, 3) float64
    """
    for value, what in ((passes, "self layer passes"), (smooth, "self layer smoothing passes")):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
            raise KisekaeError(f"must be an integer >= 0, got {value!r}", what)
    new = as_points(points, "garment vertices").astype(np.float64)
    if not len(layers.vertices):
        return new
    push = self_layer_push_numpy if numpy else self_layer_push
    spread = smooth_push_numpy if numpy else smooth_push
    for _ in range(passes):
        pushed, moved = push(new, layers, faces)
        if not moved.any():
            break
        step = pushed - new
        if smooth:
            step = np.where(moved[:, None], step, spread(step, ring, smooth))
        new = new + step
    return new
