"""Unsigned distance from points to a triangle mesh (exact closest point, BVH-pruned)."""

from __future__ import annotations

import numba
import numpy as np

from .bvh import BVH, BVHState


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
        den = d1 - d3
        t = d1 / den if den > 0.0 else 0.0
        return 1.0 - t, t, 0.0
    cpx, cpy, cpz = px - cx, py - cy, pz - cz
    d5 = abx * cpx + aby * cpy + abz * cpz
    d6 = acx * cpx + acy * cpy + acz * cpz
    if d6 >= 0.0 and d5 <= d6:
        return 0.0, 0.0, 1.0
    vb = d5 * d2 - d1 * d6
    if vb <= 0.0 and d2 >= 0.0 and d6 <= 0.0:
        den = d2 - d6
        t = d2 / den if den > 0.0 else 0.0
        return 1.0 - t, 0.0, t
    va = d3 * d6 - d5 * d4
    if va <= 0.0 and (d4 - d3) >= 0.0 and (d5 - d6) >= 0.0:
        den = (d4 - d3) + (d5 - d6)
        t = (d4 - d3) / den if den > 0.0 else 0.0
        return 0.0, 1.0 - t, t
    den = va + vb + vc
    if not den > 0.0:  # degenerate triangle: fall back to vertex a
        return 1.0, 0.0, 0.0
    v = vb / den
    w = vc / den
    return 1.0 - v - w, v, w


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
