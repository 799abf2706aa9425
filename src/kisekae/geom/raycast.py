"""Ray casting through a bounding volume hierarchy (:mod:`kisekae.geom.bvh`).

- First hit (:func:`raycast_bvh`, many rays at one pose :func:`raycast_bvh_many`, kernel :func:`ray_bvh_numba`):
  the traversal visits the nearer
  child first and skips nodes whose box entry lies beyond the best hit so far. It runs the same
  two-sided Möller–Trumbore test (:func:`kisekae.geom.raytri.ray_triangle`), on the same corner
  order, as the brute-force :func:`kisekae.geom.raytri.ray_triangles_numba`, and breaks ties of
  equal ``t`` towards the lower face id, so both give the same face, ``t`` and barycentrics bit for
  bit (tested).
- Any hit within a distance (:func:`ray_hits`, NumPy reference :func:`ray_hits_reference`): for
  occlusion tests such as covered skin; hits within a barycentric tolerance of an edge count.

The tree is built once (usually on the bind pose, :func:`build_ray_bvh`) and each pose only
refits its boxes (:func:`kisekae.geom.bvh.refit_boxes`, or the full :func:`kisekae.geom.bvh.refit`).
"""

from __future__ import annotations

import numba
import numpy as np

from ..errors import KisekaeError
from ..validate import as_faces, as_points, positive
from .bvh import BVH, build_bvh, refit, refit_boxes
from .raytri import hit_bary, ray_triangle, ray_triangle_tuv, ray_triangle_tuv_numpy

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
    :class:`kisekae.geom.bvh.BVH`
    """
    v = as_points(bind_vertices, "bind_vertices")
    f = as_faces(faces, len(v), "faces")
    if len(f) == 0:
        raise KisekaeError("the mesh has no triangles", "faces")
    if int(leaf_size) < 1:
        raise KisekaeError(f"must be >= 1, got {leaf_size!r}", "leaf_size")
    return build_bvh(v, f, int(leaf_size))


@numba.njit(cache=True, inline="always")
def _slab(o, d, inv, lo, hi, node, pad):
    """Entry and exit ``(t0, t1)`` of the line ``o + t·d`` through the node's box grown by ``pad``.

    ``t0 > t1`` when the line misses the box (a zero direction component misses unless the origin
    lies between that axis' slabs). ``inv`` is ``1 / d`` per axis (0 where ``d`` is 0).
    """
    t0 = -np.inf
    t1 = np.inf
    for k in range(3):
        a = lo[node, k] - pad
        b = hi[node, k] + pad
        if d[k] == 0.0:
            if o[k] < a or o[k] > b:
                return np.inf, -np.inf
            continue
        ta = (a - o[k]) * inv[k]
        tb = (b - o[k]) * inv[k]
        if ta > tb:
            ta, tb = tb, ta
        if ta > t0:
            t0 = ta
        if tb < t1:
            t1 = tb
    return t0, t1


@numba.njit(cache=True, inline="always")
def _nearer_child(o, d, lo, hi, a, b):
    """``(near, far)``: children ``a`` and ``b`` ordered by their box centres' distance along ``d``."""
    ca = 0.0
    cb = 0.0
    for k in range(3):
        ca += (0.5 * (lo[a, k] + hi[a, k]) - o[k]) * d[k]
        cb += (0.5 * (lo[b, k] + hi[b, k]) - o[k]) * d[k]
    return (a, b) if ca <= cb else (b, a)


@numba.njit(cache=True)
def ray_bvh_numba(origin, direction, vertices, faces, left, right, order, start, count, lo, hi, t_min, pad):
    """First hit of a ray through a refitted tree (same contract as ``ray_triangles_numba``).

    Parameters
    ----------
    origin, direction : (3,) float64. vertices : (N, 3) float64; faces : (F, 3) int64.
    left, right, order, start, count : tree arrays (:class:`kisekae.geom.bvh.BVH`).
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
        t0, t1 = _slab(o, d, inv, lo, hi, node, pad)
        if t0 > t1 or t1 <= t_min or t0 > best_t:
            continue
        if left[node] >= 0:
            near, far = _nearer_child(o, d, lo, hi, left[node], right[node])
            stack[sp] = far  # pushed first, so the nearer one is visited next
            stack[sp + 1] = near
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
    return best_f, best_t, hit_bary(best_f, bu, bw)


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


def check_ray(origin, direction) -> tuple:
    """``(origin, direction)`` as (3,) float64 arrays, or :class:`KisekaeError` ("hit") unless both are 3 finite
    numbers and the direction is not all zero."""
    o = np.asarray(origin, dtype=np.float64).reshape(-1)
    d = np.asarray(direction, dtype=np.float64).reshape(-1)
    if o.shape != (3,) or not np.all(np.isfinite(o)):
        raise KisekaeError(f"ray origin must be 3 finite numbers, got {origin!r}", "hit")
    if d.shape != (3,) or not np.all(np.isfinite(d)) or not np.any(d != 0):
        raise KisekaeError(f"ray direction must be 3 finite numbers, not all zero, got {direction!r}", "hit")
    return o, d


def raycast_bvh(origin, direction, vertices, faces, tree: BVH, boxes=None, t_min: float = 0.0):
    """First intersection of a world ray with a (posed) mesh through a BVH, both sides.

    Parameters
    ----------
    origin, direction : (3,) float, metres; ``direction`` non-zero (need not be unit).
    vertices : (N, 3) float, posed positions, metres; faces : (F, 3) int.
    tree : BVH from :func:`build_ray_bvh` on the same ``faces`` (any pose).
    boxes : ``(lo, hi)`` from :func:`refit_boxes`, or a :class:`kisekae.geom.bvh.BVHState` from
        :func:`kisekae.geom.bvh.refit`, for these ``vertices``; computed when omitted. Pass it to cast
        many rays at one pose for the price of one refit.
    t_min : float, ignore hits at ``t <= t_min`` (units of ``direction``).

    Returns
    -------
    (face, t, bary) with ``face == -1`` on a miss; identical to :func:`kisekae.wound.raycast`.
    """
    o, d = check_ray(origin, direction)
    if not isinstance(tree, BVH):
        raise KisekaeError(f"expected a kisekae.geom.bvh.BVH, got {type(tree).__name__}", "tree")
    v, f, nodes, pad = _traversal(vertices, faces, tree, boxes)
    face, t, bary = ray_bvh_numba(o, d, v, f, *nodes, float(t_min), pad)
    return int(face), float(t), bary


def _traversal(vertices, faces, tree: BVH, boxes=None) -> tuple:
    """``(vertices, faces int64, the tree's arrays ray_bvh_numba reads after the faces (left, right, order, start,
    count, lo, hi), the boxes' pad)`` of checked inputs, the boxes refitted once (or taken from ``boxes``), shared by
    every ray cast at this pose."""
    v = as_points(vertices, "vertices")
    f = as_faces(faces, len(v), "faces").astype(np.int64)
    if len(tree.order) != len(f):
        raise KisekaeError(f"the tree was built for {len(tree.order)} triangles, got {len(f)}", "faces")
    lo, hi = _boxes(boxes, tree, v, f)
    pad = 1e-9 * (1.0 + float(np.abs(lo[0]).max() + np.abs(hi[0]).max())) if len(lo) else 0.0
    return v, f, (tree.left, tree.right, tree.order.astype(np.int64), tree.start, tree.count, lo, hi), pad


def raycast_bvh_many(origins, directions, vertices, faces, tree: BVH | None = None, t_min: float = 0.0) -> tuple:
    """First hits of many rays with one (posed) mesh, both sides: :func:`raycast_bvh` for each ray, the boxes
    refitted once.

    Parameters
    ----------
    origins, directions : (R, 3) float, metres; directions need not be unit (``t`` is in their units); a zero
        direction gives a miss
    vertices : (N, 3) float, metres; faces : (F, 3) int
    tree : BVH from :func:`build_ray_bvh` on the same ``faces``, or None: built here on ``vertices``
    t_min : float, ignore hits at ``t <= t_min``

    Returns
    -------
    ``(face (R,) int64, -1 on a miss; t (R,) float64, inf on a miss; bary (R, 3) float64)``
    """
    o = as_points(origins, "ray origins")
    d = as_points(directions, "ray directions")
    if d.shape != o.shape:
        raise KisekaeError(f"{len(d)} directions for {len(o)} origins", "ray directions")
    face = np.full(len(o), -1, dtype=np.int64)
    t = np.full(len(o), np.inf)
    bary = np.zeros((len(o), 3))
    v = as_points(vertices, "vertices")
    f = as_faces(faces, len(v), "faces").astype(np.int64)
    if not len(f):
        return face, t, bary
    v, f, nodes, pad = _traversal(v, f, build_ray_bvh(v, f) if tree is None else tree)
    for i in np.flatnonzero(np.any(d != 0.0, axis=1)):
        hit, ti, bi = ray_bvh_numba(o[i], d[i], v, f, *nodes, float(t_min), pad)
        if hit >= 0:
            face[i], t[i], bary[i] = hit, ti, bi
    return face, t, bary


# --------------------------------------------------------------------------- any hit within a distance
#: Barycentric tolerance: a ray through a shared edge hits (at least) one of its triangles even
#: with rounding, so a closed garment has no pin-holes. Edge hits count as hits.
_EDGE_EPS = 1e-9


def ray_hits_reference(origins, directions, max_distance, triangles):
    """Whether each ray hits any triangle within ``max_distance`` (brute force, NumPy).

    Parameters
    ----------
    origins : array_like (R, 3)
        Ray origins, metres.
    directions : array_like (R, 3)
        Unit ray directions.
    max_distance : float
        Hits farther along the ray than this (metres) do not count; hits behind the origin never do.
    triangles : array_like (T, 3, 3)
        Triangle corners, metres. Both sides count; a hit within a barycentric tolerance of
        1e-9 of an edge counts.

    Returns
    -------
    ndarray bool (R,)
    """
    o = np.asarray(origins, dtype=np.float64)[:, None, :]
    d = np.asarray(directions, dtype=np.float64)[:, None, :]
    tri = np.asarray(triangles, dtype=np.float64)[None]
    t, u, v = ray_triangle_tuv_numpy(o, d, tri[..., 0, :], tri[..., 1, :], tri[..., 2, :])
    hit = (u >= -_EDGE_EPS) & (v >= -_EDGE_EPS) & (u + v <= 1 + _EDGE_EPS) & (t >= 0) & (t <= max_distance)
    return hit.any(axis=1)


@numba.njit(cache=True, inline="always")
def _ray_triangle(ox, oy, oz, dx, dy, dz, tmax, tri, k):
    """Two-sided: True when the ray hits triangle ``k`` at ``0 <= t <= tmax`` (edges widened by _EDGE_EPS)."""
    t, u, v = ray_triangle_tuv(ox, oy, oz, dx, dy, dz, tri[k, 0, 0], tri[k, 0, 1], tri[k, 0, 2],
                               tri[k, 1, 0], tri[k, 1, 1], tri[k, 1, 2], tri[k, 2, 0], tri[k, 2, 1], tri[k, 2, 2],
                               0.0)
    if u < -_EDGE_EPS or u > 1.0 + _EDGE_EPS or v < -_EDGE_EPS or u + v > 1.0 + _EDGE_EPS:
        return False
    return 0.0 <= t <= tmax


@numba.njit(cache=True, inline="always")
def _ray_box(ox, oy, oz, ix, iy, iz, tmax, lo, hi, node):
    """Slab test: does the ray segment ``[0, tmax]`` meet the node's box? (``i*`` = 1 / direction)."""
    t0 = 0.0
    t1 = tmax
    for axis in range(3):
        o = ox if axis == 0 else (oy if axis == 1 else oz)
        inv = ix if axis == 0 else (iy if axis == 1 else iz)
        a = (lo[node, axis] - o) * inv
        b = (hi[node, axis] - o) * inv
        if a > b:
            a, b = b, a
        if a > t0:
            t0 = a
        if b < t1:
            t1 = b
        if t0 > t1:
            return False
    return True


@numba.njit(cache=True)
def _trace_any(origins, dirs, tmax, left, right, start, count, lo, hi, tri, out):
    stack = np.empty(256, np.int32)
    big = 1e30
    for r in range(origins.shape[0]):
        ox, oy, oz = origins[r, 0], origins[r, 1], origins[r, 2]
        dx, dy, dz = dirs[r, 0], dirs[r, 1], dirs[r, 2]
        ix = 1.0 / dx if dx != 0.0 else big
        iy = 1.0 / dy if dy != 0.0 else big
        iz = 1.0 / dz if dz != 0.0 else big
        hit = False
        stack[0] = 0
        top = 1
        while top > 0 and not hit:
            top -= 1
            node = stack[top]
            if not _ray_box(ox, oy, oz, ix, iy, iz, tmax, lo, hi, node):
                continue
            if left[node] < 0:
                for k in range(start[node], start[node] + count[node]):
                    if _ray_triangle(ox, oy, oz, dx, dy, dz, tmax, tri, k):
                        hit = True
                        break
            else:
                stack[top] = left[node]
                stack[top + 1] = right[node]
                top += 2
        out[r] = hit


def ray_hits(origins, directions, max_distance, vertices, faces, bvh=None):
    """Same result as :func:`ray_hits_reference`, traced through a BVH over ``faces`` (Numba).

    Parameters
    ----------
    origins, directions : array_like (R, 3)
        Rays (directions need not be unit; ``max_distance`` is in units of their length).
    max_distance : float
        Metres along a unit direction.
    vertices : array_like (N, 3)
        Mesh vertices, metres.
    faces : array_like int (F, 3)
        Triangles.
    bvh : kisekae.geom.bvh.BVH, optional
        A tree built once for ``faces`` (any pose), refitted here; built when not given.

    Returns
    -------
    ndarray bool (R,)
    """
    o = as_points(origins, "origins")
    d = as_points(directions, "directions")
    if d.shape != o.shape:
        raise KisekaeError(f"expected {len(o)} directions, got {len(d)}", "directions")
    v = as_points(vertices, "vertices")
    f = as_faces(faces, len(v), "faces")
    tmax = positive(max_distance, "max_distance")
    out = np.zeros(len(o), dtype=bool)
    if len(f) == 0 or len(o) == 0:
        return out
    if bvh is None:
        bvh = build_bvh(v, f)
    st = refit(bvh, v, f)
    _trace_any(o, d, tmax, bvh.left, bvh.right, bvh.start, bvh.count, st.lo, st.hi, st.tri, out)
    return out
