"""Geometry kernels for the wound module: closest point on triangles, ray/triangle hits, normals.

Each Numba kernel has a NumPy reference written independently from the formulas; the tests compare
the two. The kernels work in float64 and take C-contiguous arrays.
"""

from __future__ import annotations

import numba
import numpy as np

from ..qa.distance import closest_barycentric as _closest_on_tri
from ..qa.raytri import ray_triangle_tuv

# --------------------------------------------------------------------------------------------
# vertex normals
# --------------------------------------------------------------------------------------------


def vertex_normals(vertices: np.ndarray, faces: np.ndarray) -> np.ndarray:
    """Area-weighted vertex normals.

    Parameters
    ----------
    vertices : (N, 3) float array, metres.
    faces : (F, 3) int array.

    Returns
    -------
    (N, 3) float64 unit normals; vertices on no face (or on degenerate faces only) get (0, 0, 0).
    """
    v = np.asarray(vertices, dtype=np.float64)
    f = np.asarray(faces, dtype=np.int64)
    fn = np.cross(v[f[:, 1]] - v[f[:, 0]], v[f[:, 2]] - v[f[:, 0]])  # length = 2 * area
    out = np.zeros_like(v)
    for k in range(3):
        np.add.at(out, f[:, k], fn)
    ln = np.linalg.norm(out, axis=1, keepdims=True)
    return np.divide(out, ln, out=np.zeros_like(out), where=ln > 0)


# --------------------------------------------------------------------------------------------
# closest point on a triangle
# --------------------------------------------------------------------------------------------


def closest_point_triangles_numpy(p: np.ndarray, a: np.ndarray, b: np.ndarray, c: np.ndarray):
    """Closest points on triangles ``abc`` to points ``p`` (row-wise), NumPy reference.

    Method: project onto the triangle's plane; if the projection's barycentric coordinates are all
    non-negative it is the answer, otherwise the answer is the closest of the three edge segments'
    clamped projections. (The Numba kernel uses Ericson's Voronoi-region walk instead.)

    Parameters
    ----------
    p, a, b, c : (M, 3) float arrays.

    Returns
    -------
    q : (M, 3) closest points; bary : (M, 3) barycentric coordinates of ``q`` in (a, b, c);
    d : (M,) distances ``|p - q|``.
    """
    p, a, b, c = (np.asarray(x, dtype=np.float64) for x in (p, a, b, c))
    n = np.cross(b - a, c - a)
    nn = np.einsum("ij,ij->i", n, n)
    safe = np.where(nn > 0, nn, 1.0)
    # barycentrics of the plane projection via sub-triangle areas
    w_a = np.einsum("ij,ij->i", np.cross(c - b, p - b), n) / safe
    w_b = np.einsum("ij,ij->i", np.cross(a - c, p - c), n) / safe
    w_c = 1.0 - w_a - w_b
    inside = (w_a >= 0) & (w_b >= 0) & (w_c >= 0) & (nn > 0)
    best_q = w_a[:, None] * a + w_b[:, None] * b + w_c[:, None] * c
    best_bary = np.stack([w_a, w_b, w_c], axis=1)
    best_d = np.where(inside, np.linalg.norm(p - best_q, axis=1), np.inf)
    corners = (a, b, c)
    for i, j in ((0, 1), (1, 2), (2, 0)):
        s, e = corners[i], corners[j]
        se = e - s
        ll = np.einsum("ij,ij->i", se, se)
        t = np.clip(np.einsum("ij,ij->i", p - s, se) / np.where(ll > 0, ll, 1.0), 0.0, 1.0)
        t = np.where(ll > 0, t, 0.0)
        q = s + t[:, None] * se
        d = np.linalg.norm(p - q, axis=1)
        better = d < best_d
        bary = np.zeros_like(best_bary)
        bary[:, i] = 1.0 - t
        bary[:, j] = t
        best_q = np.where(better[:, None], q, best_q)
        best_bary = np.where(better[:, None], bary, best_bary)
        best_d = np.where(better, d, best_d)
    return best_q, best_bary, best_d


@numba.njit(cache=True, inline="always")
def _closest_on_face(px, py, pz, vertices, ia, ib, ic):
    """Barycentrics and position ``(u, v, w, qx, qy, qz)`` of the point of face (ia, ib, ic) closest to p."""
    u, v, w = _closest_on_tri(px, py, pz,
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


# --------------------------------------------------------------------------------------------
# ray / triangle
# --------------------------------------------------------------------------------------------


def ray_triangles_numpy(origin, direction, vertices, faces, t_min=0.0):
    """First hit of one ray against all triangles, NumPy reference (Moller-Trumbore, two-sided).

    Parameters
    ----------
    origin, direction : (3,) float; direction need not be unit (``t`` is in its units).
    vertices : (V, 3) float; faces : (F, 3) int.
    t_min : float
        Hits with ``t <= t_min`` are ignored.

    Returns
    -------
    face : int (-1 if no hit), t : float, bary : (3,) barycentrics (w_a, w_b, w_c) of the hit.
    """
    o = np.asarray(origin, dtype=np.float64)
    d = np.asarray(direction, dtype=np.float64)
    v = np.asarray(vertices, dtype=np.float64)
    f = np.asarray(faces, dtype=np.int64)
    a, b, c = v[f[:, 0]], v[f[:, 1]], v[f[:, 2]]
    e1, e2 = b - a, c - a
    pv = np.cross(d, e2)
    det = np.einsum("ij,ij->i", e1, pv)
    ok = np.abs(det) > 1e-300
    inv = np.where(ok, 1.0 / np.where(ok, det, 1.0), 0.0)
    tv = o - a
    u = np.einsum("ij,ij->i", tv, pv) * inv
    qv = np.cross(tv, e1)
    w = (qv @ d) * inv
    t = np.einsum("ij,ij->i", qv, e2) * inv
    hit = ok & (u >= 0) & (w >= 0) & (u + w <= 1) & (t > t_min)
    if not hit.any():
        return -1, np.inf, np.zeros(3)
    t = np.where(hit, t, np.inf)
    k = int(np.argmin(t))
    return k, float(t[k]), np.array([1.0 - u[k] - w[k], u[k], w[k]])


@numba.njit(cache=True, inline="always")
def ray_triangle(ox, oy, oz, dx, dy, dz, vertices, ia, ib, ic):
    """``(t, u, w)`` of the ray o + t·d against triangle (ia, ib, ic); t = inf on a miss.

    Barycentrics of the hit are ``(1 − u − w, u, w)``. Shared by the brute-force and BVH casters.
    """
    t, u, w = ray_triangle_tuv(ox, oy, oz, dx, dy, dz, vertices[ia, 0], vertices[ia, 1], vertices[ia, 2],
                               vertices[ib, 0], vertices[ib, 1], vertices[ib, 2],
                               vertices[ic, 0], vertices[ic, 1], vertices[ic, 2], 0.0)
    if u < 0.0 or u > 1.0 or w < 0.0 or u + w > 1.0:
        return np.inf, 0.0, 0.0
    return t, u, w


@numba.njit(cache=True)
def ray_triangles_numba(origin, direction, vertices, faces, t_min):
    """Numba twin of :func:`ray_triangles_numpy` (same contract, float64 arrays)."""
    ox, oy, oz = origin[0], origin[1], origin[2]
    dx, dy, dz = direction[0], direction[1], direction[2]
    best_t = np.inf
    best_f = -1
    bu = 0.0
    bw = 0.0
    for f in range(faces.shape[0]):
        t, u, w = ray_triangle(ox, oy, oz, dx, dy, dz, vertices, faces[f, 0], faces[f, 1], faces[f, 2])
        if t > t_min and t < best_t:
            best_t = t
            best_f = f
            bu = u
            bw = w
    bary = np.zeros(3)
    if best_f >= 0:
        bary[0] = 1.0 - bu - bw
        bary[1] = bu
        bary[2] = bw
    return best_f, best_t, bary
