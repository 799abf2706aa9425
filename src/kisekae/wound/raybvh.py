"""Ray casting on a posed mesh through a bounding volume hierarchy (first hit, barycentrics).

The tree topology comes from :func:`kisekae.qa.bvh.build_bvh`, built once on the bind (rest)
mesh. Each pose only recomputes the node boxes: :func:`refit_boxes` is a boxes-only bottom-up pass
(:func:`kisekae.qa.bvh.refit` computes the same boxes plus area vectors, centres and radii for the
winding-number queries, and its :class:`~kisekae.qa.bvh.BVHState` is accepted too). A refitted
tree is exact; only the query speed depends on how well the bind-pose splits still fit the pose.

The traversal (:func:`ray_bvh_numba`) visits the nearer child first and skips nodes whose box
entry lies beyond the best hit so far. It runs the same two-sided Moller-Trumbore test, on the
same corner order, as the brute-force :func:`kisekae.wound._geom.ray_triangles_numba`, and breaks
ties of equal ``t`` towards the lower face id, so both give the same face, ``t`` and barycentrics
bit for bit (tested).
"""

from __future__ import annotations

import numba
import numpy as np

from ..errors import KisekaeError
from ..qa.bvh import BVH, build_bvh
from ._geom import ray_triangle
from ..validate import as_faces, as_points

#: Traversal stack size; a median-split tree over 2**40 triangles is far shallower.
_STACK = 128


def build_ray_bvh(bind_vertices, faces, leaf_size: int = 8) -> BVH:
    """Tree topology for ray casting, built once per mesh (median splits on the bind pose).

    Parameters
    ----------
    bind_vertices : (N, 3) float, metres.
    faces : (F, 3) int.
    leaf_size : int, default 8, triangles per leaf.

    Returns
    -------
    :class:`kisekae.qa.bvh.BVH`
    """
    v = as_points(bind_vertices, "bind_vertices")
    f = as_faces(faces, len(v), "faces")
    if len(f) == 0:
        raise KisekaeError("the mesh has no triangles", "faces")
    if int(leaf_size) < 1:
        raise KisekaeError(f"must be >= 1, got {leaf_size!r}", "leaf_size")
    return build_bvh(v, f, int(leaf_size))


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


@numba.njit(cache=True)
def ray_bvh_numba(origin, direction, vertices, faces, left, right, order, start, count, lo, hi, t_min, pad):
    """First hit of a ray through a refitted tree (same contract as ``ray_triangles_numba``).

    Parameters
    ----------
    origin, direction : (3,) float64. vertices : (N, 3) float64; faces : (F, 3) int64.
    left, right, order, start, count : tree arrays (:class:`kisekae.qa.bvh.BVH`).
    lo, hi : (M, 3) float64 node boxes for ``vertices``.
    t_min : float, hits with ``t <= t_min`` are ignored.
    pad : float, metres added to every box side (guards grazing rays against rounding).

    Returns
    -------
    face (-1 on a miss), t, bary (3,).
    """
    ox, oy, oz = origin[0], origin[1], origin[2]
    dx, dy, dz = direction[0], direction[1], direction[2]
    o = (ox, oy, oz)
    d = (dx, dy, dz)
    inv = np.empty(3)
    for k in range(3):
        inv[k] = 1.0 / d[k] if d[k] != 0.0 else 0.0
    best_t = np.inf
    best_f = -1
    bu = 0.0
    bw = 0.0
    stack = np.empty(_STACK, np.int64)
    sp = 0
    stack[sp] = 0
    sp += 1
    while sp > 0:
        sp -= 1
        node = stack[sp]
        # slab test
        t0 = -np.inf
        t1 = np.inf
        miss = False
        for k in range(3):
            a = lo[node, k] - pad
            b = hi[node, k] + pad
            if d[k] == 0.0:
                if o[k] < a or o[k] > b:
                    miss = True
                    break
                continue
            ta = (a - o[k]) * inv[k]
            tb = (b - o[k]) * inv[k]
            if ta > tb:
                ta, tb = tb, ta
            if ta > t0:
                t0 = ta
            if tb < t1:
                t1 = tb
        if miss or t0 > t1 or t1 <= t_min or t0 > best_t:
            continue
        if left[node] >= 0:
            # push the farther child first, so the nearer one is visited next
            a = left[node]
            b = right[node]
            ca = 0.0
            cb = 0.0
            for k in range(3):
                ca += (0.5 * (lo[a, k] + hi[a, k]) - o[k]) * d[k]
                cb += (0.5 * (lo[b, k] + hi[b, k]) - o[k]) * d[k]
            if ca <= cb:
                stack[sp] = b
                stack[sp + 1] = a
            else:
                stack[sp] = a
                stack[sp + 1] = b
            sp += 2
            continue
        for s in range(start[node], start[node] + count[node]):
            f = order[s]
            t, u, w = ray_triangle(ox, oy, oz, dx, dy, dz, vertices, faces[f, 0], faces[f, 1], faces[f, 2])
            if t > t_min and (t < best_t or (t == best_t and f < best_f)):
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


def _boxes(boxes, tree, v, f):
    if boxes is None:
        return refit_boxes(tree, v, f)
    lo, hi = (boxes.lo, boxes.hi) if hasattr(boxes, "lo") else boxes
    lo = np.ascontiguousarray(lo, dtype=np.float64)
    hi = np.ascontiguousarray(hi, dtype=np.float64)
    m = len(tree.left)
    if lo.shape != (m, 3) or hi.shape != (m, 3):
        raise KisekaeError(f"expected node boxes of shape ({m}, 3), got {lo.shape} and {hi.shape}", "boxes")
    return lo, hi


def raycast_bvh(origin, direction, vertices, faces, tree: BVH, boxes=None, t_min: float = 0.0):
    """First intersection of a world ray with a (posed) mesh through a BVH, both sides.

    Parameters
    ----------
    origin, direction : (3,) float, metres; ``direction`` non-zero (need not be unit).
    vertices : (N, 3) float, posed positions, metres; faces : (F, 3) int.
    tree : BVH from :func:`build_ray_bvh` on the same ``faces`` (any pose).
    boxes : ``(lo, hi)`` from :func:`refit_boxes`, or a :class:`kisekae.qa.bvh.BVHState` from
        :func:`kisekae.qa.bvh.refit`, for these ``vertices``; computed when omitted. Pass it to cast
        many rays at one pose for the price of one refit.
    t_min : float, ignore hits at ``t <= t_min`` (units of ``direction``).

    Returns
    -------
    (face, t, bary) with ``face == -1`` on a miss; identical to :func:`kisekae.wound.raycast`.
    """
    o = np.asarray(origin, dtype=np.float64).reshape(-1)
    d = np.asarray(direction, dtype=np.float64).reshape(-1)
    if o.shape != (3,) or not np.all(np.isfinite(o)):
        raise KisekaeError(f"ray origin must be 3 finite numbers, got {origin!r}", "hit")
    if d.shape != (3,) or not np.all(np.isfinite(d)) or not np.any(d != 0):
        raise KisekaeError(f"ray direction must be 3 finite numbers, not all zero, got {direction!r}", "hit")
    if not isinstance(tree, BVH):
        raise KisekaeError(f"expected a kisekae.qa.bvh.BVH, got {type(tree).__name__}", "tree")
    v = as_points(vertices, "vertices")
    f = as_faces(faces, len(v), "faces").astype(np.int64)
    if len(tree.order) != len(f):
        raise KisekaeError(f"the tree was built for {len(tree.order)} triangles, got {len(f)}", "faces")
    lo, hi = _boxes(boxes, tree, v, f)
    pad = 1e-9 * (1.0 + float(np.abs(lo[0]).max() + np.abs(hi[0]).max())) if len(lo) else 0.0
    face, t, bary = ray_bvh_numba(o, d, v, f, tree.left, tree.right, tree.order.astype(np.int64), tree.start,
                                  tree.count, lo, hi, float(t_min), pad)
    return int(face), float(t), bary
