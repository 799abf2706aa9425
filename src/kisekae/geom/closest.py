"""Closest points on triangles, and unsigned distance from points to a triangle mesh.

- :func:`closest_barycentric` (Numba, inlined into every caller's loop) is Ericson's
  Voronoi-region walk (Real-Time Collision Detection, 5.1.5) for one point and one triangle;
  :func:`closest_point_triangles_numpy` is the same walk over arrays, row by row (the reference,
  and the vectorised path for one triangle per point).
- :func:`surface_distance`: distance to a whole mesh through a refitted :mod:`~kisekae.geom.bvh`.
- :func:`closest_point_candidates_numba`: best and second-best closest points among candidate
  triangles listed per point (CSR), for correspondence searches.

Degenerate triangles (a zero-length edge, zero area) fall back to the nearest valid feature and
never divide by zero. Ties go to the first region of the walk: vertex a, b, edge ab, vertex c,
edge ac, edge bc, then the interior.
"""

from __future__ import annotations

import numba
import numpy as np

from .bvh import BVH, BVHState


def closest_point_triangles_numpy(p, a, b, c):
    """Closest points on triangles ``abc`` to points ``p``, row by row (NumPy, Ericson's regions).

    Parameters
    ----------
    p, a, b, c : (M, 3) float, metres.

    Returns
    -------
    q : (M, 3) float64 closest points; bary : (M, 3) their barycentric coordinates in (a, b, c);
    d : (M,) distances ``|p − q|``, metres.
    """
    p, a, b, c = (np.asarray(x, dtype=np.float64).reshape(-1, 3) for x in (p, a, b, c))
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
    degenerate = ~(denom > 0.0)
    denom = np.where(degenerate, 1.0, denom)
    v = np.where(degenerate, 0.0, vb / denom)
    w = np.where(degenerate, 0.0, vc / denom)
    q = a + ab * v[:, None] + ac * w[:, None]  # interior (vertex a for a degenerate triangle)
    bary = np.stack([1.0 - v - w, v, w], axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        t_ab = np.nan_to_num(np.clip(d1 / (d1 - d3), 0, 1))
        t_ac = np.nan_to_num(np.clip(d2 / (d2 - d6), 0, 1))
        t_bc = np.nan_to_num(np.clip((d4 - d3) / ((d4 - d3) + (d5 - d6)), 0, 1))
    one, zero = np.ones_like(d1), np.zeros_like(d1)
    # Later regions override earlier ones: the last assignment is the first region of the walk.
    regions = (
        ((va <= 0) & ((d4 - d3) >= 0) & ((d5 - d6) >= 0), b + (c - b) * t_bc[:, None], (zero, 1 - t_bc, t_bc)),
        ((vb <= 0) & (d2 >= 0) & (d6 <= 0), a + ac * t_ac[:, None], (1 - t_ac, zero, t_ac)),
        ((d6 >= 0) & (d5 <= d6), c, (zero, zero, one)),
        ((vc <= 0) & (d1 >= 0) & (d3 <= 0), a + ab * t_ab[:, None], (1 - t_ab, t_ab, zero)),
        ((d3 >= 0) & (d4 <= d3), b, (zero, one, zero)),
        ((d1 <= 0) & (d2 <= 0), a, (one, zero, zero)),
    )
    for mask, point, weights in regions:
        q = np.where(mask[:, None], point, q)
        bary = np.where(mask[:, None], np.stack(weights, axis=1), bary)
    return q, bary, np.linalg.norm(p - q, axis=1)


@numba.njit(cache=True, inline="always")
def _edge_t(num, den):
    """Parameter ``num / den`` of the closest point along an edge; 0 on a zero-length edge."""
    return num / den if den > 0.0 else 0.0


@numba.njit(cache=True, inline="always")
def closest_barycentric(px, py, pz, ax, ay, az, bx, by, bz, cx, cy, cz):
    """Barycentrics ``(u, v, w)`` of the point of triangle abc closest to p.

    Ericson, Real-Time Collision Detection, 5.1.5, with guards for degenerate triangles (a
    zero-length edge or zero area falls back to the nearest valid feature, never divides by 0).
    """
    abx, aby, abz = bx - ax, by - ay, bz - az
    acx, acy, acz = cx - ax, cy - ay, cz - az
    apx, apy, apz = px - ax, py - ay, pz - az
    d1 = abx * apx + aby * apy + abz * apz
    d2 = acx * apx + acy * apy + acz * apz
    if d1 <= 0.0 and d2 <= 0.0:
        return 1.0, 0.0, 0.0
    bpx, bpy, bpz = px - bx, py - by, pz - bz
    d3 = abx * bpx + aby * bpy + abz * bpz
    d4 = acx * bpx + acy * bpy + acz * bpz
    if d3 >= 0.0 and d4 <= d3:
        return 0.0, 1.0, 0.0
    vc = d1 * d4 - d3 * d2
    if vc <= 0.0 and d1 >= 0.0 and d3 <= 0.0:
        t = _edge_t(d1, d1 - d3)
        return 1.0 - t, t, 0.0
    cpx, cpy, cpz = px - cx, py - cy, pz - cz
    d5 = abx * cpx + aby * cpy + abz * cpz
    d6 = acx * cpx + acy * cpy + acz * cpz
    if d6 >= 0.0 and d5 <= d6:
        return 0.0, 0.0, 1.0
    vb = d5 * d2 - d1 * d6
    if vb <= 0.0 and d2 >= 0.0 and d6 <= 0.0:
        t = _edge_t(d2, d2 - d6)
        return 1.0 - t, 0.0, t
    va = d3 * d6 - d5 * d4
    if va <= 0.0 and (d4 - d3) >= 0.0 and (d5 - d6) >= 0.0:
        t = _edge_t(d4 - d3, (d4 - d3) + (d5 - d6))
        return 0.0, 1.0 - t, t
    den = va + vb + vc
    if not den > 0.0:  # degenerate triangle: fall back to vertex a
        return 1.0, 0.0, 0.0
    v = vb / den
    w = vc / den
    return 1.0 - v - w, v, w


@numba.njit(cache=True, inline="always")
def closest_point_and_normal(px, py, pz, v, a, b, c, orientation):
    """Closest point of triangle ``v[a], v[b], v[c]`` to p and the triangle's unit normal.

    Returns ``(u, w1, w2, qx, qy, qz, nx, ny, nz)``: barycentrics, the point, and ``orientation`` times the unit
    ``cross(b − a, c − a)`` (a zero-area triangle gives a zero normal).
    """
    u, w1, w2 = closest_barycentric(px, py, pz, v[a, 0], v[a, 1], v[a, 2], v[b, 0], v[b, 1], v[b, 2], v[c, 0], v[c, 1],
                                    v[c, 2])
    ex, ey, ez = v[b, 0] - v[a, 0], v[b, 1] - v[a, 1], v[b, 2] - v[a, 2]
    fx, fy, fz = v[c, 0] - v[a, 0], v[c, 1] - v[a, 1], v[c, 2] - v[a, 2]
    nx, ny, nz = (ey * fz - ez * fy) * orientation, (ez * fx - ex * fz) * orientation, (ex * fy - ey * fx) * orientation
    nl = max(np.sqrt(nx * nx + ny * ny + nz * nz), 1e-15)
    qx = u * v[a, 0] + w1 * v[b, 0] + w2 * v[c, 0]
    qy = u * v[a, 1] + w1 * v[b, 1] + w2 * v[c, 1]
    qz = u * v[a, 2] + w1 * v[b, 2] + w2 * v[c, 2]
    return u, w1, w2, qx, qy, qz, nx / nl, ny / nl, nz / nl


@numba.njit(cache=True)
def point_triangle_distance2(px, py, pz, tri, t):
    """Squared distance from p to triangle ``tri[t]`` ((F, 3, 3) corner array)."""
    ax, ay, az = tri[t, 0, 0], tri[t, 0, 1], tri[t, 0, 2]
    bx, by, bz = tri[t, 1, 0], tri[t, 1, 1], tri[t, 1, 2]
    cx, cy, cz = tri[t, 2, 0], tri[t, 2, 1], tri[t, 2, 2]
    u, v, w = closest_barycentric(px, py, pz, ax, ay, az, bx, by, bz, cx, cy, cz)
    qx = u * ax + v * bx + w * cx
    qy = u * ay + v * by + w * cy
    qz = u * az + v * bz + w * cz
    return (px - qx) ** 2 + (py - qy) ** 2 + (pz - qz) ** 2


@numba.njit(cache=True)
def _closest(points, left, right, start, count, lo, hi, tri, out, out_tri):
    stack = np.empty(128, np.int32)
    for i in range(len(points)):
        px, py, pz = points[i, 0], points[i, 1], points[i, 2]
        best = 1e300
        best_t = -1
        stack[0] = 0
        top = 1
        while top > 0:
            top -= 1
            node = stack[top]
            dx = max(lo[node, 0] - px, 0.0, px - hi[node, 0])
            dy = max(lo[node, 1] - py, 0.0, py - hi[node, 1])
            dz = max(lo[node, 2] - pz, 0.0, pz - hi[node, 2])
            if dx * dx + dy * dy + dz * dz >= best:
                continue
            if left[node] < 0:
                for t in range(start[node], start[node] + count[node]):
                    d = point_triangle_distance2(px, py, pz, tri, t)
                    if d < best:
                        best = d
                        best_t = t
            else:
                # Visit the nearer child first.
                l = left[node]
                r = right[node]
                cl = 0.0
                cr = 0.0
                for k in range(3):
                    cl += (0.5 * (lo[l, k] + hi[l, k]) - points[i, k]) ** 2
                    cr += (0.5 * (lo[r, k] + hi[r, k]) - points[i, k]) ** 2
                if cl < cr:
                    stack[top] = r
                    stack[top + 1] = l
                else:
                    stack[top] = l
                    stack[top + 1] = r
                top += 2
        out[i] = np.sqrt(best)
        out_tri[i] = best_t


def surface_distance(points, bvh: BVH, state: BVHState):
    """Distance (m) from each point to the surface, and the nearest triangle id.

    Returns
    -------
    distance : (P,) float64, metres
    triangle : (P,) int32 index into the mesh's faces
    """
    p = np.ascontiguousarray(points, dtype=np.float64).reshape(-1, 3)
    out = np.empty(len(p))
    out_t = np.empty(len(p), np.int64)
    _closest(p, bvh.left, bvh.right, bvh.start, bvh.count, state.lo, state.hi, state.tri, out, out_t)
    tri_ids = np.where(out_t >= 0, bvh.order[np.maximum(out_t, 0)], -1).astype(np.int32)
    return out, tri_ids


@numba.njit(cache=True, inline="always")
def _closest_on_face(px, py, pz, vertices, ia, ib, ic):
    """Barycentrics and position ``(u, v, w, qx, qy, qz)`` of the point of face (ia, ib, ic) closest to p."""
    u, v, w = closest_barycentric(px, py, pz,
                                  vertices[ia, 0], vertices[ia, 1], vertices[ia, 2],
                              vertices[ib, 0], vertices[ib, 1], vertices[ib, 2],
                              vertices[ic, 0], vertices[ic, 1], vertices[ic, 2])
    qx = u * vertices[ia, 0] + v * vertices[ib, 0] + w * vertices[ic, 0]
    qy = u * vertices[ia, 1] + v * vertices[ib, 1] + w * vertices[ic, 1]
    qz = u * vertices[ia, 2] + v * vertices[ib, 2] + w * vertices[ic, 2]
    return u, v, w, qx, qy, qz


@numba.njit(cache=True)
def closest_point_candidates_numba(points, vertices, faces, cand_ptr, cand_idx, sep_abs, sep_rel, sep_vertices):
    """Best and second-best closest points among candidate triangles, per query point.

    Parameters
    ----------
    points : (M, 3) float64 query points.
    vertices : (V, 3) float64; faces : (F, 3) int64.
    cand_ptr : (M+1,) int64 and cand_idx : (C,) int64, CSR lists of candidate faces per point.
    sep_abs, sep_rel : float
        The second-best answer is the closest point on a candidate face that lies farther than
        ``sep_abs + sep_rel * best distance`` from the best closest point (measured in
        ``sep_vertices``), i.e. on a different part of the mesh.
    sep_vertices : (V, 3) float64
        The space that separation is measured in: ``vertices`` itself for a 3D search, the
        target's 3D positions for a search in UV space (so overlapping UV islands are found).

    Returns
    -------
    face (M,) int64 (-1 when no candidate), bary (M, 3), dist (M,), face2 (M,), dist2 (M,)
    (``inf`` when there is no second answer).
    """
    m = points.shape[0]
    face = np.full(m, -1, np.int64)
    face2 = np.full(m, -1, np.int64)
    bary = np.zeros((m, 3))
    dist = np.full(m, np.inf)
    dist2 = np.full(m, np.inf)
    for i in range(m):
        px, py, pz = points[i, 0], points[i, 1], points[i, 2]
        best = np.inf
        for k in range(cand_ptr[i], cand_ptr[i + 1]):
            f = cand_idx[k]
            ia, ib, ic = faces[f, 0], faces[f, 1], faces[f, 2]
            u, v, w, qx, qy, qz = _closest_on_face(px, py, pz, vertices, ia, ib, ic)
            d = np.sqrt((px - qx) ** 2 + (py - qy) ** 2 + (pz - qz) ** 2)
            if d < best:
                best = d
                face[i] = f
                bary[i, 0] = u
                bary[i, 1] = v
                bary[i, 2] = w
        dist[i] = best
        if face[i] < 0:
            continue
        fb = face[i]
        bq0 = bq1 = bq2 = 0.0
        for j in range(3):
            bq0 += bary[i, j] * sep_vertices[faces[fb, j], 0]
            bq1 += bary[i, j] * sep_vertices[faces[fb, j], 1]
            bq2 += bary[i, j] * sep_vertices[faces[fb, j], 2]
        sep = sep_abs + sep_rel * best
        best2 = np.inf
        for k in range(cand_ptr[i], cand_ptr[i + 1]):
            f = cand_idx[k]
            ia, ib, ic = faces[f, 0], faces[f, 1], faces[f, 2]
            u, v, w, qx, qy, qz = _closest_on_face(px, py, pz, vertices, ia, ib, ic)
            sx = u * sep_vertices[ia, 0] + v * sep_vertices[ib, 0] + w * sep_vertices[ic, 0]
            sy = u * sep_vertices[ia, 1] + v * sep_vertices[ib, 1] + w * sep_vertices[ic, 1]
            sz = u * sep_vertices[ia, 2] + v * sep_vertices[ib, 2] + w * sep_vertices[ic, 2]
            if (sx - bq0) ** 2 + (sy - bq1) ** 2 + (sz - bq2) ** 2 <= sep * sep:
                continue
            d = np.sqrt((px - qx) ** 2 + (py - qy) ** 2 + (pz - qz) ** 2)
            if d < best2:
                best2 = d
                face2[i] = f
        dist2[i] = best2
    return face, bary, dist, face2, dist2
