"""BVH ray casting and the UV-space damage mask of the wound module, on small synthetic meshes."""

import numpy as np
import pytest

from kisekae.errors import KisekaeError
from kisekae.geom.bvh import refit
from kisekae.wound import (UVDamageMask, WoundState, build_ray_bvh, raycast, raycast_bvh, rasterize_uv_positions,
                           refit_boxes)
from kisekae.geom.bvh import refit_boxes_numpy
from kisekae.wound.uvmask import (accumulate_hit_uv_numba, accumulate_hit_uv_numpy, bilinear_taps,
                                  rasterize_uv_numba, rasterize_uv_numpy, sample_uv_mask_numba,
                                  sample_uv_mask_numpy)


def sphere(n_lat=14, n_lon=20, r=0.3):
    """A UV sphere (closed), (V, 3) vertices and (F, 3) outward triangles."""
    verts = [[0, r, 0]]
    for i in range(1, n_lat):
        th = np.pi * i / n_lat
        for j in range(n_lon):
            ph = 2 * np.pi * j / n_lon
            verts.append([r * np.sin(th) * np.cos(ph), r * np.cos(th), r * np.sin(th) * np.sin(ph)])
    verts.append([0, -r, 0])
    v = np.array(verts)
    f = []
    ring = lambda i, j: 1 + (i - 1) * n_lon + (j % n_lon)  # noqa: E731
    for j in range(n_lon):
        f.append([0, ring(1, j + 1), ring(1, j)])
        f.append([len(v) - 1, ring(n_lat - 1, j), ring(n_lat - 1, j + 1)])
    for i in range(1, n_lat - 1):
        for j in range(n_lon):
            a, b, c, d = ring(i, j), ring(i, j + 1), ring(i + 1, j + 1), ring(i + 1, j)
            f += [[a, b, c], [a, c, d]]
    return v, np.array(f, np.int32)


def twisted(v, amount=1.2):
    """A 'pose': twist about +Y by an angle growing with height, plus a bend."""
    ang = amount * v[:, 1]
    c, s = np.cos(ang), np.sin(ang)
    out = v.copy()
    out[:, 0] = c * v[:, 0] + s * v[:, 2]
    out[:, 2] = -s * v[:, 0] + c * v[:, 2] + 0.3 * v[:, 1] ** 2
    return out


def grid(n=9, size=0.4):
    xs = np.linspace(0, size, n)
    x, y = np.meshgrid(xs, xs, indexing="ij")
    v = np.stack([x.ravel(), y.ravel(), np.zeros(n * n)], 1)
    f = []
    for i in range(n - 1):
        for j in range(n - 1):
            a, b, c, d = i * n + j, (i + 1) * n + j, (i + 1) * n + j + 1, i * n + j + 1
            f += [[a, b, c], [a, c, d]]
    return v, np.array(f, np.int32)


# --------------------------------------------------------------------------------------------
# BVH ray casting
# --------------------------------------------------------------------------------------------


def test_refit_boxes_match_numpy_and_qa_refit():
    v, f = sphere()
    tree = build_ray_bvh(v, f, leaf_size=4)
    posed = twisted(v)
    lo, hi = refit_boxes(tree, posed, f)
    rlo, rhi = refit_boxes_numpy(tree, posed, f)
    np.testing.assert_array_equal(lo, rlo)
    np.testing.assert_array_equal(hi, rhi)
    st = refit(tree, posed, f)
    np.testing.assert_array_equal(lo, st.lo)
    np.testing.assert_array_equal(hi, st.hi)
    assert np.all(lo[0] <= posed.min(0)) and np.all(hi[0] >= posed.max(0))


def test_bvh_raycast_equals_brute_force_on_a_posed_mesh():
    v, f = sphere()
    tree = build_ray_bvh(v, f, leaf_size=4)  # built on the rest shape, queried on the posed one
    posed = twisted(v)
    boxes = refit(tree, posed, f)  # a qa BVHState works as boxes too
    rng = np.random.default_rng(4)
    hits = misses = 0
    for k in range(300):
        o = rng.normal(size=3)
        o *= 0.8 / np.linalg.norm(o)
        d = rng.normal(0, 0.15, 3) - o
        if k % 10 == 0:  # axis-aligned rays: zero direction components
            d = np.zeros(3)
            d[k % 3] = -np.sign(o[k % 3]) or 1.0
        if k % 7 == 0:
            d = rng.normal(size=3)  # many of these miss
        t_min = 0.5 if k % 13 == 0 else 0.0
        a = raycast(o, d, posed, f, t_min)
        b = raycast_bvh(o, d, posed, f, tree, boxes, t_min)
        assert a[0] == b[0] and a[1] == b[1] and np.array_equal(a[2], b[2]), k
        hits += a[0] >= 0
        misses += a[0] < 0
    assert hits > 200 and misses > 5
    # a ray from inside hits the far wall from the back side (two-sided); from outside, the near wall
    face, t, bary = raycast_bvh((0, 0, 0), (0, 0, 1), v, f, tree)
    assert face >= 0 and 0.27 < t < 0.3


def test_many_rays_at_once_equal_one_at_a_time():
    """kisekae.geom.raycast.raycast_bvh_many: the first hit of each ray as raycast_bvh gives it, bit for bit; a zero
    direction is a miss; shapes are checked."""
    from kisekae.geom.raycast import raycast_bvh_many

    v, f = sphere()
    posed = twisted(v)
    tree = build_ray_bvh(v, f, leaf_size=4)
    rng = np.random.default_rng(9)
    o = rng.normal(size=(80, 3))
    o *= 0.8 / np.linalg.norm(o, axis=1, keepdims=True)
    d = rng.normal(0, 0.2, (80, 3)) - o
    d[::9] = rng.normal(size=(9, 3))  # many of these miss
    d[5] = 0.0
    face, t, bary = raycast_bvh_many(o, d, posed, f, tree, t_min=0.1)
    for i in range(80):
        if i == 5:
            assert face[i] == -1 and np.isinf(t[i])
            continue
        a = raycast_bvh(o[i], d[i], posed, f, tree, t_min=0.1)
        assert a[0] == face[i] and (a[1] == t[i] or a[0] < 0) and np.array_equal(a[2], bary[i]), i
    assert 40 < (face >= 0).sum() < 80
    with pytest.raises(KisekaeError, match="directions"):
        raycast_bvh_many(o, d[:3], posed, f)


def test_wound_state_shoots_through_the_bvh_like_brute_force():
    v, f = sphere()
    idx = np.zeros((len(v), 1), np.int32)
    w = np.ones((len(v), 1), np.float32)
    posed = twisted(v)
    a = WoundState(v, f, idx, w, np.eye(4)[None])
    b = WoundState(v, f, idx, w, np.eye(4)[None])
    boxes = a.posed_boxes(posed)
    for o in ([0.1, 0.2, 1.0], [-1, 0.05, 0.1], [0.0, -1.0, 0.02]):
        d = -np.asarray(o)
        ha = a.shoot(o, d, posed, boxes=boxes)
        hb = b.shoot(o, d, posed, brute_force=True)
        assert ha.face == hb.face and np.array_equal(ha.bary, hb.bary)
    np.testing.assert_array_equal(a.mask, b.mask)


def test_bvh_bad_input():
    v, f = sphere()
    tree = build_ray_bvh(v, f)
    with pytest.raises(KisekaeError, match="origin"):
        raycast_bvh((np.nan, 0, 1), (0, 0, -1), v, f, tree)
    with pytest.raises(KisekaeError, match="direction"):
        raycast_bvh((0, 0, 1), (0, 0, 0), v, f, tree)
    with pytest.raises(KisekaeError, match="built for"):
        raycast_bvh((0, 0, 1), (0, 0, -1), v, f[:-2], tree)
    with pytest.raises(KisekaeError, match="node boxes"):
        raycast_bvh((0, 0, 1), (0, 0, -1), v, f, tree, (np.zeros((3, 3)), np.zeros((3, 3))))
    with pytest.raises(KisekaeError, match="BVH"):
        raycast_bvh((0, 0, 1), (0, 0, -1), v, f, "tree")
    with pytest.raises(KisekaeError, match="no triangles"):
        build_ray_bvh(v, np.zeros((0, 3), np.int32))


# --------------------------------------------------------------------------------------------
# UV-space damage mask
# --------------------------------------------------------------------------------------------


def two_islands():
    """A 0.4 m grid whose left and right halves are two UV islands (per-corner UVs), right one mirrored."""
    v, f = grid(9, 0.4)
    cent = v[f].mean(1)
    right = cent[:, 0] > 0.2
    uv_coords = np.vstack([v[:, :2] / 0.4 * [0.45, 0.9] + 0.05,  # left island: x in [0.05, 0.5)
                           (0.4 - v[:, :2]) / 0.4 * [0.45, 0.9] + [0.5, 0.05]])  # right island, mirrored
    uv_faces = np.where(right[:, None], f + len(v), f)
    # per-vertex UV: the left island's for x <= 0.2, the right island's otherwise
    vertex_uv = np.where((v[:, 0] <= 0.2 + 1e-12)[:, None], uv_coords[: len(v)], uv_coords[len(v):])
    return v, f, uv_coords, uv_faces.astype(np.int32), vertex_uv


def test_rasterize_matches_numpy_and_is_exact_on_a_linear_layout():
    v, f, uvc, uvf, _ = two_islands()
    s = 64
    a_pos, a_cov = np.zeros((s, s, 3)), np.zeros((s, s), bool)
    rasterize_uv_numba(uvc, uvf.astype(np.int64), v, f.astype(np.int64), s, a_pos, a_cov)
    b_pos, b_cov = rasterize_uv_numpy(uvc, uvf, v, f, s)
    np.testing.assert_array_equal(a_cov, b_cov)
    np.testing.assert_allclose(a_pos[a_cov], b_pos[b_cov], atol=1e-12)
    # the layout is linear per island, so a texel's 3D point is known in closed form
    jj, ii = np.nonzero(a_cov)
    u, w = (ii + 0.5) / s, (jj + 0.5) / s
    left = u < 0.5
    x = np.where(left, (u - 0.05) / 0.45 * 0.4, 0.4 - (u - 0.5) / 0.45 * 0.4)
    y = np.where(left, (w - 0.05) / 0.9 * 0.4, 0.4 - (w - 0.05) / 0.9 * 0.4)
    np.testing.assert_allclose(a_pos[jj, ii], np.stack([x, y, np.zeros_like(x)], 1), atol=1e-12)
    # coverage: each island is half the grid, 0.225 x 0.9 in UV, within a texel of its border
    assert abs(a_cov.mean() - 2 * 0.225 * 0.9) < 2 * 2 * (0.225 + 0.9) / s
    pos, valid, cov = rasterize_uv_positions(v, f, uvc, uvf, size=s, padding=2)
    assert valid.sum() > cov.sum() and np.array_equal(cov, a_cov)
    from scipy.ndimage import distance_transform_edt
    assert distance_transform_edt(~cov)[valid].max() <= 2.0


def test_accumulate_and_sample_match_numpy():
    rng = np.random.default_rng(2)
    s, n_parts = 32, 3
    tp = rng.uniform(-0.2, 0.2, (s, s, 3))
    valid = rng.uniform(size=(s, s)) > 0.3
    reach, gain = np.array([1.0, 5.0, 1.0]), np.array([1.0, 0.8, 0.0])
    mask = np.zeros((s, s, n_parts), np.float32)
    ref = np.zeros((s, s, n_parts))
    ids = np.flatnonzero(valid.ravel()).astype(np.int64)
    for h in range(4):
        hp = rng.uniform(-0.2, 0.2, 3)
        accumulate_hit_uv_numba(mask.reshape(-1, n_parts), np.ascontiguousarray(tp.reshape(-1, 3)[ids]), ids, hp,
                                h % 3, 0.03, 20.0, reach, gain)
        ref = accumulate_hit_uv_numpy(ref, tp, valid, hp, h % 3, 0.03, 20.0, reach, gain)
    np.testing.assert_allclose(mask, ref, atol=1e-6)
    assert np.all(mask[~valid] == 0) and mask[..., 1].max() > 0 and np.all(mask[..., 2] == 0)
    uv = rng.uniform(-0.05, 1.05, (500, 2))  # includes clamp-to-edge reads
    parts = rng.integers(0, 3, 500)
    out = sample_uv_mask_numba(mask, uv, parts, np.empty(500))
    np.testing.assert_allclose(out, sample_uv_mask_numpy(mask, uv, parts), atol=1e-6)
    # at a texel centre the read is the texel itself
    j, i = 7, 11
    c = np.array([[(i + 0.5) / s, (j + 0.5) / s]])
    assert abs(sample_uv_mask_numba(mask, c, np.array([1]), np.empty(1))[0] - mask[j, i, 1]) < 1e-7
    _, _, w = bilinear_taps(uv, s)
    np.testing.assert_allclose(w.sum(1), 1.0)


@pytest.mark.parametrize("size", [64, 256])
def test_uv_mask_equals_per_vertex_mask_within_resolution_error(size):
    v, f, uvc, uvf, vuv = two_islands()
    parts = (v[:, 1] > 0.25).astype(np.int64)  # part 1 ("arm") across both islands
    idx = np.zeros((len(v), 1), np.int32)
    w = np.ones((len(v), 1), np.float32)
    st = WoundState(v, f, idx, w, np.eye(4)[None], parts, hole_size=0.03, hole_intensity=25.0,
                    part_reach=[1.0, 3.0], part_gain=[1.0, 0.7])
    st.shoot((0.12, 0.1, 1.0), (0, 0, -1), v)  # before the UV mask exists: replayed into it
    m = st.enable_uv_mask(vuv, uv_coords=uvc, uv_faces=uvf, size=size)
    st.shoot((0.31, 0.33, 1.0), (0, 0, -1), v)
    st.shoot((0.21, 0.2, 1.0), (0, 0, -1), v)
    ref = st.p_flat()
    got = st.p_uv()
    td = m.tap_distance()
    assert np.all(np.isfinite(td))  # every bilinear tap is a valid texel (gutter)
    lip = st.hole_intensity * st.part_gain.max() * len(st.hits)
    err = np.abs(got - ref)
    assert np.all(err <= lip * td + 1e-6)
    assert 0 < (ref > 0).mean() < 1 and err.max() < 0.5
    # the resolution error shrinks with the texture
    texel_m = 0.4 / (0.45 * size)
    assert np.median(td) < 1.5 * texel_m
    # away from any hit the UV mask reads exactly zero, and it is zero before any hit
    far = np.min(np.linalg.norm(v[:, None] - np.array([h.bind_position for h in st.hits])[None], axis=2), 1)
    assert np.all(got[far > 0.03 * 3 + 1 / 25 + 0.02] == 0)
    m.clear()
    assert np.all(st.p_uv() == 0)


def test_uv_mask_bad_input():
    v, f, uvc, uvf, vuv = two_islands()
    idx = np.zeros((len(v), 1), np.int32)
    st = WoundState(v, f, idx, np.ones((len(v), 1), np.float32), np.eye(4)[None])
    with pytest.raises(KisekaeError, match="enable_uv_mask"):
        st.p_uv()
    with pytest.raises(KisekaeError, match="NaN"):
        UVDamageMask(v, f, np.full_like(vuv, np.nan))
    with pytest.raises(KisekaeError, match="2..8192"):
        UVDamageMask(v, f, vuv, size=1)
    with pytest.raises(KisekaeError, match="both"):
        UVDamageMask(v, f, vuv, uv_coords=uvc)
    with pytest.raises(KisekaeError, match="no texel"):
        UVDamageMask(v, f, vuv + 5.0, size=16)
    m = UVDamageMask(v, f, vuv, uv_coords=uvc, uv_faces=uvf, size=32)
    with pytest.raises(KisekaeError, match="finite"):
        m.accumulate([0, np.nan, 0], 0, 0.03, 50.0, [1.0], [1.0])
    with pytest.raises(KisekaeError, match="part ids"):
        m.sample(np.full(len(v), 3))
