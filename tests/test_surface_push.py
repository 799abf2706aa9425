"""The surface push (kisekae.fit.surface): analytic planes, NumPy against Numba, smoothing, the bake, the runtime."""

import numpy as np
import pytest

from kisekae.avatar import load_builtin_avatar
from kisekae.avatar.poses import named_pose, range_of_motion_poses
from kisekae.errors import KisekaeError
from kisekae.fit.pushout import PushParams
from kisekae.fit.surface import (CANDIDATES, SurfaceCandidates, bake_surface_candidates, one_ring, smooth_push,
                                 smooth_push_numpy, stretch_limit, stretch_limit_numpy, surface_push, surface_push_numpy, surface_runtime)
from kisekae.geom.normals import vertex_normals


def sheet(z=0.0, flip=False, offset=(0.0, 0.0)):
    """A 2 m square of two triangles at height z, normal +Z (or -Z when flipped)."""
    ox, oy = offset
    v = np.array([[-1 + ox, -1 + oy, z], [1 + ox, -1 + oy, z], [1 + ox, 1 + oy, z], [-1 + ox, 1 + oy, z]])
    f = np.array([[0, 1, 2], [0, 2, 3]])
    return v, (f[:, ::-1] if flip else f)


P = PushParams(margin=0.004, stiffness=1.0, max_push=0.1)


@pytest.mark.parametrize("push", [surface_push, surface_push_numpy])
def test_points_under_a_sheet_come_out_by_the_margin(push):
    v, f = sheet()
    n = vertex_normals(v, f).astype(np.float64)
    pts = np.array([[0.1, 0.2, -0.03], [0.3, -0.4, 0.001], [0.0, 0.0, 0.02], [0.5, 0.5, -0.2]])
    cand = SurfaceCandidates(np.array([[0, 1]] * 4, dtype=np.int32), 2)
    new, amount, clear = push(pts, cand, v, n, f, P)
    np.testing.assert_allclose(clear[:3], pts[:3, 2], atol=1e-12)  # signed clearance along +Z
    np.testing.assert_allclose(new[0], [0.1, 0.2, P.margin], atol=1e-12)  # d < 0: gap - d, gap = margin here
    # inside the margin band: the push law's band (linear softness 0): gap * (1 - d / margin)
    np.testing.assert_allclose(new[1, 2], 0.001 + P.margin * (1 - 0.001 / P.margin), atol=1e-12)
    np.testing.assert_array_equal(new[2], pts[2])  # clear of the margin
    np.testing.assert_array_equal(new[3], pts[3])  # 20 cm under: beyond reach (max_push), left alone
    assert np.isinf(clear[3]) and amount[3] == 0
    np.testing.assert_allclose(new[:, :2], pts[:, :2], atol=1e-12)  # only along the normal


@pytest.mark.parametrize("reach", [0.003, 0.01, None])
def test_numba_push_equals_the_reference_within_any_reach(reach):
    """Random points in and around a ball with random candidate rows (repeats and padding included): the Numba push,
    which skips triangles beyond ``reach`` without reading them, equals the NumPy reference, which finds the nearest
    candidate first and then drops it beyond reach; a point at exactly ``reach`` from its nearest candidate is pushed."""
    from conftest import icosphere

    v, f = icosphere(2, 0.1)
    v = np.asarray(v, dtype=np.float64)
    f = np.asarray(f)
    n = vertex_normals(v, f).astype(np.float64)
    rng = np.random.default_rng(11)
    d = rng.normal(size=(400, 3))
    pts = d / np.linalg.norm(d, axis=1, keepdims=True) * rng.uniform(0.09, 0.11, (400, 1))
    centroid = v[f].mean(axis=1)
    near = np.argsort(np.linalg.norm(pts[:, None] - centroid[None], axis=2), axis=1)[:, :8]
    rows = rng.permuted(near, axis=1)  # as baked: distinct triangles around the point, in any order
    rows[::5, 4:] = rows[::5, :1]  # a short row, padded with its first
    cand = SurfaceCandidates(rows.astype(np.int32), len(f))
    a = surface_push(pts, cand, v, n, f, P, reach=reach)
    b = surface_push_numpy(pts, cand, v, n, f, P, reach=reach)
    for x, y in zip(a, b):
        np.testing.assert_allclose(x, y, atol=1e-12)
    left = np.all(a[0] == pts, axis=1)
    assert left.any() and (~left).any()  # both kinds met


@pytest.mark.parametrize("push", [surface_push, surface_push_numpy])
def test_a_point_exactly_at_reach_is_measured(push):
    """A point 0.25 m straight above a corner of its only candidate (nearest point that corner, squared distance
    exactly 0.0625): at reach 0.25 it is measured (clearance 0.25, not pushed), just beyond it it is not."""
    v, f = sheet()
    n = vertex_normals(v, f).astype(np.float64)
    pts = np.array([[-1.0, -1.0, 0.25]])
    cand = SurfaceCandidates(np.array([[0, 0]], dtype=np.int32), 2)
    far = PushParams(margin=0.004, stiffness=1.0, max_push=0.5)
    assert push(pts, cand, v, n, f, far, reach=0.25)[2][0] == 0.25
    assert np.isinf(push(pts, cand, v, n, f, far, reach=np.nextafter(0.25, 0.0))[2][0])


def test_the_nearest_candidate_decides():
    """A crease: the floor (+Z) and a wall (-X facing, at x = 0.05). A point near the wall is pushed out of
    the wall, one near the floor out of the floor; a triangle that is not a candidate is never used."""
    floor_v, floor_f = sheet()
    wall_v = np.array([[0.05, -1, -1], [0.05, 1, -1], [0.05, 1, 1], [0.05, -1, 1]], dtype=np.float64)
    wall_f = np.array([[0, 2, 1], [0, 3, 2]]) + 4  # normal -X
    v = np.concatenate([floor_v, wall_v])
    f = np.concatenate([floor_f, wall_f])
    n = vertex_normals(v, f).astype(np.float64)
    pts = np.array([[0.06, 0.0, 0.5], [-0.3, 0.0, -0.01]])
    both = SurfaceCandidates(np.array([[0, 1, 2, 3]] * 2, dtype=np.int32), 4)
    new, _, _ = surface_push(pts, both, v, n, f, P)
    np.testing.assert_allclose(new[0], [0.05 - P.margin, 0.0, 0.5], atol=1e-12)
    np.testing.assert_allclose(new[1], [-0.3, 0.0, P.margin], atol=1e-12)
    floor_only = SurfaceCandidates(np.array([[0, 1]] * 2, dtype=np.int32), 4)
    new, _, _ = surface_push(pts, floor_only, v, n, f, P)
    np.testing.assert_array_equal(new[0], pts[0])  # 50 cm above the floor: nothing to do


def test_smoothing_spreads_pushes_and_never_shrinks_one():
    # a strip of 6 vertices in a row
    edges = np.array([[i, i + 1] for i in range(5)])
    ring = one_ring(6, edges)
    d = np.zeros((6, 3))
    d[2] = (0.0, 0.0, 0.01)
    for smooth in (smooth_push, smooth_push_numpy):
        out = smooth(d, ring, 2)
        assert np.all(np.linalg.norm(out, axis=1) >= np.linalg.norm(d, axis=1) - 1e-15)
        assert out[1, 2] > 0 and out[3, 2] > 0 and out[2, 2] == 0.01  # spread to the ring, the push itself kept
        assert out[4, 2] > 0 and out[5, 2] == 0  # two passes reach two rings: vertex 5 is the third
    const = np.tile([0.0, 0.0, 0.02], (6, 1))
    np.testing.assert_array_equal(smooth_push(const, ring, 5), const)
    rng = np.random.default_rng(1)
    d = rng.normal(size=(6, 3)) * 0.01
    np.testing.assert_allclose(smooth_push(d, ring, 7), smooth_push_numpy(d, ring, 7), atol=1e-15)


def test_smoothing_visits_only_where_the_push_reached_and_equals_the_reference():
    """The kernel visits the vertices near a non-zero displacement only: on the tights' ring with a few scattered
    pushes (and an isolated vertex's) it must give the reference's numbers for every pass count, zeros far away."""
    from kisekae.avatar.builtin import load_builtin_avatar

    mesh = load_builtin_avatar().part("tights").mesh
    ring = one_ring(mesh.n_vertices, mesh.edges)
    rng = np.random.default_rng(4)
    d = np.zeros((mesh.n_vertices, 3))
    hit = rng.choice(mesh.n_vertices, 12, replace=False)
    d[hit] = rng.normal(0, 0.01, (12, 3))
    for passes in (0, 1, 3, 10):
        got = smooth_push(d, ring, passes)
        want = smooth_push_numpy(d, ring, passes)
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-15)
        assert (np.abs(got).max(axis=1) > 0).sum() == (np.abs(want).max(axis=1) > 0).sum()
    assert 12 < (np.abs(got).max(axis=1) > 0).sum() < mesh.n_vertices  # spread, but not everywhere
    np.testing.assert_array_equal(smooth_push(np.zeros_like(d), ring, 10), 0.0)


@pytest.mark.parametrize("limit", [stretch_limit, stretch_limit_numpy])
def test_stretch_limit_meets_halfway_at_the_limit(limit):
    """Analytic: an edge stretched to twice its skinned length comes back to exactly 1.1 times it in one pass, each
    end moving half the excess; an edge inside the limit, or shortened, leaves its ends where they are."""
    x = np.array([[0.0, 0.0, 0.0], [0.1, 0.0, 0.0], [1.0, 0.0, 0.0], [1.1, 0.0, 0.0], [2.0, 0.0, 0.0], [2.1, 0.0, 0.0]])
    ring = one_ring(6, [[0, 1], [2, 3], [4, 5]])
    p = x.copy()
    p[1] = (0.2, 0.0, 0.0)       # edge 0-1: 0.1 -> 0.2 m, over the limit
    p[3] = (1.0 + 0.105, 0.0, 0.0)   # edge 2-3: 5 % longer, inside it
    p[5] = (2.05, 0.0, 0.0)      # edge 4-5: half as long: compression is free
    out, moved = limit(p, x, ring, 0.1)
    np.testing.assert_allclose(out[0], [0.045, 0.0, 0.0], atol=1e-15)
    np.testing.assert_allclose(out[1], [0.155, 0.0, 0.0], atol=1e-15)
    assert np.linalg.norm(out[1] - out[0]) == pytest.approx(0.11, abs=1e-15)
    np.testing.assert_array_equal(out[2:], p[2:])
    assert moved.tolist() == [True, True, False, False, False, False]


def test_stretch_limit_averages_over_edges_and_numba_equals_numpy():
    """A vertex pulled by two over-stretched edges moves by the mean of the two corrections; on random data the
    kernel equals the reference, seam duplicates moving with their representative."""
    x = np.array([[0.0, 0.0, 0.0], [-0.1, 0.0, 0.0], [0.0, 0.1, 0.0]])
    p = np.array([[0.0, 0.0, 0.1], [-0.1, 0.0, 0.0], [0.0, 0.1, 0.0]])
    ring = one_ring(3, [[0, 1], [0, 2]])
    out, moved = stretch_limit_numpy(p, x, ring, 0.0)
    l = np.sqrt(0.02)
    c1 = 0.5 * (l - 0.1) / l * (p[1] - p[0])
    c2 = 0.5 * (l - 0.1) / l * (p[2] - p[0])
    np.testing.assert_allclose(out[0], p[0] + 0.5 * (c1 + c2), atol=1e-15)
    assert moved.all()
    rng = np.random.default_rng(3)
    x = rng.normal(size=(40, 3)) * 0.05
    p = x + rng.normal(size=(40, 3)) * 0.02
    edges = np.array(sorted({tuple(sorted(e)) for e in rng.integers(0, 38, size=(120, 2)) if e[0] != e[1]}))
    weld = np.arange(40)
    weld[38], weld[39] = 3, 7
    p[38], p[39], x[38], x[39] = p[3], p[7], x[3], x[7]
    ring = one_ring(40, edges, weld)
    a, ma = stretch_limit(p, x, ring, 0.1)
    b, mb = stretch_limit_numpy(p, x, ring, 0.1)
    np.testing.assert_allclose(a, b, atol=1e-15)
    np.testing.assert_array_equal(ma, mb)
    np.testing.assert_array_equal(a[38], a[3])
    with pytest.raises(KisekaeError, match="stretch"):
        stretch_limit(p, x, ring, -0.1)
    with pytest.raises(KisekaeError, match="ring"):
        stretch_limit(p[:39], x[:39], ring, 0.1)


@pytest.mark.parametrize("limit", [stretch_limit, stretch_limit_numpy])
def test_stretch_limit_floor_pushes_a_shrunk_clinging_edge_apart_halfway(limit):
    """Analytic: with ``shortest`` 0.85 at both ends, an edge shrunk to half its skinned length comes back to exactly
    0.85 times it in one pass, each end moving half the deficit away from the other; an edge with one loose end
    (floor 0) shrinks freely, and an edge of length 0 has no direction and moves nothing."""
    x = np.array([[0.0, 0.0, 0.0], [0.1, 0.0, 0.0], [1.0, 0.0, 0.0], [1.1, 0.0, 0.0], [2.0, 0.0, 0.0], [2.1, 0.0, 0.0]])
    ring = one_ring(6, [[0, 1], [2, 3], [4, 5]])
    p = x.copy()
    p[1] = (0.05, 0.0, 0.0)   # clinging edge 0-1 at half its length
    p[3] = (1.05, 0.0, 0.0)   # edge 2-3 at half its length, vertex 3 loose
    p[5] = p[4]               # clinging edge 4-5 collapsed to a point
    shortest = np.array([0.85, 0.85, 0.85, 0.0, 0.85, 0.85])
    out, moved = limit(p, x, ring, 0.1, shortest)
    np.testing.assert_allclose(out[0], [-0.0175, 0.0, 0.0], atol=1e-15)
    np.testing.assert_allclose(out[1], [0.0675, 0.0, 0.0], atol=1e-15)
    assert np.linalg.norm(out[1] - out[0]) == pytest.approx(0.085, abs=1e-15)
    np.testing.assert_array_equal(out[2:], p[2:])
    assert moved.tolist() == [True, True, False, False, False, False]
    # no floor (None or zeros) is the plain stretch limit
    np.testing.assert_array_equal(limit(p, x, ring, 0.1, np.zeros(6))[0], limit(p, x, ring, 0.1)[0])


def test_stretch_limit_floor_numba_equals_numpy_and_bad_floors_are_named():
    rng = np.random.default_rng(5)
    x = rng.normal(size=(60, 3)) * 0.05
    p = x + rng.normal(size=(60, 3)) * 0.02
    edges = np.array(sorted({tuple(sorted(e)) for e in rng.integers(0, 60, size=(200, 2)) if e[0] != e[1]}))
    ring = one_ring(60, edges)
    shortest = np.where(rng.random(60) < 0.6, 0.85, 0.0)
    a, ma = stretch_limit(p, x, ring, 0.1, shortest)
    b, mb = stretch_limit_numpy(p, x, ring, 0.1, shortest)
    np.testing.assert_allclose(a, b, atol=1e-14)
    np.testing.assert_array_equal(ma, mb)
    assert (a != stretch_limit(p, x, ring, 0.1)[0]).any()  # the floor moved something on this data
    for bad in (np.full(60, 1.0), np.full(60, -0.1), np.full(59, 0.5), np.full(60, np.nan)):
        with pytest.raises(KisekaeError, match="shortest"):
            stretch_limit(p, x, ring, 0.1, bad)


def test_shortest_lengths_floors_only_the_cloth_that_clings():
    from kisekae.fit.surface import CLING_CLEARANCE, COMPRESSION_LIMIT, shortest_lengths

    r = np.array([-0.001, 0.0, CLING_CLEARANCE, CLING_CLEARANCE + 1e-6, 0.2])
    np.testing.assert_array_equal(shortest_lengths(r), [1 - COMPRESSION_LIMIT] * 3 + [0.0, 0.0])
    np.testing.assert_array_equal(shortest_lengths(r, compression=0.3, cling=0.0), [0.7, 0.7, 0.0, 0.0, 0.0])
    with pytest.raises(KisekaeError, match="rest clearance"):
        shortest_lengths([0.0, np.nan])
    with pytest.raises(KisekaeError, match="compression"):
        shortest_lengths(r, compression=1.5)
    with pytest.raises(KisekaeError, match=r"\[0, 1\)"):  # one check for the library, the per-frame path and the CLI
        shortest_lengths(r, compression=1.0)


def test_one_ring_gives_seam_duplicates_their_representative_ring():
    ptr, idx = one_ring(4, [[0, 1], [1, 2]], weld=[0, 1, 2, 1])
    ring = [sorted(idx[ptr[i]:ptr[i + 1]].tolist()) for i in range(4)]
    assert ring == [[1], [0, 2], [1], [0, 2]]
    with pytest.raises(KisekaeError, match="weld"):
        one_ring(4, [[0, 1]], weld=[0, 1])


@pytest.fixture(scope="module")
def contact_avatar():
    return load_builtin_avatar().with_body_contact()


@pytest.fixture(scope="module")
def tights_candidates(contact_avatar):
    return bake_surface_candidates(contact_avatar, "tights", n_poses=60)


def test_bake_holds_the_rest_skin_and_is_reproducible(contact_avatar, tights_candidates):
    from kisekae.geom.bvh import build_bvh, refit
    from kisekae.geom.closest import surface_distance

    av = contact_avatar
    c = tights_candidates
    assert c.triangles.shape == (av.part("tights").mesh.n_vertices, CANDIDATES) and c.n_body_faces == len(av.body.mesh.faces)
    b = av.body
    tree = build_bvh(b.mesh.vertices, b.mesh.faces)
    rest_tri = surface_distance(av.part("tights").mesh.vertices, tree, refit(tree, b.mesh.vertices, b.mesh.faces))[1]
    assert np.all(np.any(c.triangles == rest_tri[:, None], axis=1))  # the rest pose is in every bake
    again = bake_surface_candidates(av, "tights", n_poses=60)
    np.testing.assert_array_equal(again.triangles, c.triangles)
    assert len(range_of_motion_poses(av.skeleton, 3, seed=4)) == 3


def _crouch_frame(av):
    """The crouch: (pose, skinned tights, posed body float64, its unit normals, body faces)."""
    pose = named_pose(av.skeleton, "crouch")
    m = pose.skinning_matrices(av.skeleton)
    body = av.body.posed(m).astype(np.float64)
    faces = av.body.mesh.faces
    return pose, av.part("tights").posed(m), body, vertex_normals(body, faces).astype(np.float64), faces


def test_runtime_numpy_equals_numba_and_beats_the_capsule_path(contact_avatar, tights_candidates):
    """Crouch (the seed's deepest verification pose): the surface path leaves far fewer tights vertices
    inside than the capsule path, with fewer flipped faces, and the two implementations agree."""
    from kisekae.fit.fix import params_for
    from kisekae.fit.runtime import garment_ring, runtime_pose
    from kisekae.qa.check import check_pose

    av = contact_avatar
    pose, x, body, nb, faces = _crouch_frame(av)
    ring = garment_ring(av, "tights")
    p = params_for("tights", None)
    fast, push = surface_runtime(x, tights_candidates, ring, body, nb, faces, p)
    ref, _ = surface_runtime(x, tights_candidates, ring, body, nb, faces, p, numpy=True)
    np.testing.assert_allclose(fast, ref, atol=1e-9)
    assert push.max() <= p.max_push + 1e-12
    capsules = runtime_pose(av, pose, ["tights"], method="capsules")["tights"][0]
    before, caps, ours = (check_pose(av, pose, ["tights"], posed_garments=g)[0] for g in
                          (None, {"tights": capsules}, {"tights": fast.astype(np.float32)}))
    assert ours["inside_count"] * 4 <= caps["inside_count"] < before["inside_count"]
    assert ours["flipped_faces"] < caps["flipped_faces"]
    assert ours["strain_p99"] < caps["strain_p99"]


def test_stretch_limit_removes_spikes_in_the_crouch(contact_avatar, tights_candidates):
    """Crouch tights: the limit passes lower the stretch of the worst edges without letting more vertices inside, and
    the runtime with them still equals the NumPy reference."""
    from kisekae.fit.fix import params_for
    from kisekae.fit.runtime import garment_chord, garment_ring
    from kisekae.qa.check import check_pose

    av = contact_avatar
    pose, x, body, nb, faces = _crouch_frame(av)
    args = (x, tights_candidates, garment_ring(av, "tights"), body, nb, faces, params_for("tights", None))
    chord = garment_chord(av, "tights")
    without = surface_runtime(*args, chord=chord, limit_passes=0)[0]
    limited = surface_runtime(*args, chord=chord)[0]
    np.testing.assert_allclose(limited, surface_runtime(*args, chord=chord, numpy=True)[0], atol=1e-9)
    a, b = (check_pose(av, pose, ["tights"], posed_garments={"tights": g.astype(np.float32)})[0]
            for g in (without, limited))
    assert b["strain_p99"] < 0.85 * a["strain_p99"]
    assert b["inside_count"] <= a["inside_count"] and b["edge_crossings"] <= a["edge_crossings"]
    with pytest.raises(KisekaeError, match="limit passes"):
        surface_runtime(*args, limit_passes=-1)
    with pytest.raises(KisekaeError, match="stretch limit"):
        surface_runtime(*args, limit_passes=0, stretch=float("nan"))


def test_moving_the_scene_moves_the_result(contact_avatar, tights_candidates):
    from kisekae.fit.fix import params_for
    from kisekae.fit.runtime import garment_ring

    av = contact_avatar
    m = named_pose(av.skeleton, "sit").skinning_matrices(av.skeleton)
    body = av.body.posed(m).astype(np.float64)
    faces = av.body.mesh.faces
    nb = vertex_normals(body, faces).astype(np.float64)
    x = av.part("tights").posed(m).astype(np.float64)
    shift = np.array([10.0, -3.0, 7.0])
    args = (tights_candidates, garment_ring(av, "tights"))
    a, _ = surface_runtime(x, *args, body, nb, faces, params_for("tights", None))
    b, _ = surface_runtime(x + shift, *args, body + shift, nb, faces, params_for("tights", None))
    np.testing.assert_allclose(b - shift, a, atol=1e-6)


def test_bad_input_gets_clear_errors(contact_avatar, tights_candidates):
    v, f = sheet()
    n = vertex_normals(v, f).astype(np.float64)
    cand = SurfaceCandidates(np.array([[0, 1]], dtype=np.int32), 2)
    with pytest.raises(KisekaeError, match="garment vertices"):
        surface_push([[0.0, np.nan, 0.0]], cand, v, n, f, P)
    with pytest.raises(KisekaeError, match="baked for 1 garment vertices"):
        surface_push(np.zeros((2, 3)), cand, v, n, f, P)
    with pytest.raises(KisekaeError, match="baked for a body of 2 triangles"):
        surface_push(np.zeros((1, 3)), cand, v, n, f[:1], P)
    with pytest.raises(KisekaeError, match="normals"):
        surface_push(np.zeros((1, 3)), cand, v, n[:3], f, P)
    with pytest.raises(KisekaeError, match="1 to 64"):
        bake_surface_candidates(contact_avatar, "tights", k=0)
    for bad in (-1, 1.5, True):
        with pytest.raises(KisekaeError, match="arm poses"):
            bake_surface_candidates(contact_avatar, "tights", n_poses=1, arm_poses=bad)
    with pytest.raises(KisekaeError, match="whole number"):
        range_of_motion_poses(contact_avatar.skeleton, -1)
    from kisekae.fit.runtime import runtime_pose

    with pytest.raises(KisekaeError, match="per-frame method"):
        runtime_pose(contact_avatar, named_pose(contact_avatar.skeleton, "stand"), ["tights"], method="cloth")


def test_range_of_motion_measures_arm_elevation_from_hanging_down():
    """An A-pose and a T-pose rig get the same arm directions: the rest elevation is taken off the range."""
    from kisekae.avatar.poses import RANGE_OF_MOTION, rest_elevation
    from kisekae.avatar.skeleton import Skeleton

    def rig(elevation_deg):
        a = np.radians(elevation_deg)
        rest = np.tile(np.eye(4), (3, 1, 1))
        rest[1, :3, 3] = (0.2, 1.4, 0.0)  # upperarm_l head
        rest[2, :3, 3] = rest[1, :3, 3] + 0.3 * np.array([np.sin(a), -np.cos(a), 0.0])  # lowerarm_l head
        return Skeleton(["spine_03", "upperarm_l", "lowerarm_l"], np.array([-1, 0, 1]), rest)

    lo, hi = next((r[2], r[3]) for r in RANGE_OF_MOTION if r[0] == "upperarm_l" and r[1] == (0.0, 0.0, 1.0))
    for elevation in (40.0, 90.0):  # A-pose, T-pose
        sk = rig(elevation)
        assert rest_elevation(sk, 1, (0.0, 0.0, 1.0)) == pytest.approx(elevation)
        ups = []
        for pose in range_of_motion_poses(sk, 400, seed=3):
            w = pose.world_matrices(sk)
            d = w[2, :3, 3] - w[1, :3, 3]
            ups.append(np.degrees(np.arctan2(d[0], -d[1])))  # the arm's elevation from hanging, frontal plane
        # the forward/back swing that follows tilts it out of the frontal plane, so compare the spread's ends
        assert min(ups) < lo + 15 and max(ups) > hi - 25


def test_chord_allowance_on_a_cylinder():
    """A cylinder of radius R with radial normals has curvature 1/R at every vertex (adjacent normals differ by
    the same angle as their positions); a vertex with longest edge L keeps L^2 / (8 R) more room, up to the cap."""
    from kisekae.fit.surface import CHORD_CAP, body_curvature

    r, n_around, zs = 0.05, 32, np.linspace(-0.2, 0.2, 9)
    a = np.linspace(0, 2 * np.pi, n_around, endpoint=False)
    v = np.array([[r * np.cos(t), r * np.sin(t), z] for z in zs for t in a])
    normals = np.array([[np.cos(t), np.sin(t), 0.0] for z in zs for t in a])
    faces = []
    for i in range(len(zs) - 1):
        for j in range(n_around):
            p, q = i * n_around + j, i * n_around + (j + 1) % n_around
            faces += [[p, q, q + n_around], [p, q + n_around, p + n_around]]
    faces = np.array(faces)
    kappa = body_curvature(v, normals, faces)
    np.testing.assert_allclose(kappa, 1 / r, rtol=1e-9)
    pts = np.array([[r + 0.002, 0.0, 0.0], [0.0, r + 0.002, 0.05]])
    cand = SurfaceCandidates(np.array([np.argsort(np.linalg.norm(v[faces].mean(1) - p, axis=1))[:16] for p in pts],
                                      dtype=np.int32), len(faces))
    params = PushParams(margin=0.01, stiffness=1.0, max_push=0.1)
    for push in (surface_push, surface_push_numpy):
        base = push(pts, cand, v, normals, faces, params)[2]
        short = push(pts, cand, v, normals, faces, params, chord=[0.02, 0.02])[2]
        long = push(pts, cand, v, normals, faces, params, chord=[0.05, 0.05])[2]
        np.testing.assert_allclose(base - short, 0.02 ** 2 / (8 * r), atol=1e-12)
        np.testing.assert_allclose(base - long, CHORD_CAP, atol=1e-12)
    with pytest.raises(KisekaeError, match="chord"):
        surface_push(pts, cand, v, normals, faces, params, chord=[0.02])


def test_check_compression_limit_flag(tmp_path, capsys):
    """``kisekae check --runtime --compression-limit C``: the records say the limit, 0 turns the floor off (the crouch
    tights' strain maximum rises by half or more, as before the floor), and the flag needs the carried or surface
    method."""
    import json

    from kisekae.cli import main

    strain = {}
    for limit in ("0.15", "0"):
        path = tmp_path / f"{limit}.json"
        assert main(["check", "--pose", "crouch", "--garment", "tights", "--runtime", "--compression-limit", limit,
                     "--json", str(path)]) == 0
        rec = [r for r in json.loads(path.read_text()) if r.get("stage") == "runtime"][0]
        assert rec["compression_limit"] == float(limit)
        strain[limit] = rec["strain_max"]
    assert strain["0.15"] < 0.4 and strain["0"] > 1.5 * strain["0.15"], strain
    for extra in ([], ["--runtime", "--runtime-method", "capsules"]):
        assert main(["check", "--pose", "stand", "--garment", "tights", *extra, "--compression-limit", "0.1"]) == 2
        assert "--compression-limit" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["check", "--pose", "stand", "--runtime", "--compression-limit", "1.0"])


def test_runtime_compression_is_checked():
    from kisekae.fit.runtime import check_compression

    assert check_compression(0) == 0.0 and check_compression(0.15) == 0.15
    for bad in (1.0, -0.1, float("nan"), True, "0.1", None):
        with pytest.raises(KisekaeError, match="compression limit"):
            check_compression(bad)


def test_the_bake_adds_poses_with_the_arms_at_the_sides(contact_avatar):
    """``arm_poses`` appends poses drawn from ``ARMS_AT_SIDES`` (seed + 1) after the rest pose and the range of motion:
    each lowers both upper arms to within 60 degrees of hanging straight down (the range's 25 degrees out to the side
    and 50 forward or back), and they change only the arms."""
    from kisekae.avatar.poses import ARMS_AT_SIDES, range_of_motion_poses

    sk = contact_avatar.skeleton
    _, hits, poses = bake_surface_candidates(contact_avatar, "tights", n_poses=3, arm_poses=2, hits=True)
    assert len(poses) == 6 and hits.shape[0] == 6
    want = range_of_motion_poses(sk, 2, seed=1, ranges=ARMS_AT_SIDES)
    for got, ref in zip(poses[4:], want):
        np.testing.assert_array_equal(got.skinning_matrices(sk), ref.skinning_matrices(sk))
        w = got.world_matrices(sk)
        for arm, hand in (("upperarm_l", "lowerarm_l"), ("upperarm_r", "lowerarm_r")):
            d = w[sk.index[hand], :3, 3] - w[sk.index[arm], :3, 3]
            assert np.degrees(np.arccos(-d[1] / np.linalg.norm(d))) < 60
        legs = [sk.index[b] for b in ("thigh_l", "thigh_r", "calf_l", "calf_r")]
        np.testing.assert_allclose(got.skinning_matrices(sk)[legs], np.tile(np.eye(4), (4, 1, 1)), atol=1e-12)
