"""A bounding volume hierarchy over triangles, built once per topology and refitted per pose.

The tree is built on one set of positions (usually the rest pose) by median splits; each pose
then only *refits* it (:func:`refit`), which recomputes every node's box, total area vector,
area-weighted centre and bounding radius in one bottom-up pass. The refitted tree serves the
queries in :mod:`kisekae.geom.winding` (hierarchical winding number), closest points and
segment-triangle intersections; ray casts need only the boxes (:func:`refit_boxes`). A refitted
tree stays exact; only query speed depends on how well the build-time split still matches the
pose.

:func:`refit_numpy` and :func:`refit_boxes_numpy` are the NumPy references of the two Numba
refits: every leaf straight from its triangles, every inner node from its two children.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np

from ..errors import KisekaeError
from ..validate import as_faces, as_points

LEAF_SIZE = 8


@dataclass
class BVH:
    """Tree topology (arrays, pre-order: a parent precedes its children).

    left, right : (M,) int32 children, -1 for leaves
    start, count : (M,) int32, range of ``order`` covered by each node
    order : (F,) int32, triangle ids in leaf order
    """

    left: np.ndarray
    right: np.ndarray
    start: np.ndarray
    count: np.ndarray
    order: np.ndarray


@dataclass
class BVHState:
    """Per-pose node data from :func:`refit`.

    lo, hi : (M, 3) box corners; normal : (M, 3) sum of triangle area vectors (m²);
    center : (M, 3) area-weighted centroid; radius : (M,) bound on the distance from centre to
    any point of the node's triangles; tri : (F, 3, 3) triangle corners in ``order``.
    """

    lo: np.ndarray
    hi: np.ndarray
    normal: np.ndarray
    center: np.ndarray
    radius: np.ndarray
    tri: np.ndarray


def build_bvh(vertices: np.ndarray, faces: np.ndarray, leaf_size: int = LEAF_SIZE) -> BVH:
    """Median-split BVH over triangles ``faces (F, 3)`` of ``vertices (N, 3)``."""
    v = np.asarray(vertices, dtype=np.float64)
    f = np.asarray(faces, dtype=np.int64)
    cent = v[f].mean(axis=1)
    order = np.arange(len(f), dtype=np.int32)
    left, right, start, count = [], [], [], []
    stack = [(0, len(f), -1, 0)]  # (start, end, parent, side)
    while stack:
        s, e, parent, side = stack.pop()
        node = len(left)
        left.append(-1)
        right.append(-1)
        start.append(s)
        count.append(e - s)
        if parent >= 0:
            (left if side == 0 else right)[parent] = node
        if e - s <= leaf_size:
            continue
        ids = order[s:e]
        c = cent[ids]
        axis = int(np.argmax(c.max(axis=0) - c.min(axis=0)))
        mid = (e - s) // 2
        # A stable sort, not argpartition: argpartition's order inside each half (and among equal
        # centroids) depends on the NumPy version, which changed the leaves, the summation order of
        # the winding number's far field and so the fix (up to 194 mm apart on NumPy 1.26 vs 2.4).
        part = np.argsort(c[:, axis], kind="stable")
        order[s:e] = ids[part]
        # Push right first so the left child gets the next index (pre-order).
        stack.append((s + mid, e, node, 1))
        stack.append((s, s + mid, node, 0))
    return BVH(np.asarray(left, np.int32), np.asarray(right, np.int32), np.asarray(start, np.int32),
               np.asarray(count, np.int32), order)


@numba.njit(cache=True)
def _refit(left, right, start, count, tri, lo, hi, nrm, cen, rad, area):
    m = len(left)
    for node in range(m - 1, -1, -1):
        if left[node] < 0:
            for k in range(3):
                lo[node, k] = 1e300
                hi[node, k] = -1e300
                nrm[node, k] = 0.0
                cen[node, k] = 0.0
            a_sum = 0.0
            for t in range(start[node], start[node] + count[node]):
                ax = tri[t, 1, 0] - tri[t, 0, 0]
                ay = tri[t, 1, 1] - tri[t, 0, 1]
                az = tri[t, 1, 2] - tri[t, 0, 2]
                bx = tri[t, 2, 0] - tri[t, 0, 0]
                by = tri[t, 2, 1] - tri[t, 0, 1]
                bz = tri[t, 2, 2] - tri[t, 0, 2]
                nx = 0.5 * (ay * bz - az * by)
                ny = 0.5 * (az * bx - ax * bz)
                nz = 0.5 * (ax * by - ay * bx)
                a = np.sqrt(nx * nx + ny * ny + nz * nz)
                nrm[node, 0] += nx
                nrm[node, 1] += ny
                nrm[node, 2] += nz
                for k in range(3):
                    c = (tri[t, 0, k] + tri[t, 1, k] + tri[t, 2, k]) / 3.0
                    cen[node, k] += a * c
                    for corner in range(3):
                        x = tri[t, corner, k]
                        if x < lo[node, k]:
                            lo[node, k] = x
                        if x > hi[node, k]:
                            hi[node, k] = x
                a_sum += a
            for k in range(3):
                if a_sum > 0.0:
                    cen[node, k] /= a_sum
                else:
                    cen[node, k] = 0.5 * (lo[node, k] + hi[node, k])
            r2 = 0.0
            for t in range(start[node], start[node] + count[node]):
                for corner in range(3):
                    d = 0.0
                    for k in range(3):
                        q = tri[t, corner, k] - cen[node, k]
                        d += q * q
                    if d > r2:
                        r2 = d
            rad[node] = np.sqrt(r2)
            area[node] = a_sum
        else:
            l = left[node]
            r = right[node]
            a_sum = area[l] + area[r]
            for k in range(3):
                lo[node, k] = min(lo[l, k], lo[r, k])
                hi[node, k] = max(hi[l, k], hi[r, k])
                nrm[node, k] = nrm[l, k] + nrm[r, k]
                if a_sum > 0.0:
                    cen[node, k] = (area[l] * cen[l, k] + area[r] * cen[r, k]) / a_sum
                else:
                    cen[node, k] = 0.5 * (lo[node, k] + hi[node, k])
            dl = 0.0
            dr = 0.0
            for k in range(3):
                dl += (cen[node, k] - cen[l, k]) ** 2
                dr += (cen[node, k] - cen[r, k]) ** 2
            rad[node] = max(np.sqrt(dl) + rad[l], np.sqrt(dr) + rad[r])
            area[node] = a_sum


def refit_numpy(bvh: BVH, vertices, faces) -> BVHState:
    """NumPy reference of :func:`refit` (same fields; a zero-area node is centred in its box)."""
    tri = np.asarray(vertices, dtype=np.float64)[np.asarray(faces)[bvh.order]]
    m = len(bvh.left)
    lo, hi, nrm, cen = (np.zeros((m, 3)) for _ in range(4))
    rad, area = np.zeros(m), np.zeros(m)
    for node in range(m - 1, -1, -1):
        l, r = bvh.left[node], bvh.right[node]
        if l < 0:
            t = tri[bvh.start[node]:bvh.start[node] + bvh.count[node]]
            n = 0.5 * np.cross(t[:, 1] - t[:, 0], t[:, 2] - t[:, 0])
            a = np.linalg.norm(n, axis=1)
            lo[node], hi[node] = t.reshape(-1, 3).min(axis=0), t.reshape(-1, 3).max(axis=0)
            nrm[node], area[node] = n.sum(axis=0), a.sum()
            cen[node] = (a @ t.mean(axis=1)) / area[node] if area[node] > 0 else 0.5 * (lo[node] + hi[node])
            rad[node] = np.linalg.norm(t.reshape(-1, 3) - cen[node], axis=1).max()
        else:
            lo[node], hi[node] = np.minimum(lo[l], lo[r]), np.maximum(hi[l], hi[r])
            nrm[node], area[node] = nrm[l] + nrm[r], area[l] + area[r]
            cen[node] = ((area[l] * cen[l] + area[r] * cen[r]) / area[node] if area[node] > 0
                         else 0.5 * (lo[node] + hi[node]))
            rad[node] = max(np.linalg.norm(cen[node] - cen[l]) + rad[l], np.linalg.norm(cen[node] - cen[r]) + rad[r])
    return BVHState(lo, hi, nrm, cen, rad, tri)


def refit(bvh: BVH, vertices: np.ndarray, faces: np.ndarray) -> BVHState:
    """Node boxes, area vectors, centres and radii for new ``vertices`` (same ``faces``), Numba.

    Parameters
    ----------
    bvh : BVH from :func:`build_bvh` on the same ``faces``.
    vertices : (N, 3) float, metres; faces : (F, 3) int.

    Returns
    -------
    BVHState (float64 arrays, see there).
    """
    v = np.asarray(vertices, dtype=np.float64)
    tri = np.ascontiguousarray(v[np.asarray(faces)[bvh.order]])
    m = len(bvh.left)
    lo, hi, nrm, cen = (np.empty((m, 3)) for _ in range(4))
    rad, area = np.empty(m), np.empty(m)
    _refit(bvh.left, bvh.right, bvh.start, bvh.count, tri, lo, hi, nrm, cen, rad, area)
    return BVHState(lo, hi, nrm, cen, rad, tri)


@numba.njit(cache=True)
def refit_boxes_numba(left, right, start, count, order, vertices, faces, lo, hi):
    """Node boxes of a pre-order tree for ``vertices`` (N, 3) float64; writes ``lo``, ``hi`` (M, 3)."""
    for node in range(left.shape[0] - 1, -1, -1):
        if left[node] < 0:
            lx = ly = lz = np.inf
            hx = hy = hz = -np.inf
            for s in range(start[node], start[node] + count[node]):
                f = order[s]
                for c in range(3):
                    vi = faces[f, c]
                    x = vertices[vi, 0]
                    y = vertices[vi, 1]
                    z = vertices[vi, 2]
                    lx = min(lx, x)
                    ly = min(ly, y)
                    lz = min(lz, z)
                    hx = max(hx, x)
                    hy = max(hy, y)
                    hz = max(hz, z)
            lo[node, 0] = lx
            lo[node, 1] = ly
            lo[node, 2] = lz
            hi[node, 0] = hx
            hi[node, 1] = hy
            hi[node, 2] = hz
        else:
            a = left[node]
            b = right[node]
            for k in range(3):
                lo[node, k] = min(lo[a, k], lo[b, k])
                hi[node, k] = max(hi[a, k], hi[b, k])
    return lo, hi


def refit_boxes_numpy(tree: BVH, vertices, faces):
    """NumPy reference of :func:`refit_boxes`: each node's box straight from its triangles' corners."""
    v = np.asarray(vertices, dtype=np.float64)
    tri = v[np.asarray(faces)[tree.order]]  # (F, 3, 3) in leaf order
    m = len(tree.left)
    lo = np.empty((m, 3))
    hi = np.empty((m, 3))
    for node in range(m):
        s, c = int(tree.start[node]), int(tree.count[node])
        pts = tri[s:s + c].reshape(-1, 3)
        lo[node] = pts.min(axis=0)
        hi[node] = pts.max(axis=0)
    return lo, hi


def refit_boxes(tree: BVH, vertices, faces):
    """Node boxes for a pose: ``(lo, hi)``, each (M, 3) float64 metres.

    Parameters
    ----------
    tree : BVH from :func:`build_ray_bvh` (same ``faces``).
    vertices : (N, 3) float, posed positions, metres.
    faces : (F, 3) int.
    """
    v = as_points(vertices, "vertices")
    f = as_faces(faces, len(v), "faces").astype(np.int64)
    if len(tree.order) != len(f):
        raise KisekaeError(f"the tree was built for {len(tree.order)} triangles, got {len(f)}", "faces")
    m = len(tree.left)
    lo = np.empty((m, 3))
    hi = np.empty((m, 3))
    return refit_boxes_numba(tree.left, tree.right, tree.start, tree.count, tree.order.astype(np.int64), v, f,
                             lo, hi)
