"""Clear the last few garment edges through the body without a solve: lift their ends, locally.

The per-frame result (:func:`kisekae.fit.runtime.runtime_pose`) often leaves a handful of edges through the body where
a bump of the skin rises between two vertices that are both outside: in the crouch the tights' crotch edges, which
skinning stretches from 19 to 91 mm, dip 0.1-0.4 mm into the pelvis. For those the offline fix used to run its whole
chain (the shape-preserving solve, the exact solver, the path fix), which costs 1-2 s a pose and bends the cloth
elsewhere. Here, in rounds, each edge through the body is sampled every 2 mm; every sample inside the body (winding
number) asks the edge's two ends to move it to the margin outside its nearest body point (along the nearest face's
outward normal for a sample on the surface, or for an edge that only grazes a sliver, at its crossing point), split as
the least motion that moves the sample that far (end ``c`` of weight ``w_c`` moves ``w_c / |w|²`` of the lift); every
vertex inside asks the same for itself. A vertex's asks are blended with weights ``|ask|²`` and spread over the
garment so that no edge stretches by more than 5 % of its length (the far end of an edge follows a lift less that
slack, ring after ring), and the rounds stop when nothing is inside or through the body, or after ``rounds``.

:func:`repair_crossings` is the algorithm over plain arrays; the fix (:mod:`kisekae.fit.fix`) keeps its result only
when it is clean and has no more defects than the alternatives.
"""

from __future__ import annotations

import numpy as np

from ..errors import KisekaeError
from ..geom.closest import closest_point_triangles_numpy, surface_distance
from .surface import one_ring, smooth_push

#: Rounds of (find what crosses, lift it) at most; the repair stops at the first clean round. 32 since 2026-12-07 (was
#: 8): a 9 cm crotch edge of the crouch's tights took 18, and the deep squat skirt's fix keeps the repair with 4
#: crossings left instead of the shape-preserving solve's 7 (docs/fit.md "Samples on stretched edges").
REPAIR_ROUNDS = 32
#: Largest spacing of the samples along an edge through the body, metres (ends excluded; at least one an edge).
REPAIR_SPACING = 0.002
#: Most samples on one edge.
MAX_SAMPLES = 64
#: How much of its length an edge may stretch when one end is lifted: the other end follows the lift less this
#: slack (:func:`_spread`).
REPAIR_SLACK = 0.05
#: One-ring smoothing passes of the lift when ``slack`` is None (:func:`repair_crossings`).
RING_SPREAD = 2


def repair_crossings(query, points, edges, margin: float, *, weld=None, rounds: int = REPAIR_ROUNDS,
                     spacing: float = REPAIR_SPACING, slack: float | None = REPAIR_SLACK) -> tuple:
    """Lift the ends of the garment edges through the body, and the vertices inside it, until none is left.

    Parameters
    ----------
    query : kisekae.qa.penetration.BodyQuery of the posed body
    points : (N, 3) float garment positions, metres
    edges : (E, 2) int unique edges between welded vertices (``Mesh.edges``)
    margin : float, metres > 0, the clearance each lifted sample or vertex gets
    weld : (N,) int, optional, representative of each vertex (``Mesh.weld``): seam copies move with it
    rounds : int >= 0, optional (:data:`REPAIR_ROUNDS`)
    spacing : float, metres > 0, optional, the samples' spacing along an edge (:data:`REPAIR_SPACING`)
    slack : float >= 0 or None, optional, the share of its length an edge may stretch as its lifted end pulls the
        other (:data:`REPAIR_SLACK`); None: the lift spreads by :data:`RING_SPREAD` one-ring smoothing passes instead,
        which keeps it to the lifted vertices' neighbourhood (what the garment correctives' samples use:
        :func:`kisekae.fit.garment_correctives.garment_correction_samples`)

    Returns
    -------
    positions : (N, 3) float64
    info : dict with ``clean`` (bool: nothing inside, no edge through the body), ``rounds`` (int, rounds that lifted
        something) and ``moved`` ((N,) bool)

    Raises
    ------
    KisekaeError
        If the points are not a finite (N, 3) array, the edges or weld map index outside them, margin or spacing is
        not a finite number > 0, slack not None or a finite number >= 0, or rounds not an integer >= 0.
    """
    p, e, w = _checked(points, edges, weld, margin, spacing, slack, rounds)
    n = len(p)
    ring = one_ring(n, e, w) if slack is None else None
    moved = np.zeros(n, dtype=bool)
    for done in range(rounds):
        ask = _asks(query, p, e, w, spacing, margin)
        if ask is None:
            return p, {"clean": True, "rounds": done, "moved": moved}
        if slack is None:
            lift = smooth_push(ask, ring, RING_SPREAD)[w]  # seam copies take their representative's lift
        else:
            lift = _spread(ask, p, e, w, slack)[w]
        p += lift
        moved |= np.einsum("ij,ij->i", lift, lift) > 0
    clean = not (query.inside(p).any() or query.crossing_edges(p, e).any())
    return p, {"clean": clean, "rounds": rounds, "moved": moved}


def _checked(points, edges, weld, margin, spacing, slack, rounds) -> tuple:
    """:func:`repair_crossings`'s arguments checked: ``(positions (N, 3) float64 copy, edges (E, 2), weld (N,))``."""
    p = np.array(points, dtype=np.float64)
    n = len(p)
    if p.ndim != 2 or p.shape[1] != 3 or not np.all(np.isfinite(p)):
        raise KisekaeError(f"expected finite (N, 3) positions, got shape {p.shape}", "crossing repair")
    e = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    w = np.arange(n) if weld is None else np.asarray(weld, dtype=np.int64)
    if (e.size and (e.min() < 0 or e.max() >= n)) or w.shape != (n,) or (n and (w.min() < 0 or w.max() >= n)):
        raise KisekaeError(f"edges or weld map index outside the {n} vertices", "crossing repair")
    if not (np.isfinite(margin) and margin > 0 and np.isfinite(spacing) and spacing > 0):
        raise KisekaeError(f"margin and spacing must be finite numbers > 0, got {margin!r} and {spacing!r}",
                           "crossing repair")
    if (slack is not None and not (np.isfinite(slack) and slack >= 0)) or isinstance(rounds, bool) \
            or not isinstance(rounds, (int, np.integer)) or rounds < 0:
        raise KisekaeError(f"slack must be None or a finite number >= 0 and rounds an integer >= 0, got {slack!r} and "
                           f"{rounds!r}", "crossing repair")
    return p, e, w


def _asks(query, p, e, w, spacing: float, margin: float):
    """(N, 3) this round's blended asks per representative vertex, or None when nothing is inside or through."""
    crossing, tri = query.crossing_edges(p, e, return_triangles=True)
    inside = np.flatnonzero(query.inside(p))
    if not crossing.any() and not len(inside):
        return None
    ids, asks = [], []
    ce = e[crossing]
    if len(ce):
        edge, tt = _edge_samples(p, ce, spacing)
        pts = p[ce[edge, 0]] * (1.0 - tt)[:, None] + p[ce[edge, 1]] * tt[:, None]
        deep = query.inside(pts)
        lift = np.zeros_like(pts)
        lift[deep] = _lift(query, pts[deep], margin)
        # an edge through the body with no sample inside (it grazes a sliver): its crossing point asks the margin
        # along the crossed face's normal
        bare = np.flatnonzero(np.bincount(edge[deep], minlength=len(ce)) == 0)
        if len(bare):
            t_hit = _crossing_t(p, ce[bare], query.vertices, query.topology.faces[tri[crossing][bare]])
            edge = np.concatenate([edge[deep], bare])
            tt = np.concatenate([tt[deep], t_hit])
            lift = np.concatenate([lift[deep], margin * query.face_normals[tri[crossing][bare]]])
        else:
            edge, tt, lift = edge[deep], tt[deep], lift[deep]
        norm = (1.0 - tt) ** 2 + tt ** 2
        for end, share in ((0, (1.0 - tt) / norm), (1, tt / norm)):
            ids.append(w[ce[edge, end]])
            asks.append(lift * share[:, None])
    if len(inside):
        ids.append(w[inside])
        asks.append(_lift(query, p[inside], margin))
    return _blend(np.concatenate(ids), np.concatenate(asks), len(p))


def _edge_samples(p, ce, spacing: float) -> tuple:
    """``(edge, t)``: samples inside each edge of ``ce``, at most ``spacing`` apart (at least one per edge)."""
    length = np.linalg.norm(p[ce[:, 0]] - p[ce[:, 1]], axis=1)
    count = np.clip(np.ceil(length / spacing).astype(np.int64) - 1, 1, MAX_SAMPLES)
    edge = np.repeat(np.arange(len(ce)), count)
    k = np.arange(len(edge)) - np.repeat(np.cumsum(count) - count, count) + 1
    return edge, k / (count[edge] + 1.0)


def _crossing_t(p, ce, vertices, faces) -> np.ndarray:
    """(C,) where each edge meets the plane of its crossed face, as a parameter along the edge in [0, 1]."""
    a, b = p[ce[:, 0]], p[ce[:, 1]]
    v0 = vertices[faces[:, 0]]
    n = np.cross(vertices[faces[:, 1]] - v0, vertices[faces[:, 2]] - v0)
    da = np.einsum("ij,ij->i", a - v0, n)
    db = np.einsum("ij,ij->i", b - v0, n)
    den = da - db
    return np.clip(np.where(np.abs(den) > 0, da / np.where(den == 0, 1.0, den), 0.5), 0.0, 1.0)


def _lift(query, points, margin: float) -> np.ndarray:
    """(P, 3) the move of points inside the body to ``margin`` outside its nearest point: along the way from the point to
    that point (outward, since the point is inside), or along the nearest face's outward normal where the point is
    on the surface."""
    _depth, tri = surface_distance(points, query.topology.bvh, query.state)
    corners = query.vertices[query.topology.faces[tri]]
    q, _bary, d = closest_point_triangles_numpy(points, corners[:, 0], corners[:, 1], corners[:, 2])
    normal = query.face_normals[tri]
    out = np.where((d > 1e-9)[:, None], (q - points) / np.maximum(d, 1e-9)[:, None], normal)
    return q - points + margin * out


def _blend(ids, asks, n: int) -> np.ndarray:
    """(n, 3): at each vertex the blend of the asks made of it with weights ``|ask|²`` (zero where none). Gentler than
    the longest ask alone, which on the crouch tights lifted one crotch vertex into a spike (strain max 0.33 -> 0.71,
    against 0.37 blended); what a round leaves, the next one lifts."""
    k = np.einsum("ij,ij->i", asks, asks)
    total, weight = np.zeros((n, 3)), np.zeros(n)
    np.add.at(total, ids, asks * k[:, None])
    np.add.at(weight, ids, k)
    out = np.zeros((n, 3))
    has = weight > 0
    out[has] = total[has] / weight[has, None]
    return out


def _spread(ask, p, e, w, slack: float) -> np.ndarray:
    """(N, 3) the asks spread over the garment so that no edge stretches by more than ``slack`` of its length: across
    an edge of length L, the far end follows a lift d by ``d (1 - slack L / |d|)`` (nothing once |d| is below
    ``slack L``), ring after ring, each vertex keeping the longest lift it is given. Two one-ring smoothing passes
    instead left the neighbours of a lifted vertex behind: a 5.7 mm edge at the crouch tights' crotch stretched by half
    (strain max 0.28 -> 0.50; with a slack of 5 % 0.36, 10 % 0.38, 20 % 0.53, 2 % 0.35 but more of the garment moved
    and the high kick tights' strain p99 0.102 -> 0.109)."""
    out = np.array(ask)
    a, b = w[e[:, 0]], w[e[:, 1]]
    src, dst = np.concatenate([a, b]), np.concatenate([b, a])
    give = slack * np.tile(np.linalg.norm(p[e[:, 0]] - p[e[:, 1]], axis=1), 2)
    for _ in range(len(p)):
        d = out[src]
        size = np.linalg.norm(d, axis=1)
        keep = np.maximum(0.0, 1.0 - give / np.maximum(size, 1e-300))
        offer = d * keep[:, None]
        better = keep * size > np.linalg.norm(out[dst], axis=1) + 1e-12
        if not better.any():
            return out
        _longest_into(out, dst[better], offer[better])  # the offers were all read before: a Jacobi ring
    return out


def _longest_into(out, ids, offers) -> None:
    """At each id the longest of its offers (or what ``out`` holds there, if longer)."""
    size = np.einsum("ij,ij->i", offers, offers)
    order = np.lexsort((size, ids))
    last = np.r_[ids[order][1:] != ids[order][:-1], True]
    win = order[last]
    grow = size[win] > np.einsum("ij,ij->i", out[ids[win]], out[ids[win]])
    out[ids[win][grow]] = offers[win][grow]
