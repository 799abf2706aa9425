"""Edges that cross triangles of a mesh (segment-triangle intersection, BVH-pruned).

A segment p0→p1 crosses triangle abc when the ray ``p0 + s·(p1 − p0)`` hits it (two-sided
Möller–Trumbore, :func:`kisekae.geom.raytri.ray_triangle_tuv`) with ``0 <= s <= 1``; endpoints
and triangle edges count. Parallel segments (``|det| <= 1e-12`` of the scale-free bound) do not.
:func:`edge_crossings_numpy` is the brute-force NumPy reference of :func:`edge_crossings`.
"""

from __future__ import annotations

import numba
import numpy as np

from .bvh import BVH, BVHState
from .raytri import ray_triangle_tuv, ray_triangle_tuv_numpy

#: Scale-free parallel threshold of the segment test.
PARALLEL_EPS = 1e-12


@numba.njit(cache=True)
def segment_hits_triangle(p0, p1, tri, t):
    """Möller–Trumbore test of segment p0→p1 against ``tri[t]`` (endpoints included)."""
    s, u, v = ray_triangle_tuv(p0[0], p0[1], p0[2], p1[0] - p0[0], p1[1] - p0[1], p1[2] - p0[2],
                               tri[t, 0, 0], tri[t, 0, 1], tri[t, 0, 2], tri[t, 1, 0], tri[t, 1, 1], tri[t, 1, 2],
                               tri[t, 2, 0], tri[t, 2, 1], tri[t, 2, 2], PARALLEL_EPS)
    return 0.0 <= u <= 1.0 and v >= 0.0 and u + v <= 1.0 and 0.0 <= s <= 1.0


@numba.njit(cache=True)
def _crossings(points, edges, left, right, start, count, lo, hi, tri, tri_vid, out, out_tri):
    stack = np.empty(128, np.int32)
    exclude = tri_vid.shape[0] > 0
    for e in range(len(edges)):
        a = edges[e, 0]
        b = edges[e, 1]
        p0 = points[edges[e, 0]]
        p1 = points[edges[e, 1]]
        blo0 = min(p0[0], p1[0])
        blo1 = min(p0[1], p1[1])
        blo2 = min(p0[2], p1[2])
        bhi0 = max(p0[0], p1[0])
        bhi1 = max(p0[1], p1[1])
        bhi2 = max(p0[2], p1[2])
        hit = False
        hit_t = -1
        stack[0] = 0
        top = 1
        while top > 0 and not hit:
            top -= 1
            node = stack[top]
            if (lo[node, 0] > bhi0 or hi[node, 0] < blo0 or lo[node, 1] > bhi1 or hi[node, 1] < blo1
                    or lo[node, 2] > bhi2 or hi[node, 2] < blo2):
                continue
            if left[node] < 0:
                for t in range(start[node], start[node] + count[node]):
                    if exclude and (tri_vid[t, 0] == a or tri_vid[t, 1] == a or tri_vid[t, 2] == a
                                    or tri_vid[t, 0] == b or tri_vid[t, 1] == b or tri_vid[t, 2] == b):
                        continue
                    if segment_hits_triangle(p0, p1, tri, t):
                        hit = True
                        hit_t = t
                        break
            else:
                stack[top] = left[node]
                stack[top + 1] = right[node]
                top += 2
        out[e] = hit
        out_tri[e] = hit_t


def edge_crossings(points, edges, bvh: BVH, state: BVHState, *, return_triangles: bool = False,
                   exclude_incident=None):
    """(E,) bool: does garment edge ``edges[e]`` (between ``points``) cross any body triangle?

    With ``return_triangles``, also return ``(E,)`` int32 ids (into the mesh's faces) of one
    crossed triangle per crossing edge, -1 elsewhere.

    ``exclude_incident`` : (F, 3) int or None, vertex ids of the BVH's faces in the numbering of
    ``edges``. When given (the edges belong to the same mesh), a triangle that shares a vertex
    with the edge is skipped, so a mesh can be tested against itself.
    """
    p = np.ascontiguousarray(points, dtype=np.float64).reshape(-1, 3)
    e = np.ascontiguousarray(edges, dtype=np.int64).reshape(-1, 2)
    out = np.zeros(len(e), dtype=np.bool_)
    out_t = np.full(len(e), -1, dtype=np.int64)
    if exclude_incident is None:
        tri_vid = np.zeros((0, 3), dtype=np.int64)
    else:
        tri_vid = np.ascontiguousarray(np.asarray(exclude_incident, dtype=np.int64)[bvh.order])
    _crossings(p, e, bvh.left, bvh.right, bvh.start, bvh.count, state.lo, state.hi, state.tri, tri_vid, out, out_t)
    if return_triangles:
        return out, np.where(out_t >= 0, bvh.order[np.maximum(out_t, 0)], -1).astype(np.int32)
    return out


def edge_crossings_numpy(points, edges, vertices, faces, chunk: int = 256) -> np.ndarray:
    """(E,) bool, brute force over all triangles: NumPy reference of :func:`edge_crossings`.

    Parameters
    ----------
    points : (N, 3) float, metres; edges : (E, 2) int into ``points``.
    vertices : (V, 3) float, metres; faces : (F, 3) int.
    chunk : int
        Edges per batch (memory is ``chunk · F`` floats per array).
    """
    p = np.asarray(points, dtype=np.float64).reshape(-1, 3)
    e = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    tri = np.asarray(vertices, dtype=np.float64)[np.asarray(faces)]
    out = np.zeros(len(e), dtype=bool)
    for s in range(0, len(e), chunk):
        p0 = p[e[s:s + chunk, 0]][:, None]
        p1 = p[e[s:s + chunk, 1]][:, None]
        t, u, v = ray_triangle_tuv_numpy(p0, p1 - p0, tri[None, :, 0], tri[None, :, 1], tri[None, :, 2], PARALLEL_EPS)
        hit = (u >= 0) & (u <= 1) & (v >= 0) & (u + v <= 1) & (t >= 0) & (t <= 1)
        out[s:s + chunk] = hit.any(axis=1)
    return out
