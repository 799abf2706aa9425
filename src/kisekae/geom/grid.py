"""(point, triangle) pairs within a distance, through a uniform hash grid of the points.

The contact solves (:mod:`kisekae.avatar.contact_solve`, :mod:`kisekae.fit.path_fix`) need, many times per pose,
every point closer than a radius to every triangle, between one mesh and itself or between two meshes.
:func:`point_triangle_pairs` sorts the points into cubic cells twice the radius wide (keys in the
point cloud's own frame, so the result does not depend on where it stands), visits for each triangle the
cells its bounding box, grown by the radius, overlaps, and keeps the points whose exact closest-point distance
(:func:`kisekae.geom.closest.closest_barycentric`) is below the radius. Options for a mesh against itself: a
triangle's own corners never pair with it, and pairs closer than ``exclude`` in a reference state (the rest
pose: a vertex's own neighbourhood) are dropped, a corner within ``exclude`` settling it before any closest point.
:func:`point_triangle_pairs_numpy` is the brute-force reference.
"""

from __future__ import annotations

import numba
import numpy as np

from .closest import closest_barycentric, closest_point_triangles_numpy


@numba.njit(cache=True)
def cell_keys(p, lo, h, dims):
    """(N,) int64 cell key of each point of ``p (N, 3)`` in the grid of origin ``lo``, cell ``h`` and ``dims`` cells."""
    n = p.shape[0]
    keys = np.empty(n, np.int64)
    for i in range(n):
        ix = min(max(int((p[i, 0] - lo[0]) / h), 0), dims[0] - 1)
        iy = min(max(int((p[i, 1] - lo[1]) / h), 0), dims[1] - 1)
        iz = min(max(int((p[i, 2] - lo[2]) / h), 0), dims[2] - 1)
        keys[i] = (ix * dims[1] + iy) * dims[2] + iz
    return keys


@numba.njit(cache=True, inline="always")
def _d2(px, py, pz, v, a, b, c):
    u, w1, w2 = closest_barycentric(px, py, pz, v[a, 0], v[a, 1], v[a, 2], v[b, 0], v[b, 1], v[b, 2], v[c, 0], v[c, 1],
                                    v[c, 2])
    qx = u * v[a, 0] + w1 * v[b, 0] + w2 * v[c, 0]
    qy = u * v[a, 1] + w1 * v[b, 1] + w2 * v[c, 1]
    qz = u * v[a, 2] + w1 * v[b, 2] + w2 * v[c, 2]
    return (px - qx) ** 2 + (py - qy) ** 2 + (pz - qz) ** 2


@numba.njit(cache=True)
def _pairs_kernel(pts, tv, tri, order, keys_sorted, lo, h, dims, radius, rest_p, rest_tv, exclude, skip_corners,
                  out_v, out_t):
    r2 = radius * radius
    e2 = exclude * exclude
    count = 0
    mn = np.empty(3)
    mx = np.empty(3)
    lo_c = np.empty(3, np.int64)
    hi_c = np.empty(3, np.int64)
    for t in range(tri.shape[0]):
        a, b, c = tri[t, 0], tri[t, 1], tri[t, 2]
        for k in range(3):
            mn[k] = min(tv[a, k], tv[b, k], tv[c, k]) - radius
            mx[k] = max(tv[a, k], tv[b, k], tv[c, k]) + radius
            lo_c[k] = min(max(int((mn[k] - lo[k]) / h), 0), dims[k] - 1)
            hi_c[k] = min(max(int((mx[k] - lo[k]) / h), 0), dims[k] - 1)
        for ix in range(lo_c[0], hi_c[0] + 1):
            for iy in range(lo_c[1], hi_c[1] + 1):
                for iz in range(lo_c[2], hi_c[2] + 1):
                    key = (ix * dims[1] + iy) * dims[2] + iz
                    for s in range(np.searchsorted(keys_sorted, key), np.searchsorted(keys_sorted, key, "right")):
                        v = order[s]
                        if skip_corners and (v == a or v == b or v == c):
                            continue
                        px, py, pz = pts[v, 0], pts[v, 1], pts[v, 2]
                        if px < mn[0] or px > mx[0] or py < mn[1] or py > mx[1] or pz < mn[2] or pz > mx[2]:
                            continue
                        if exclude > 0.0:
                            near = False
                            for k in (a, b, c):  # a corner that near puts the triangle that near too
                                dx = rest_p[v, 0] - rest_tv[k, 0]
                                dy = rest_p[v, 1] - rest_tv[k, 1]
                                dz = rest_p[v, 2] - rest_tv[k, 2]
                                near = near or dx * dx + dy * dy + dz * dz <= e2
                            if near:
                                continue
                        if _d2(px, py, pz, tv, a, b, c) >= r2:
                            continue
                        if exclude > 0.0 and _d2(rest_p[v, 0], rest_p[v, 1], rest_p[v, 2], rest_tv, a, b, c) <= e2:
                            continue
                        if count < out_v.shape[0]:
                            out_v[count] = v
                            out_t[count] = t
                        count += 1
    return count


def point_triangle_pairs(points, tri_vertices, tri, radius: float, *, rest_points=None, rest_tri_vertices=None,
                         exclude: float = 0.0, skip_corners: bool = False):
    """Every (point, triangle) pair closer than ``radius`` (module docstring).

    Parameters
    ----------
    points : (P, 3) metres
    tri_vertices : (V, 3) metres; tri : (T, 3) int triangles on them
    radius : float, metres
    rest_points, rest_tri_vertices : the same in a reference state, needed with ``exclude``
    exclude : float, metres: pairs closer than this in the reference state are dropped (0: none)
    skip_corners : bool, a triangle's corners (point ids = vertex ids: one mesh against itself) never pair with it

    Returns
    -------
    (points (K,) int64, triangles (K,) int64), sorted by triangle, then point
    """
    p = np.ascontiguousarray(points, dtype=np.float64)
    tv = np.ascontiguousarray(tri_vertices, dtype=np.float64)
    tri = np.ascontiguousarray(tri, dtype=np.int64)
    if not len(p) or not len(tri):
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    rp = p if rest_points is None else np.ascontiguousarray(rest_points, dtype=np.float64)
    rtv = tv if rest_tri_vertices is None else np.ascontiguousarray(rest_tri_vertices, dtype=np.float64)
    h = max(float(radius), 1e-3) * 2.0
    lo = p.min(axis=0) - h
    dims = np.floor((p.max(axis=0) + h - lo) / h).astype(np.int64) + 1
    keys = cell_keys(p, lo, h, dims)
    order = np.argsort(keys, kind="stable").astype(np.int64)
    ks = np.ascontiguousarray(keys[order])
    cap = 32 * len(p)
    while True:  # the kernel counts every pair and writes as many as fit: once more when they did not
        pv, pt = np.empty(cap, np.int64), np.empty(cap, np.int64)
        n = _pairs_kernel(p, tv, tri, order, ks, lo, h, dims, float(radius), rp, rtv, float(exclude),
                          bool(skip_corners), pv, pt)
        if n <= cap:
            break
        cap = n
    pv, pt = pv[:n], pt[:n]
    idx = np.lexsort((pv, pt))
    return pv[idx], pt[idx]


def point_triangle_pairs_numpy(points, tri_vertices, tri, radius: float, *, rest_points=None, rest_tri_vertices=None,
                               exclude: float = 0.0, skip_corners: bool = False):
    """:func:`point_triangle_pairs` by brute force over all pairs (NumPy reference; small meshes)."""
    p = np.asarray(points, dtype=np.float64)
    tv = np.asarray(tri_vertices, dtype=np.float64)
    tri = np.asarray(tri, dtype=np.int64)
    pv = np.repeat(np.arange(len(p)), len(tri))
    pt = np.tile(np.arange(len(tri)), len(p))
    if skip_corners:
        keep = ~(tri[pt] == pv[:, None]).any(axis=1)
        pv, pt = pv[keep], pt[keep]
    keep = closest_point_triangles_numpy(p[pv], tv[tri[pt, 0]], tv[tri[pt, 1]], tv[tri[pt, 2]])[2] < radius
    if exclude > 0:
        rp = p if rest_points is None else np.asarray(rest_points, dtype=np.float64)
        rtv = tv if rest_tri_vertices is None else np.asarray(rest_tri_vertices, dtype=np.float64)
        d0 = closest_point_triangles_numpy(rp[pv], rtv[tri[pt, 0]], rtv[tri[pt, 1]], rtv[tri[pt, 2]])[2]
        keep &= d0 > exclude
    pv, pt = pv[keep], pt[keep]
    idx = np.lexsort((pv, pt))
    return pv[idx], pt[idx]


def union_pairs(a, b, n_triangles: int):
    """The union of two pair lists ``(points, triangles)``, sorted by point then triangle, without repeats."""
    code = np.unique(np.concatenate([np.asarray(a[0], np.int64) * n_triangles + np.asarray(a[1], np.int64),
                                     np.asarray(b[0], np.int64) * n_triangles + np.asarray(b[1], np.int64)]))
    return code // n_triangles, code % n_triangles


def pair_clearance(points, pv, tri_vertices, tri, pt, orientation: float = 1.0):
    """Signed clearance of each pair's point from its triangle's closest point, along the triangle's unit normal.

    Parameters
    ----------
    points : (P, 3) metres; pv : (K,) point of each pair
    tri_vertices : (V, 3) metres; tri : (T, 3) triangles; pt : (K,) triangle of each pair
    orientation : +1 or -1, times ``cross(b − a, c − a)`` gives the normal

    Returns
    -------
    s : (K,) metres; normals : (K, 3) unit; bary : (K, 3) barycentrics of the closest point; d : (K,) distance
    """
    p = np.asarray(points, dtype=np.float64)
    tv = np.asarray(tri_vertices, dtype=np.float64)
    a, b, c = tv[tri[pt, 0]], tv[tri[pt, 1]], tv[tri[pt, 2]]
    q, bary, d = closest_point_triangles_numpy(p[pv], a, b, c)
    n = np.cross(b - a, c - a) * orientation
    n /= np.maximum(np.linalg.norm(n, axis=1), 1e-15)[:, None]
    return np.einsum("ij,ij->i", p[pv] - q, n), n, np.asarray(bary), d


def outward_orientation(vertices, faces) -> float:
    """+1 when ``cross(b − a, c − a)`` of a closed mesh's triangles points outward (positive enclosed volume), else -1."""
    v = np.asarray(vertices, dtype=np.float64)
    f = np.asarray(faces, dtype=np.int64)
    volume = np.einsum("ij,ij->i", v[f[:, 0]], np.cross(v[f[:, 1]], v[f[:, 2]])).sum()
    return 1.0 if volume >= 0 else -1.0
