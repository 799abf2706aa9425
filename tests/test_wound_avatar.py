"""Wound morph on the built-in MakeHuman avatar: bake the procedural damaged variant, hit it, pose it."""

from pathlib import Path

import numpy as np
import pytest

from kisekae.wound import BEST_ENCODING, WoundState, bake, morph_numba
from kisekae.geom.closest import closest_point_triangles_numpy
from kisekae.geom.normals import vertex_normals
from kisekae.wound.damage import PART_ARM, PART_CHEST, damaged_builtin

import kisekae.avatar as avatar_mod  # noqa: E402
import kisekae.avatar.poses as poses_mod  # noqa: E402

from kisekae.data import sample_path  # noqa: E402

BVH = sample_path("cmu_35_01_excerpt.bvh")


@pytest.fixture(scope="module")
def av():
    return avatar_mod.load_builtin_avatar("game_engine")


@pytest.fixture(scope="module")
def damaged(av):
    return damaged_builtin(av)


@pytest.fixture(scope="module")
def baked(av, damaged):
    m = av.body.mesh
    return bake(m.vertices, m.faces, damaged.vertices, m.faces, parts=damaged.parts, start_uv0=m.uvs["uv0"],
                target_uv0=m.uvs["uv0"])


def _state(av, parts=None, **kw):
    b = av.body
    return WoundState(b.mesh.vertices, b.mesh.faces, b.skin.indices, b.skin.weights, av.skeleton.rest, parts, **kw)


def test_damaged_variant_is_what_the_docs_say(av, damaged):
    v = av.body.mesh.vertices.astype(np.float64)
    moved = np.linalg.norm(damaged.vertices - v, axis=1)
    arm = damaged.parts == PART_ARM
    assert moved[arm].max() > 0.1  # the hand moves a long way towards the elbow
    assert abs(damaged.dent_offset.max() - 0.025) < 1e-3
    untouched = (damaged.arm_weight == 0) & (damaged.dent_offset < 1e-9)
    assert untouched.mean() > 0.7 and moved[untouched].max() < 1e-6


def test_encoding_table_on_avatar(av, baked):
    rows = {r["encoding"]: r for r in baked.errors}
    extent = np.ptp(av.body.mesh.vertices, axis=0).astype(np.float64)
    # article: 8-bit absolute positions over the bounding box, error about a quantisation step
    step_mm = extent / 255 * 1000
    assert step_mm.min() * 0.5 < rows["article8"]["max_mm"] <= np.linalg.norm(step_mm) / 2 + 1e-6
    best = rows[BEST_ENCODING]
    assert best["max_mm"] <= 0.1 and best["max_deg"] <= 0.5
    assert rows["float"]["max_mm"] <= rows["half"]["max_mm"] <= rows["delta8"]["max_mm"] < rows["article8"]["max_mm"]
    print("\n" + baked.error_table())


def test_morph_at_one_lies_on_the_damaged_surface_and_zero_is_identity(av, damaged, baked):
    m = av.body.mesh
    pos, nrm = baked.decoded(BEST_ENCODING)
    s = baked.start_vertices
    p1 = np.ones(len(s), np.float32)
    mp, mn = morph_numba(s, baked.start_normals, pos.astype(np.float32), nrm.astype(np.float32), p1,
                         np.empty_like(s), np.empty_like(s))
    # independent check: brute-force distance to the damaged surface for damaged vertices
    rng = np.random.default_rng(0)
    moved = np.flatnonzero(np.linalg.norm(damaged.vertices - m.vertices, axis=1) > 1e-3)
    sample = rng.choice(moved, 60, replace=False)
    dv = damaged.vertices.astype(np.float64)
    f = m.faces
    a, b, c = dv[f[:, 0]], dv[f[:, 1]], dv[f[:, 2]]
    for i in sample:
        _, _, d = closest_point_triangles_numpy(np.repeat(mp[i][None].astype(np.float64), len(f), 0), a, b, c)
        assert d.min() < 1e-4 + 1e-6 * 5  # float32 storage of ~1 m coordinates adds ~0.1 um
    # the same-topology vertices that the damage did not touch stay put
    still = np.linalg.norm(damaged.vertices - m.vertices, axis=1) == 0
    assert np.abs(mp[still] - s[still]).max() < 1e-6
    p0 = np.zeros(len(s), np.float32)
    zp, zn = morph_numba(s, baked.start_normals, pos.astype(np.float32), nrm.astype(np.float32), p0,
                         np.empty_like(s), np.empty_like(s))
    assert zp.tobytes() == s.tobytes() and zn.tobytes() == baked.start_normals.tobytes()


def _surface_point(hit, posed, faces):
    return hit.bary @ posed[faces[hit.face]].astype(np.float64)


def _check_hit_follows(av, hit, skin_matrices, faces, tol=1e-3):
    posed = av.body.posed(skin_matrices).astype(np.float64)
    target = _surface_point(hit, posed, faces)
    assert np.linalg.norm(hit.world(skin_matrices) - target) < tol
    # cast a fresh ray at the same body point from outside, along the posed face normal
    tri = posed[faces[hit.face]]
    n = np.cross(tri[1] - tri[0], tri[2] - tri[0])
    n /= np.linalg.norm(n)
    st = _state(av)
    h2 = st.shoot(target + 0.05 * n, -n, posed)
    assert h2 is not None and np.linalg.norm(h2.bind_position - hit.bind_position) < tol


def test_hits_stay_on_the_body_point_in_every_named_pose(av):
    faces = av.body.mesh.faces
    st = _state(av)
    placed = []
    for where, pose_name in (("chest", "stand"), ("thigh_l", "crouch"), ("hand_l", "arms_up")):
        S = poses_mod.named_pose(av.skeleton, pose_name).skinning_matrices(av.skeleton)
        posed = av.body.posed(S).astype(np.float64)
        nrm = vertex_normals(posed, faces)
        if where == "chest":
            target = np.array([0.05, 1.25, 0.0])
            cand = np.flatnonzero((np.abs(posed[:, 0] - 0.05) < 0.02) & (np.abs(posed[:, 1] - 1.25) < 0.02))
            vi = cand[np.argmax(posed[cand, 2])]
        else:
            b = av.skeleton.names.index(where)
            idx, w = av.body.skin.indices, av.body.skin.weights
            vi = int(np.flatnonzero((idx[:, 0] == b) & (w[:, 0] > 0.9))[0])
        origin = posed[vi] + 0.05 * nrm[vi]
        h = st.shoot(origin, -nrm[vi], posed)
        assert h is not None and np.linalg.norm(_surface_point(h, posed, faces) - posed[vi]) < 0.02
        placed.append(h)
    for name in poses_mod.NAMED_POSES:
        S = poses_mod.named_pose(av.skeleton, name).skinning_matrices(av.skeleton)
        for h in placed:
            _check_hit_follows(av, h, S, faces)


def test_hits_follow_every_bvh_frame():
    import kisekae.io.bvh as bvh

    av = avatar_mod.load_builtin_avatar("cmu_mb")
    motion = bvh.load_bvh(BVH, av.skeleton)
    faces = av.body.mesh.faces
    st = _state(av)
    posed0 = av.body.posed(motion.poses[0].skinning_matrices(av.skeleton)).astype(np.float64)
    nrm = vertex_normals(posed0, faces)
    hits = []
    for vi in (int(np.argmax(posed0[:, 2])), int(np.argmax(posed0[:, 1] + 0 * posed0[:, 0]))):
        h = st.shoot(posed0[vi] + 0.05 * nrm[vi], -nrm[vi], posed0)
        assert h is not None
        hits.append(h)
    assert len(motion.poses) >= 2
    for pose in motion.poses:
        S = pose.skinning_matrices(av.skeleton)
        posed = av.body.posed(S).astype(np.float64)
        for h in hits:
            assert np.linalg.norm(h.world(S) - _surface_point(h, posed, faces)) < 1e-3


def test_arm_breaks_with_one_hit_and_chest_only_dents(av, damaged, baked):
    st = _state(av, damaged.parts, hole_size=0.03, hole_intensity=50.0, part_reach=[1.0, 30.0, 1.0])
    v = av.body.mesh.vertices.astype(np.float64)
    nrm = vertex_normals(v, av.body.mesh.faces)
    arm = np.flatnonzero(damaged.parts == PART_ARM)
    vi = arm[np.argmax(v[arm, 0])]  # the fingertip side of the hand
    h = st.shoot(v[vi] + 0.05 * nrm[vi], -nrm[vi], v)
    assert h.part == PART_ARM
    p = st.p_flat()
    assert np.all(p[damaged.parts == PART_ARM] == 1.0)
    assert np.all(p[damaged.parts == PART_CHEST] == 0.0)
    c = damaged.dent_center
    h2 = st.shoot(c + [0, 0, 0.2], [0, 0, -1], v)
    assert h2.part == PART_CHEST
    p = st.p_flat()
    d = np.linalg.norm(v - h2.bind_position, axis=1)
    chest = damaged.parts == PART_CHEST
    assert np.all(p[chest & (d < 0.03)] == 1.0) and np.all(p[chest & (d > 0.03 + 1 / 50.0 + 1e-6)] == 0.0)
    # loop mode (article style) gives the same p in the bind pose
    np.testing.assert_allclose(st.p_loop(v, np.tile(np.eye(4), (len(av.skeleton.rest), 1, 1))), p, atol=1e-5)


def test_uv_mask_equals_per_vertex_mask_on_the_avatar(av, damaged):
    m = av.body.mesh
    st = _state(av, damaged.parts, hole_size=0.03, hole_intensity=50.0, part_reach=[1.0, 30.0, 1.0])
    mask = st.enable_uv_mask(m.uvs["uv0"], uv_coords=m.uv_coords, uv_faces=m.uv_faces, size=512)
    v = m.vertices.astype(np.float64)
    nrm = vertex_normals(v, m.faces)
    rng = np.random.default_rng(5)
    arm = np.flatnonzero(damaged.parts == PART_ARM)
    for vi in [arm[len(arm) // 2], *rng.choice(len(v), 6, replace=False)]:
        assert st.shoot(v[vi] + 0.05 * nrm[vi], -nrm[vi], v) is not None
    st.shoot(damaged.dent_center + [0, 0, 0.2], [0, 0, -1], v)
    ref, got = st.p_flat(), st.p_uv()
    td = mask.tap_distance()
    assert np.all(np.isfinite(td)) and np.median(td) < 0.005  # ~3.4 mm texels at 512 on a 1.67 m body
    err = np.abs(got - ref)
    lip = st.hole_intensity * st.part_gain.max() * len(st.hits)
    assert np.all(err <= lip * td + 1e-6)
    damaged_v = (ref > 0) | (got > 0)
    assert err[damaged_v].mean() < 0.05 and np.all(got[damaged.parts == PART_ARM] > 0.9)
    print(f"\nUV mask 512: |p_uv - p_vertex| max {err.max():.3f}, mean over damaged {err[damaged_v].mean():.4f}")
