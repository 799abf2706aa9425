"""Wound module on small synthetic meshes: kernels against NumPy references, analytic cases, errors."""

import numpy as np
import pytest

from kisekae.errors import KisekaeError
from kisekae.wound import (ENCODINGS, WoundState, bake, correspond_closest, correspond_uv, decode, encode,
                           hit_damage, make_hit, morph_numba, morph_numpy, raycast, read_exr, read_png, vertex_limit,
                           wound_p_numba, wound_p_numpy, wound_p_vertex, write_exr, write_png)
from kisekae.geom.closest import closest_point_candidates_numba, closest_point_triangles_numpy
from kisekae.geom.raytri import ray_triangles_numba, ray_triangles_numpy
from kisekae.wound.encode import texture_side
from kisekae.wound.files import read_glb_attributes, write_bake


def grid(n=11, size=1.0, z=0.0, jitter=0.0, seed=0):
    """A flat n x n grid in the z plane, (n*n, 3) vertices and 2 (n-1)^2 triangles."""
    xs = np.linspace(0, size, n)
    x, y = np.meshgrid(xs, xs, indexing="ij")
    v = np.stack([x.ravel(), y.ravel(), np.full(n * n, z)], 1)
    if jitter:
        v[:, :2] += np.random.default_rng(seed).uniform(-jitter, jitter, (n * n, 2)) * (size / (n - 1))
    f = []
    for i in range(n - 1):
        for j in range(n - 1):
            a, b, c, d = i * n + j, (i + 1) * n + j, (i + 1) * n + j + 1, i * n + j + 1
            f += [[a, b, c], [a, c, d]]
    uv = np.stack([x.ravel(), y.ravel()], 1) / size
    return v, np.array(f, np.int32), uv


def test_closest_point_kernel_matches_numpy_reference():
    rng = np.random.default_rng(1)
    tv = rng.normal(size=(60, 3))
    tf = rng.integers(0, 60, size=(40, 3))
    tf = tf[(tf[:, 0] != tf[:, 1]) & (tf[:, 1] != tf[:, 2]) & (tf[:, 0] != tf[:, 2])].astype(np.int64)
    p = rng.normal(size=(200, 3)) * 1.5
    ptr = np.arange(0, len(p) * len(tf) + 1, len(tf), dtype=np.int64)
    idx = np.tile(np.arange(len(tf), dtype=np.int64), len(p))
    face, bary, dist, _, _ = closest_point_candidates_numba(p, tv, tf, ptr, idx, 0.0, 1.0, tv)
    # reference: every point against every triangle, keep the minimum
    P = np.repeat(p, len(tf), 0)
    A, B, C = (np.tile(tv[tf[:, k]], (len(p), 1)) for k in range(3))
    q, _b, d = closest_point_triangles_numpy(P, A, B, C)
    d = d.reshape(len(p), len(tf))
    np.testing.assert_allclose(dist, d.min(1), rtol=1e-9, atol=1e-12)
    qk = np.einsum("nk,nkj->nj", bary, tv[tf[face]])
    np.testing.assert_allclose(np.linalg.norm(qk - p, axis=1), dist, rtol=1e-9, atol=1e-12)
    assert np.allclose(bary.sum(1), 1) and (bary >= -1e-12).all()


def test_ray_kernel_matches_numpy_reference_and_analytic():
    v, f, _ = grid(5, 1.0, z=0.5)
    for o, d in [((0.3, 0.3, 2.0), (0, 0, -1)), ((0.71, 0.2, -1.0), (0, 0, 1)), ((2, 2, 2), (0, 0, -1))]:
        a = ray_triangles_numpy(o, d, v, f)
        b = ray_triangles_numba(np.array(o, float), np.array(d, float), v, f.astype(np.int64), 0.0)
        assert a[0] == b[0]
        if a[0] >= 0:
            assert abs(a[1] - b[1]) < 1e-12 and np.allclose(a[2], b[2])
            hit = np.array(o) + a[1] * np.array(d)
            assert abs(hit[2] - 0.5) < 1e-12 and np.allclose(a[2] @ v[f[a[0]]], hit)
    assert raycast((2, 2, 2), (0, 0, -1), v, f)[0] == -1


def test_closest_correspondence_on_plane_is_orthogonal_projection_with_other_topology():
    sv, sf, _ = grid(7, 1.0, z=0.0, jitter=0.3, seed=3)
    sv[:, 2] = 0.05 * np.sin(sv[:, 0] * 3)  # start surface above/below the target plane
    tv, tf, _ = grid(13, 1.2, z=0.0)  # different resolution and extent
    tv[:, :2] -= 0.1
    c = correspond_closest(sv, sf, tv, tf)
    expected = sv.copy()
    expected[:, 2] = 0.0
    np.testing.assert_allclose(c.positions, expected, atol=1e-12)
    np.testing.assert_allclose(c.distance, np.abs(sv[:, 2]), atol=1e-12)
    np.testing.assert_allclose(np.abs(c.normals[:, 2]), 1.0, atol=1e-12)
    assert c.matched.all() and not c.ambiguous.any()


def test_unmatched_and_ambiguous_regions_are_reported():
    # target: two parallel planes z = +-0.1; start points on z = 0 are equidistant from both
    a, af, _ = grid(6, 1.0, z=0.1)
    b, bf, _ = grid(6, 1.0, z=-0.1)
    tv = np.vstack([a, b])
    tf = np.vstack([af, bf + len(a)])
    sv, sf, _ = grid(5, 0.6, z=0.0)
    sv[:, :2] += 0.2
    c = correspond_closest(sv, sf, tv, tf)
    assert c.ambiguous.all()
    assert any(r.kind == "ambiguous" and r.vertices.size == len(sv) for r in c.regions)
    sv2 = sv.copy()
    sv2[:, 2] = 0.02 + 0.3 * (sv[:, 0] > 0.6)  # part of the start mesh lifted far away
    c2 = correspond_closest(sv2, sf, tv, tf, max_distance=0.15)
    far = sv[:, 0] > 0.6
    np.testing.assert_array_equal(c2.matched, ~far)
    un = [r for r in c2.regions if r.kind == "unmatched"]
    assert len(un) == 1 and set(un[0].vertices) == set(np.flatnonzero(far))
    np.testing.assert_array_equal(c2.positions[far], sv2[far])  # unmatched vertices keep their place


def test_uv_correspondence_interpolates_target_and_needs_uv1():
    tv, tf, tuv = grid(9, 1.0)
    tv[:, 2] = tv[:, 0] * 0.3  # a slanted target
    sv, sf, suv = grid(6, 1.0, jitter=0.2, seed=5)
    c = correspond_uv(sv, sf, suv, tv, tf, tuv)
    # target position is linear in uv: (u, v, 0.3 u)
    expected = np.stack([suv[:, 0], suv[:, 1], 0.3 * suv[:, 0]], 1)
    np.testing.assert_allclose(c.positions, expected, atol=1e-12)
    assert c.matched.all()
    with pytest.raises(KisekaeError, match="uv1"):
        bake(sv, sf, tv, tf, method="uv", target_uv0=tuv)
    with pytest.raises(KisekaeError, match="uv1"):
        correspond_uv(sv, sf, None, tv, tf, tuv)


def test_uv_overlap_is_ambiguous():
    a, af, auv = grid(5, 1.0, z=0.0)
    b, bf, buv = grid(5, 1.0, z=0.5)  # a second island with the same UVs, 0.5 m away
    tv = np.vstack([a, b])
    tf = np.vstack([af, bf + len(a)])
    tuv = np.vstack([auv, buv])
    sv, sf, suv = grid(4, 1.0)
    c = correspond_uv(sv, sf, suv, tv, tf, tuv)
    assert c.ambiguous.all()


@pytest.mark.parametrize("name", list(ENCODINGS))
def test_encodings_error_bounds_from_quantisation(name):
    rng = np.random.default_rng(7)
    s = rng.uniform(-0.5, 0.5, (500, 3)).astype(np.float32)
    t = s + rng.normal(0, 0.02, (500, 3))
    n = rng.normal(size=(500, 3))
    n /= np.linalg.norm(n, axis=1, keepdims=True)
    e = encode(name, s, t, n)
    pos, nrm = decode(e, s)
    kind, store, nstore, _ = ENCODINGS[name]
    err = np.abs(pos - t)
    if store in ("vertex_color8", "unorm16"):
        bits = 8 if store == "vertex_color8" else 16
        span = np.ptp(t if kind == "absolute" else t - s, axis=0)
        bound = span / ((1 << bits) - 1) / 2 + 1e-12  # half a quantisation step per axis
        assert np.all(err <= bound)
        assert np.any(err > bound * 0.5)  # the error really is that of the quantisation
    elif store == "float16":
        assert np.all(err <= np.abs(t - s) * 2.0 ** -11 + 1e-7)
    else:
        assert np.all(err <= np.abs(t - s) * 2.0 ** -24 + 1e-7)
    ang = np.degrees(np.arccos(np.clip(np.sum(nrm * n, 1), -1, 1)))
    bits = {"unorm8": 8, "unorm16": 16, "float16": 11, "float32": 24}[nstore]
    assert ang.max() < np.degrees(2.0 ** -bits * 4)


def test_vertex_limit_is_enforced_with_clear_error():
    assert vertex_limit("article8") == 65536
    assert texture_side(65536, "article8") == 256
    n = 65537
    v = np.zeros((n, 3))
    v[:, 0] = np.arange(n) * 1e-3
    v[:3, 1] = [0, 0, 1]
    f = np.array([[0, 1, 2]])
    with pytest.raises(KisekaeError, match="65537 vertices.*article8.*65536"):
        bake(v, f, v, f, encodings=["article8"])
    with pytest.raises(KisekaeError, match="limit of 65536"):
        encode("delta8", v, v, np.tile([0, 0, 1.0], (n, 1)))


def test_image_files_round_trip(tmp_path):
    rng = np.random.default_rng(0)
    a16 = rng.integers(0, 65536, (4, 8, 3), dtype=np.uint16)
    a8 = rng.integers(0, 256, (4, 8, 4), dtype=np.uint8)
    np.testing.assert_array_equal(read_png(write_png(tmp_path / "a.png", a16)), a16)
    np.testing.assert_array_equal(read_png(write_png(tmp_path / "b.png", a8)), a8)
    for dt in (np.float16, np.float32):
        x = rng.normal(size=(8, 8, 3)).astype(dt)
        y = read_exr(write_exr(tmp_path / f"c_{np.dtype(dt).name}.exr", x))
        assert y.dtype == dt
        np.testing.assert_array_equal(y, x)


def test_bake_files_decode_to_the_same_numbers(tmp_path):
    sv, sf, suv = grid(9, 0.5)
    tv = sv.copy()
    tv[:, 2] = -0.05 * np.exp(-np.sum((sv[:, :2] - 0.25) ** 2, 1) / 0.01)
    r = bake(sv, sf, tv, sf, start_uv0=suv, target_uv0=suv)
    paths = write_bake(r, tmp_path, "w")
    import json
    side = json.loads(paths["sidecar"].read_text())
    assert side["encodings"]["delta16"]["texture_side"] == r.encodings["delta16"].side
    tex = read_png(paths["delta16.positions"])
    np.testing.assert_array_equal(tex, r.encodings["delta16"].position_texture)
    np.testing.assert_array_equal(read_exr(paths["half.normals"]), r.encodings["half"].normal_texture)
    m = read_glb_attributes(paths["mesh"])
    np.testing.assert_array_equal(m["POSITION"], r.start_vertices)
    np.testing.assert_array_equal(m["COLOR_0"], r.encodings["article8"].vertex_colors)
    np.testing.assert_array_equal(m["TEXCOORD_2"], r.texel_uv("article8"))
    np.testing.assert_array_equal(m["indices"], r.start_faces)


def test_hit_damage_follows_hole_size_and_intensity():
    assert hit_damage(0.03, 0.03, 50.0) == 1.0
    assert hit_damage(0.03 + 1 / 50.0, 0.03, 50.0) == 0.0
    assert abs(hit_damage(0.04, 0.03, 50.0) - 0.5) < 1e-12


def _hits_case(seed=0, n=400, h=7):
    rng = np.random.default_rng(seed)
    x = rng.uniform(-0.3, 0.3, (n, 3))
    parts = rng.integers(0, 3, n)
    hp = rng.uniform(-0.3, 0.3, (h, 3))
    hparts = rng.integers(0, 3, h)
    return x, parts, hp, hparts, np.array([1.0, 4.0, 0.5]), np.array([1.0, 1.0, 0.3])


def test_wound_p_numba_numpy_and_scalar_agree():
    x, parts, hp, hparts, reach, gain = _hits_case()
    ref = wound_p_numpy(x, parts, hp, hparts, 0.05, 20.0, reach, gain)
    out = wound_p_numba(x, parts, hp, hparts, 0.05, 20.0, reach, gain, np.zeros(len(x)))
    np.testing.assert_allclose(out, ref, atol=1e-12)
    sc = [wound_p_vertex(x[i], parts[i], hp, hparts, 0.05, 20.0, reach, gain) for i in range(0, len(x), 37)]
    np.testing.assert_allclose(sc, ref[::37], atol=1e-12)
    assert 0 < (ref > 0).mean() < 1  # some vertices damaged, some not
    assert out[parts == 2].max() <= 1.0


def _strip_state(parts=None, **kw):
    v, f, _ = grid(21, 1.0)
    idx = np.zeros((len(v), 1), np.int32)
    w = np.ones((len(v), 1), np.float32)
    return WoundState(v, f, idx, w, np.eye(4)[None], parts, **kw), v, f


def test_flat_mask_equals_loop_in_bind_pose_and_body_part_mask():
    parts = np.zeros(21 * 21, np.int64)
    st0, v, f = _strip_state()
    parts[v[:, 0] > 0.5] = 1  # "arm"
    st, v, f = _strip_state(parts, hole_size=0.03, hole_intensity=40.0, part_reach=[1.0, 30.0])
    h = st.shoot((0.8, 0.5, 1.0), (0, 0, -1), v)
    assert h is not None and h.part == 1 and abs(h.bind_position[0] - 0.8) < 1e-12
    st.shoot((0.2, 0.5, 1.0), (0, 0, -1), v)
    loop = st.p_loop(v, np.eye(4)[None])
    np.testing.assert_allclose(st.p_flat(), loop, atol=1e-6)
    assert np.all(loop[parts == 1] == 1.0)  # the "arm" breaks entirely with one hit
    body = (parts == 0)
    d = np.linalg.norm(v - [0.2, 0.5, 0.0], axis=1)
    assert np.all(loop[body & (d > 0.03 + 1 / 40 + 1e-9)] == 0.0)  # the "chest" only dents locally
    assert np.all(loop[body & (d <= 0.03)] == 1.0)


def test_bad_hits_raise():
    st, v, f = _strip_state()
    with pytest.raises(KisekaeError, match="origin"):
        st.shoot((np.nan, 0, 1), (0, 0, -1), v)
    with pytest.raises(KisekaeError, match="direction"):
        st.shoot((0, 0, 1), (0, 0, 0), v)
    with pytest.raises(KisekaeError, match="finite"):
        st.hit_at_bind_point([0.1, np.nan, 0.0])
    with pytest.raises(KisekaeError, match="barycentrics"):
        make_hit(0, [np.nan, 0.5, 0.5], v, f, st.skin_indices, st.skin_weights, np.eye(4)[None])
    assert st.hits == []


def test_morph_is_bit_identical_at_zero_and_reaches_target_at_one():
    rng = np.random.default_rng(3)
    n = 300
    s = rng.normal(size=(n, 3)).astype(np.float32)
    s[0] = [-0.0, 0.0, -0.0]
    sn = rng.normal(size=(n, 3)).astype(np.float32)
    sn /= np.linalg.norm(sn, axis=1, keepdims=True)
    t = (s + rng.normal(size=(n, 3)) * 0.1).astype(np.float32)
    tn = rng.normal(size=(n, 3)).astype(np.float32)
    tn /= np.linalg.norm(tn, axis=1, keepdims=True)
    p = rng.uniform(0, 1, n).astype(np.float32)
    p[::3] = 0.0
    p[1::5] = 1.0
    a_pos, a_nrm = morph_numpy(s, sn, t, tn, p)
    b_pos, b_nrm = morph_numba(s, sn, t, tn, p, np.empty_like(s), np.empty_like(s))
    np.testing.assert_allclose(b_pos, a_pos, atol=1e-6)
    np.testing.assert_allclose(b_nrm, a_nrm, atol=1e-6)
    zero = p == 0
    for pos, nrm in ((a_pos, a_nrm), (b_pos, b_nrm)):
        assert pos[zero].tobytes() == s[zero].tobytes() and nrm[zero].tobytes() == sn[zero].tobytes()
        np.testing.assert_allclose(pos[p == 1], t[p == 1], atol=1e-6)
    z_pos, _ = morph_numba(s, sn, t, tn, np.zeros(n, np.float32), np.empty_like(s), np.empty_like(s))
    assert z_pos.tobytes() == s.tobytes()


def test_load_bake_decodes_every_encoding_from_files(tmp_path):
    from kisekae.wound.files import load_bake
    sv, sf, _ = grid(9, 0.5)
    tv = sv.copy()
    tv[:, 2] = 0.04 * np.sin(sv[:, 0] * 9)
    parts = (sv[:, 0] > 0.25).astype(np.uint8)
    r = bake(sv, sf, tv, sf, parts=parts)
    paths = write_bake(r, tmp_path)
    for name in r.encodings:
        got = load_bake(paths["sidecar"], name)
        pos, nrm = r.decoded(name)
        np.testing.assert_array_equal(got["target_positions"], pos)
        np.testing.assert_array_equal(got["target_normals"], nrm)
        np.testing.assert_array_equal(got["parts"], parts)
    with pytest.raises(KisekaeError, match="not in this bake"):
        load_bake(paths["sidecar"], "nope")


def test_obj_meshes_load_through_kisekae_io_with_seams_split_and_clear_errors(tmp_path):
    from kisekae.io.arrays import load_mesh
    # two quads sharing an edge (vertices 2, 3), with a UV seam along it: the shared edge has two UV pairs
    text = ("v 0 0 0\nv 1 0 0\nv 1 1 0\nv 0 1 0\nv 2 0 0\nv 2 1 0\n"
            "vt 0 0\nvt 0.5 0\nvt 0.5 1\nvt 0 1\nvt 0.6 0\nvt 1 0\nvt 1 1\nvt 0.6 1\n"
            "f 1/1 2/2 3/3 4/4\nf 2/5 5/6 6/7 3/8\n")
    (tmp_path / "a.obj").write_text(text)
    m = load_mesh(tmp_path / "a.obj")
    assert m["faces"].shape == (4, 3) and len(m["vertices"]) == 8  # 6 positions, 2 of them split at the seam
    # every corner keeps its own UV and position
    corners = m["vertices"][m["faces"]].reshape(-1, 3)
    uvs = m["uv0"][m["faces"]].reshape(-1, 2)
    expect = {(1, 0): {(0.5, 0.0), (0.6, 0.0)}, (1, 1): {(0.5, 1.0), (0.6, 1.0)}}
    for (x, y), want in expect.items():
        got = {tuple(np.round(u, 6)) for c, u in zip(corners, uvs) if c[0] == x and c[1] == y}
        assert got == want
    (tmp_path / "b.obj").write_text("v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 7\n")
    with pytest.raises(KisekaeError, match="line 4.*index 7"):
        load_mesh(tmp_path / "b.obj")
    (tmp_path / "c.obj").write_text("v 0 zero 0\n")
    with pytest.raises(KisekaeError, match="line 1"):
        load_mesh(tmp_path / "c.obj")
    (tmp_path / "d.obj").write_text("v 0 0 0\nv 1 0 0\n")
    with pytest.raises(KisekaeError, match="no faces"):
        load_mesh(tmp_path / "d.obj")
    (tmp_path / "e.obj").write_bytes(b"v 0 0 0\n\xff\xfe\n")
    with pytest.raises(KisekaeError, match="not a text OBJ"):
        load_mesh(tmp_path / "e.obj")
    with pytest.raises(KisekaeError, match="not found"):
        load_mesh(tmp_path / "missing.obj")
