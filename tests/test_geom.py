"""kisekae.geom: each Numba kernel against its NumPy reference, and both against analytic cases."""

from __future__ import annotations

import numpy as np
import pytest

from kisekae.errors import KisekaeError
from kisekae.geom.bvh import build_bvh, refit, refit_boxes, refit_boxes_numpy, refit_numpy
from kisekae.geom.closest import closest_barycentric, closest_point_triangles_numpy, surface_distance
from kisekae.geom.crossings import edge_crossings, edge_crossings_numpy
from kisekae.geom.edges import face_edges, unique_edges, unique_pairs, vertex_neighbors
from kisekae.geom.normals import face_normals, vertex_normals, vertex_normals_numpy
from kisekae.geom.raytri import ray_triangle_tuv, ray_triangle_tuv_numpy
from kisekae.geom.weld import as_weld, weld_map
from kisekae.geom.winding import winding_number, winding_number_numpy


def box(n=6):
    """Closed, outward-oriented unit cube surface [0, 1]^3 as an n×n grid per side (triangles)."""
    g = np.linspace(0.0, 1.0, n)
    verts, faces = [], []
    for axis in range(3):
        for side in (0.0, 1.0):
            u, v = np.meshgrid(g, g, indexing="ij")
            p = np.zeros((n * n, 3))
            a, b = [k for k in range(3) if k != axis]
            p[:, axis] = side
            p[:, a] = u.ravel()
            p[:, b] = v.ravel()
            base = sum(len(x) for x in verts)
            idx = np.arange(n * n).reshape(n, n) + base
            q = np.stack([idx[:-1, :-1], idx[1:, :-1], idx[1:, 1:], idx[:-1, 1:]], -1).reshape(-1, 4)
            t = np.concatenate([q[:, [0, 1, 2]], q[:, [0, 2, 3]]])
            # outward: the normal of (a, b) ordering points along +axis for a right-handed (a, b, axis)
            outward = np.cross(np.eye(3)[a], np.eye(3)[b])[axis] * (1 if side else -1)
            faces.append(t if outward > 0 else t[:, ::-1])
            verts.append(p)
    return np.concatenate(verts), np.concatenate(faces)


@pytest.fixture(scope="module")
def cube():
    return box()


# ----------------------------------------------------------------------------- normals
def test_vertex_normals_kernel_matches_reference_and_cube_corners(cube):
    v, f = cube
    w = weld_map(v)
    for weld in (None, w):
        k = vertex_normals(v, f, weld, dtype=np.float64)
        r = vertex_normals_numpy(v, f, weld, dtype=np.float64)
        np.testing.assert_array_equal(k, r)
    n = vertex_normals(v, f, w)
    corner = np.flatnonzero(np.all(v == 1.0, axis=1))
    np.testing.assert_allclose(n[corner], np.full((len(corner), 3), 1 / np.sqrt(3)), atol=1e-6)
    face_centre = np.flatnonzero(np.all(np.isclose(v, [0.4, 0.6, 1.0]), axis=1))
    np.testing.assert_allclose(n[face_centre], [[0, 0, 1]] * len(face_centre), atol=1e-6)
    assert n.dtype == np.float32


def test_isolated_vertex_gets_the_fallback_and_bad_weld_is_named():
    v = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [5, 5, 5.0]])
    f = np.array([[0, 1, 2]])
    assert np.array_equal(vertex_normals(v, f)[3], [0, 0, 0])
    assert np.array_equal(vertex_normals(v, f, fallback=(0, 1, 0))[3], [0, 1, 0])
    assert np.array_equal(vertex_normals_numpy(v, f, fallback=(0, 1, 0))[3], [0, 1, 0])
    np.testing.assert_allclose(face_normals(v, f, unit=False), [[0, 0, 1]])  # twice the area 0.5
    with pytest.raises(KisekaeError, match="weld"):
        vertex_normals(v, f, [0, 1, 2])
    with pytest.raises(KisekaeError, match="weld"):
        as_weld([0, 1, 2, 9], 4)


# ----------------------------------------------------------------------------- edges and weld
def test_edges_quads_weld_and_order():
    quads = np.array([[0, 1, 2, 3], [4, 5, 6, 7]])
    v = np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0], [1, 0, 0], [2, 0, 0], [2, 1, 0], [1, 1, 0]], float)
    w = weld_map(v)
    assert w.tolist() == [0, 1, 2, 3, 1, 5, 6, 2]
    assert len(face_edges(quads)) == 8
    e = unique_edges(quads, w)
    assert e.tolist() == [[0, 1], [0, 3], [1, 2], [1, 5], [2, 3], [2, 6], [5, 6]]  # 4 + 4 sides, one shared
    assert unique_pairs([[3, 1], [1, 3], [2, 2]]).tolist() == [[1, 3]]  # repeated, reversed, collapsed
    adj = vertex_neighbors(e, 8)
    assert adj[1].nnz == 3 and (adj != adj.T).nnz == 0
    with pytest.raises(KisekaeError, match="faces"):
        face_edges(np.zeros((2, 5), int))
    with pytest.raises(KisekaeError, match="out of range"):
        unique_edges([[0, 1, 9]], n_vertices=3)


def test_weld_tolerance_grid_and_negative_zero():
    v = np.array([[0.0, 0, 0], [-0.0, 0, 0], [0.1004, 0, 0], [0.1006, 0, 0]])
    assert weld_map(v).tolist() == [0, 0, 2, 3]
    assert weld_map(v, 0.001).tolist() == [0, 0, 2, 2]
    with pytest.raises(KisekaeError, match="weld_tolerance"):
        weld_map(v, -1.0)


# ----------------------------------------------------------------------------- closest point
def test_closest_point_kernel_reference_and_brute_sampling():
    rng = np.random.default_rng(3)
    a, b, c = (rng.normal(size=(300, 3)) for _ in range(3))
    c[:20] = a[:20]  # zero-length edge
    b[20:40] = 0.5 * (a[20:40] + c[20:40])  # zero area
    p = 2.0 * rng.normal(size=(300, 3))
    q, bary, d = closest_point_triangles_numpy(p, a, b, c)
    np.testing.assert_allclose(bary.sum(axis=1), 1.0)
    assert bary.min() >= -1e-12
    np.testing.assert_allclose(q, bary[:, :1] * a + bary[:, 1:2] * b + bary[:, 2:] * c, atol=1e-12)
    for i in range(len(p)):
        u, v, w = closest_barycentric(*p[i], *a[i], *b[i], *c[i])
        np.testing.assert_allclose([u, v, w], bary[i], atol=1e-9)
    # no sampled point of the triangle is closer than the answer
    s = rng.dirichlet(np.ones(3), size=2000)
    for i in range(40, 60):
        samples = s[:, :1] * a[i] + s[:, 1:2] * b[i] + s[:, 2:] * c[i]
        assert np.linalg.norm(samples - p[i], axis=1).min() >= d[i] - 1e-12


def test_surface_distance_to_cube(cube):
    v, f = cube
    bvh = build_bvh(v, f)
    st = refit(bvh, v, f)
    p = np.array([[0.5, 0.5, 0.5], [0.5, 0.5, 1.3], [1.3, 1.4, 0.5], [2.0, 2.0, 2.0], [0.1, 0.5, 0.5]])
    d, t = surface_distance(p, bvh, st)
    np.testing.assert_allclose(d, [0.5, 0.3, 0.5, np.sqrt(3.0), 0.1], atol=1e-12)
    q, _, dq = closest_point_triangles_numpy(p, *v[f[t]].transpose(1, 0, 2))
    np.testing.assert_allclose(dq, d, atol=1e-12)


# ----------------------------------------------------------------------------- ray-triangle
def test_ray_triangle_kernel_matches_reference():
    rng = np.random.default_rng(5)
    o, d, a, b, c = (rng.normal(size=(500, 3)) for _ in range(5))
    d[:10] = (b[:10] - a[:10]) + (c[:10] - a[:10])  # parallel to the triangle's plane
    t, u, v = ray_triangle_tuv_numpy(o, d, a, b, c, 1e-12)
    assert np.all(np.isinf(t[:10])) and np.isfinite(t[10:]).all()
    for i in range(len(o)):
        ti, ui, vi = ray_triangle_tuv(*o[i], *d[i], *a[i], *b[i], *c[i], 1e-12)
        if np.isinf(t[i]):
            assert np.isinf(ti)
        else:
            np.testing.assert_allclose([ti, ui, vi], [t[i], u[i], v[i]], rtol=1e-9, atol=1e-12)
    hit = np.isfinite(t)
    np.testing.assert_allclose((o + t[:, None] * d)[hit],
                               (a + u[:, None] * (b - a) + v[:, None] * (c - a))[hit], atol=1e-8)


def test_ray_triangle_analytic():
    t, u, v = ray_triangle_tuv_numpy([0.2, 0.3, 5.0], [0, 0, -2.0], [0, 0, 1.0], [1, 0, 1.0], [0, 1, 1.0])
    np.testing.assert_allclose([t, u, v], [2.0, 0.2, 0.3])
    t, _, _ = ray_triangle_tuv_numpy([0, 0, 5.0], [1, 0, 0.0], [0, 0, 1.0], [1, 0, 1.0], [0, 1, 1.0])
    assert np.isinf(t)  # parallel


# ----------------------------------------------------------------------------- BVH
def test_refit_kernels_match_references(cube):
    v, f = cube
    bvh = build_bvh(v, f, leaf_size=4)
    moved = v + 0.1 * np.sin(7 * v)
    st, ref = refit(bvh, moved, f), refit_numpy(bvh, moved, f)
    for name in ("lo", "hi", "normal", "center", "radius", "tri"):
        np.testing.assert_allclose(getattr(st, name), getattr(ref, name), rtol=1e-12, atol=1e-14, err_msg=name)
    lo, hi = refit_boxes(bvh, moved, f)
    rlo, rhi = refit_boxes_numpy(bvh, moved, f)
    assert np.array_equal(lo, rlo) and np.array_equal(hi, rhi) and np.array_equal(lo, st.lo)
    # the root's area vector of a closed surface is zero; every corner is within the root's radius
    np.testing.assert_allclose(st.normal[0], 0.0, atol=1e-12)
    assert np.linalg.norm(moved - st.center[0], axis=1).max() <= st.radius[0] + 1e-12


# ----------------------------------------------------------------------------- winding number
def test_winding_number_cube(cube):
    v, f = cube
    rng = np.random.default_rng(7)
    p = rng.uniform(-0.5, 1.5, size=(400, 3))
    bvh = build_bvh(v, f)
    w = winding_number(p, bvh, refit(bvh, v, f))
    ref = winding_number_numpy(p, v, f)
    inside = np.all((p > 0) & (p < 1), axis=1)
    np.testing.assert_allclose(ref, inside.astype(float), atol=1e-9)
    assert np.array_equal(w > 0.5, inside)
    np.testing.assert_allclose(w, ref, atol=0.02)


# ----------------------------------------------------------------------------- crossings
def test_edge_crossings_kernel_matches_reference(cube):
    v, f = cube
    rng = np.random.default_rng(11)
    pts = rng.uniform(-0.3, 1.3, size=(300, 3))
    edges = rng.integers(0, len(pts), size=(600, 2))
    bvh = build_bvh(v, f)
    got, tri = edge_crossings(pts, edges, bvh, refit(bvh, v, f), return_triangles=True)
    ref = edge_crossings_numpy(pts, edges, v, f)
    assert np.array_equal(got, ref) and 0 < got.sum() < len(edges)
    inside = np.all((pts > 0) & (pts < 1), axis=1)
    assert np.all(got[inside[edges[:, 0]] != inside[edges[:, 1]]])  # in → out must cross
    assert np.all(tri[got] >= 0) and np.all(tri[~got] == -1)
