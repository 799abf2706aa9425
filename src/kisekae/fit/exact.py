"""Exact-skin push-out: garments end up outside the real skinned body surface.

Capsules only approximate the body. This solver judges against the posed body triangles
themselves, with the same inside test the penetration check uses (generalized winding number,
:mod:`kisekae.qa`), so "outside" means the same thing for the solver and for the check.

Per pose:

1. Signed distance of every garment vertex to the posed body: unsigned distance and nearest
   triangle from the BVH, sign from the winding number (correct where the posed body overlaps
   itself, e.g. thigh against belly in a crouch).
2. Every vertex with ``d < margin`` moves along the direction from its closest surface point
   (outward; the triangle normal when it lies on the surface) by the push law of
   :func:`kisekae.fit.pushout.push_amount`.
3. A vertex can land inside another body part; steps 1-2 repeat for the vertices still inside
   (up to ``max_rounds``).
4. The displacement of moved vertices is smoothed over moved neighbours, keeping each vertex's
   required push (:func:`kisekae.fit.pushout.smooth_displacement`); vertices that did not need
   to move are never touched. A final round re-checks insideness.
5. Garment edges that still cross the body (both ends outside, the edge through a thin part
   or a crease) get both end vertices pushed out again along the crossed triangle's normal.
"""

from __future__ import annotations

import time

import numpy as np

from ..errors import KisekaeError
from ..validate import as_points
from .pushout import PushParams, bias_direction, push_amount, resolve_mask, smooth_displacement


def closest_points_on_triangles(points, tri):
    """Closest point on each triangle to each point (NumPy, Ericson's region test).

    Parameters
    ----------
    points : array_like (P, 3)
    tri : array_like (P, 3, 3)
        One triangle per point.

    Returns
    -------
    ndarray float64 (P, 3)
    """
    p = np.asarray(points, dtype=np.float64)
    a, b, c = (np.asarray(tri, dtype=np.float64)[:, i] for i in range(3))
    ab, ac, ap = b - a, c - a, p - a
    d1 = np.einsum("ij,ij->i", ab, ap)
    d2 = np.einsum("ij,ij->i", ac, ap)
    bp = p - b
    d3 = np.einsum("ij,ij->i", ab, bp)
    d4 = np.einsum("ij,ij->i", ac, bp)
    cp = p - c
    d5 = np.einsum("ij,ij->i", ab, cp)
    d6 = np.einsum("ij,ij->i", ac, cp)
    va = d3 * d6 - d5 * d4
    vb = d5 * d2 - d1 * d6
    vc = d1 * d4 - d3 * d2
    denom = va + vb + vc
    denom = np.where(np.abs(denom) < 1e-30, 1e-30, denom)
    v = vb / denom
    w = vc / denom
    out = a + ab * v[:, None] + ac * w[:, None]  # interior
    # edges
    with np.errstate(divide="ignore", invalid="ignore"):
        t_ab = np.clip(d1 / (d1 - d3), 0, 1)
        t_ac = np.clip(d2 / (d2 - d6), 0, 1)
        t_bc = np.clip((d4 - d3) / ((d4 - d3) + (d5 - d6)), 0, 1)
    e_ab = (vc <= 0) & (d1 >= 0) & (d3 <= 0)
    e_ac = (vb <= 0) & (d2 >= 0) & (d6 <= 0)
    e_bc = (va <= 0) & ((d4 - d3) >= 0) & ((d5 - d6) >= 0)
    out = np.where(e_bc[:, None], b + (c - b) * np.nan_to_num(t_bc)[:, None], out)
    out = np.where(e_ac[:, None], a + ac * np.nan_to_num(t_ac)[:, None], out)
    out = np.where(e_ab[:, None], a + ab * np.nan_to_num(t_ab)[:, None], out)
    # vertices
    out = np.where(((d6 >= 0) & (d5 <= d6))[:, None], c, out)
    out = np.where(((d3 >= 0) & (d4 <= d3))[:, None], b, out)
    out = np.where(((d1 <= 0) & (d2 <= 0))[:, None], a, out)
    return out


def signed_body_distance(query, points):
    """Signed distance to the posed body (metres, negative inside) with outward directions.

    Parameters
    ----------
    query : kisekae.qa.BodyQuery
        The posed body.
    points : array_like (P, 3)

    Returns
    -------
    d : ndarray (P,)
        Signed distance, metres.
    n : ndarray (P, 3)
        Unit outward direction (from the closest surface point towards outside).
    inside : ndarray bool (P,)
    """
    from ..qa.distance import surface_distance

    p = as_points(points, "garment vertices")
    inside = query.inside(p)
    dist, tri_id = surface_distance(p, query.topology.bvh, query.state)
    faces = query.topology.faces
    tri = query.vertices[faces[np.maximum(tri_id, 0)]]
    cp = closest_points_on_triangles(p, tri)
    fn = np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0]) * query.topology.orientation
    fn /= np.maximum(np.linalg.norm(fn, axis=1, keepdims=True), 1e-30)
    v = p - cp
    ln = np.linalg.norm(v, axis=1)
    sign = np.where(inside, -1.0, 1.0)
    n = np.where((ln > 1e-7)[:, None], v * (sign / np.maximum(ln, 1e-30))[:, None], fn)
    return sign * dist, n, inside


def _garment_normals(p, faces, rows):
    """Unit area-weighted normals of the posed garment at vertices ``rows``."""
    from .pushout import vertex_normals

    return vertex_normals(p, faces)[rows].astype(np.float64)


def push_out_exact(query, points, edges, params: PushParams | None = None, tightness=None, softness=None, uvs=None,
                   max_rounds: int = 6, up=(0.0, 1.0, 0.0), garment_faces=None, crossing_rounds: int = 6):
    """Push a posed garment outside the posed body surface.

    Parameters
    ----------
    query : kisekae.qa.BodyQuery
        The posed body (``BodyQuery(topology, posed_body_vertices)``).
    points : array_like (N, 3)
        Posed garment vertices, metres.
    edges : array_like int (E, 2)
        Welded garment edges (for smoothing and the crossing fix).
    params : PushParams, optional
    tightness, softness : None, float, (N,) or texture
        Masks (see :func:`kisekae.fit.pushout.resolve_mask`).
    uvs : array_like (N, 2), optional
    max_rounds : int
        Rounds of re-pushing vertices that are still inside.
    up : array_like (3,)
        World up (skirt bias).
    garment_faces : array_like int (F, 3), optional
        Garment triangles; their normals are a fallback push direction for vertices whose
        closest surface belongs to another body part.
    crossing_rounds : int
        Rounds of the edge-crossing fix.

    Returns
    -------
    new_points : ndarray float32 (N, 3)
    info : dict
        ``push`` (N,) displacement length, ``d_before`` (N,) signed distance before, ``moved``
        (N,) bool, ``rounds`` int, ``time_ms`` float.
    """
    t0 = time.perf_counter()
    params = params or PushParams()
    params.validate()
    p0 = as_points(points, "garment vertices")
    n = len(p0)
    e = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    if e.size and (e.min() < 0 or e.max() >= n):
        raise KisekaeError(f"edge index out of range for {n} vertices", "edges")
    t = resolve_mask(tightness, n, "tightness", uvs, default=params.tightness)
    s = resolve_mask(softness, n, "softness", uvs, default=params.softness)
    up = np.asarray(up, dtype=np.float64)

    d0, n0, _ = signed_body_distance(query, p0)
    moved = d0 < params.margin
    p = p0.copy()
    floor = np.zeros(n)
    dirs = np.zeros((n, 3))
    idx = np.flatnonzero(moved)
    if idx.size:
        amt = push_amount(d0[idx], params.margin, params.stiffness, params.max_push, t[idx], s[idx], params.skirt_bias)
        dd = bias_direction(n0[idx], params.skirt_bias, up)
        p[idx] += amt[:, None] * dd
        floor[idx] = amt
        dirs[idx] = dd
    rounds = 1

    def repush(p):
        """Move allowed vertices that are still inside out of the body; returns how many were inside.

        Candidates, tried in order for each vertex: the closest surface point (when the vertex is
        behind that triangle) plus the gap, then marching along the garment normal, towards and away
        from the closest surface (the latter where body parts overlap) by growing steps up to ``max_push`` - whichever first lands
        outside by the winding-number test.
        """
        cand = np.flatnonzero(moved)
        if cand.size == 0:
            return 0
        d, nn, inside = signed_body_distance(query, p[cand])
        bad = cand[inside]
        if bad.size == 0:
            return 0
        gap = params.stiffness * (1.0 - 0.5 * t[bad]) * params.margin
        gn = _garment_normals(p, faces, bad) if faces is not None else nn[inside]
        todo = np.ones(bad.size, dtype=bool)
        trials = [(nn[inside], -d[inside] + gap)]
        for step in (0.004, 0.008, 0.016, 0.03, 0.05, 0.075, params.max_push):
            if step > params.max_push:
                continue
            for direction in (gn, nn[inside], -nn[inside]):
                trials.append((direction, np.full(bad.size, step) + gap))
        for direction, amount in trials:
            if not todo.any():
                break
            rows = np.flatnonzero(todo)
            newp = p[bad[rows]] + amount[rows, None] * direction[rows]
            disp = newp - p0[bad[rows]]
            ln = np.linalg.norm(disp, axis=1)
            ok = ln <= params.max_push
            rows, newp = rows[ok], newp[ok]
            if rows.size == 0:
                continue
            out = ~query.inside(newp)
            p[bad[rows[out]]] = newp[out]
            todo[rows[out]] = False
        return int(bad.size)

    faces = None if garment_faces is None else np.asarray(garment_faces, dtype=np.int64)
    while rounds < max_rounds and repush(p):
        rounds += 1
    if params.smooth_iterations > 0 and idx.size:
        disp = smooth_displacement(p - p0, moved, e, params.smooth_iterations, 0.5, floor, dirs)
        ln = np.linalg.norm(disp, axis=1)
        disp *= np.minimum(1.0, params.max_push / np.maximum(ln, 1e-30))[:, None]
        p = p0 + disp
        r = 0
        while r < max_rounds and repush(p):
            r += 1
        rounds += r
    # edges that still cross the body: push both ends out by the depth of the edge's deepest sample
    if e.size:
        for _ in range(crossing_rounds):
            cross = query.crossing_edges(p, e)
            if not np.any(cross):
                break
            ce = e[cross]
            best_d = np.full(len(ce), np.inf)
            best_n = np.zeros((len(ce), 3))
            for f in (0.25, 0.5, 0.75):
                d, nn, _ = signed_body_distance(query, (1 - f) * p[ce[:, 0]] + f * p[ce[:, 1]])
                better = d < best_d
                best_d[better] = d[better]
                best_n[better] = nn[better]
            amount = np.maximum(0.0, -best_d) + params.margin * max(params.stiffness, 0.25)
            for col in (0, 1):
                v = ce[:, col]
                allowed = moved[v] | (d0[v] < params.margin)
                newp = p[v] + amount[:, None] * best_n
                ok = allowed & (np.linalg.norm(newp - p0[v], axis=1) <= params.max_push)
                p[v[ok]] = newp[ok]
                moved[v[ok]] = True
    push = np.linalg.norm(p - p0, axis=1)
    return p.astype(np.float32), {
        "push": push,
        "d_before": d0,
        "moved": push > 0,
        "rounds": rounds,
        "time_ms": (time.perf_counter() - t0) * 1e3,
    }
