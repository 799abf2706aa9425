"""Ray-triangle intersection (Möller–Trumbore), two-sided.

- :func:`ray_triangle_tuv` (Numba, inlined) is the one kernel every caster and crossing test
  uses; :func:`ray_triangle_tuv_numpy` is its NumPy reference over broadcast arrays.
- :func:`ray_triangles_numpy` / :func:`ray_triangles_numba`: first hit of one ray against all
  triangles of a mesh (brute force). :mod:`kisekae.geom.raycast` does the same through a BVH.

A hit is ``o + t·d = a + u·(b − a) + v·(c − a)``; its barycentrics are ``(1 − u − v, u, v)``.
Parallel rays and degenerate triangles never hit (``t = inf``).
"""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True, inline="always")
def ray_triangle_tuv(ox, oy, oz, dx, dy, dz, ax, ay, az, bx, by, bz, cx, cy, cz, rel_eps):
    """Ray ``o + t·d`` against triangle abc: ``(t, u, v)`` with the hit at ``a + u·(b − a) + v·(c − a)``.

    Returns ``t = inf`` when the ray is parallel to the triangle or the triangle is degenerate:
    ``|det| <= rel_eps · |e1|₁ |e2|₁ |d|₁`` (a scale-free threshold; 0 means only exact zero).
    The caller checks ``u``, ``v`` and ``t`` against its own ranges and tolerances.
    """
    e1x, e1y, e1z = bx - ax, by - ay, bz - az
    e2x, e2y, e2z = cx - ax, cy - ay, cz - az
    px = dy * e2z - dz * e2y
    py = dz * e2x - dx * e2z
    pz = dx * e2y - dy * e2x
    det = e1x * px + e1y * py + e1z * pz
    scale = (abs(e1x) + abs(e1y) + abs(e1z)) * (abs(e2x) + abs(e2y) + abs(e2z)) * (abs(dx) + abs(dy) + abs(dz))
    if abs(det) <= rel_eps * scale or det == 0.0:
        return np.inf, 0.0, 0.0
    inv = 1.0 / det
    tx, ty, tz = ox - ax, oy - ay, oz - az
    u = (tx * px + ty * py + tz * pz) * inv
    qx = ty * e1z - tz * e1y
    qy = tz * e1x - tx * e1z
    qz = tx * e1y - ty * e1x
    v = (dx * qx + dy * qy + dz * qz) * inv
    t = (e2x * qx + e2y * qy + e2z * qz) * inv
    return t, u, v


def ray_triangle_tuv_numpy(origin, direction, a, b, c, rel_eps: float = 0.0):
    """NumPy reference of :func:`ray_triangle_tuv` over broadcast arrays.

    Parameters
    ----------
    origin, direction : (..., 3) float; ``direction`` need not be unit (``t`` is in its units).
    a, b, c : (..., 3) float triangle corners, metres (broadcast against the rays).
    rel_eps : float
        Scale-free parallel threshold, as in :func:`ray_triangle_tuv`.

    Returns
    -------
    t, u, v : (...) float64 each; ``t = inf`` (and u = v = 0) where the ray is parallel or the
    triangle degenerate.
    """
    o, d, a, b, c = (np.asarray(x, dtype=np.float64) for x in (origin, direction, a, b, c))
    e1, e2 = b - a, c - a
    pv = np.cross(d, e2)
    det = np.sum(e1 * pv, axis=-1)
    scale = np.abs(e1).sum(-1) * np.abs(e2).sum(-1) * np.abs(d).sum(-1)
    ok = (np.abs(det) > rel_eps * scale) & (det != 0.0)
    inv = np.where(ok, 1.0 / np.where(ok, det, 1.0), 0.0)
    tv = o - a
    u = np.sum(tv * pv, axis=-1) * inv
    qv = np.cross(tv, e1)
    v = np.sum(d * qv, axis=-1) * inv
    t = np.where(ok, np.sum(e2 * qv, axis=-1) * inv, np.inf)
    return t, u, v


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
    v = np.asarray(vertices, dtype=np.float64)
    f = np.asarray(faces, dtype=np.int64)
    t, u, w = ray_triangle_tuv_numpy(origin, direction, v[f[:, 0]], v[f[:, 1]], v[f[:, 2]])
    hit = (u >= 0) & (w >= 0) & (u + w <= 1) & (t > t_min) & np.isfinite(t)
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


@numba.njit(cache=True, inline="always")
def hit_bary(face, u, w):
    """Barycentrics ``(1 − u − w, u, w)`` of a hit as a (3,) array; zeros when ``face < 0`` (a miss)."""
    bary = np.zeros(3)
    if face >= 0:
        bary[0] = 1.0 - u - w
        bary[1] = u
        bary[2] = w
    return bary


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
    return best_f, best_t, hit_bary(best_f, bu, bw)
