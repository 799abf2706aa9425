"""Edge lift (kisekae.fit.edge_lift) and unflip (kisekae.fit.unflip): analytic cases, kernels against the NumPy
references, and the per-frame correction on the built-in avatar with and without them."""

import numpy as np
import pytest

from kisekae.errors import KisekaeError
from kisekae.fit.edge_lift import (LIFT_REACH, EdgeSamples, edge_lift, edge_lift_numpy, edge_samples, face_samples,
                                   garment_edge_samples, lift_fade, vertex_samples)
from kisekae.fit.pushout import PushParams, push_amount
from kisekae.fit.surface import SurfaceCandidates
from kisekae.fit.unflip import flipped_faces, unflip, unflip_numpy, vertex_faces


def _plane(size=1.0):
    """A square body at z = 0 (two triangles, normals +Z) and its faces."""
    v = np.array([[-size, -size, 0], [size, -size, 0], [size, size, 0], [-size, size, 0]], dtype=np.float64)
    f = np.array([[0, 1, 2], [0, 2, 3]])
    return v, np.tile([0.0, 0.0, 1.0], (4, 1)), f


def test_samples_count_position_and_chord():
    v = np.array([[0, 0, 0], [0.05, 0, 0], [0.05, 0.02, 0], [0.05, 0.03, 0]], dtype=np.float64)
    s = edge_samples(v, [[0, 1], [1, 2], [2, 3]], spacing=0.02)
    # 5 cm: ceil(2.5) - 1 = 2 samples at thirds; exactly 2 cm: none; 1 cm: none
    assert len(s) == 2
    assert s.ends.tolist() == [[0, 1, 1], [0, 1, 1]]
    np.testing.assert_allclose(s.bary, [[2 / 3, 1 / 3, 0], [1 / 3, 2 / 3, 0]])
    np.testing.assert_allclose(s.chord, [0.05 / 3] * 2)
    np.testing.assert_allclose(s.points(v), [[0.05 / 3, 0, 0], [0.1 / 3, 0, 0]])


def test_sample_points_are_the_barycentric_blend_bit_for_bit():
    """The Numba blend equals the formula written out in NumPy, summed in corner order, to the bit (face samples
    with three corners, edge samples with a zero weight, welded ids anywhere in the vertex list)."""
    rng = np.random.default_rng(7)
    v = rng.normal(size=(50, 3))
    ends = rng.integers(0, 50, size=(200, 3))
    bary = rng.random((200, 3))
    bary[::3, 2] = 0.0
    bary /= bary.sum(axis=1, keepdims=True)
    s = EdgeSamples(ends, bary, np.ones(200), 50)
    ref = bary[:, 0, None] * v[ends[:, 0]] + bary[:, 1, None] * v[ends[:, 1]] + bary[:, 2, None] * v[ends[:, 2]]
    assert np.array_equal(s.points(v), ref)


def test_weights_move_the_sample_by_its_lift_with_least_motion():
    t = np.array([0.1, 0.25, 0.5, 0.7, 0.9])
    s = EdgeSamples(np.tile([0, 1, 1], (5, 1)), np.stack([1 - t, t, 0 * t], axis=1), np.ones(5), 2)
    w = s.shares()
    np.testing.assert_allclose((1 - t) * w[:, 0] + t * w[:, 1], 1.0)
    # least norm: (wa, wb) parallel to (1 - t, t), nothing at the unused corner
    np.testing.assert_allclose(w[:, 0] * t, w[:, 1] * (1 - t))
    np.testing.assert_array_equal(w[:, 2], 0.0)
    # a face sample: moving the corners by share * d moves the point by d, and no smaller motion does
    rng = np.random.default_rng(0)
    bary = rng.dirichlet([1, 1, 1], size=20)
    f = EdgeSamples(np.tile([0, 1, 2], (20, 1)), bary, np.ones(20), 3)
    d = rng.normal(size=(20, 3))
    moved = np.einsum("sk,sk,sd->sd", bary, f.shares(), d)
    np.testing.assert_allclose(moved, d)
    least = bary / (bary ** 2).sum(1)[:, None]  # minimum-norm solution of bary . u = 1 (Lagrange)
    np.testing.assert_allclose(f.shares(), least)


def test_face_samples_grid_inside_large_faces():
    v = np.array([[0, 0, 0], [0.05, 0, 0], [0, 0.05, 0], [0.08, 0.0, 0.0], [0.0, 0.01, 0], [0.01, 0.0, 0]])
    faces = np.array([[0, 1, 2], [0, 3, 2], [0, 5, 4]])
    s = face_samples(v, faces, spacing=0.02)
    # face 0: longest edge 0.0707 -> n = 4 -> 3 interior points; face 1: 0.0854 -> n = 5 -> 6; face 2: none
    assert len(s) == 9
    assert s.ends[:3].tolist() == [[0, 1, 2]] * 3 and s.ends[3:].tolist() == [[0, 3, 2]] * 6
    np.testing.assert_allclose(s.bary.sum(1), 1.0)
    assert (s.bary > 0).all()
    np.testing.assert_allclose(np.sort(s.bary[:3], axis=0), [[0.25, 0.25, 0.25], [0.25, 0.25, 0.25],
                                                             [0.5, 0.5, 0.5]])
    np.testing.assert_allclose(s.chord[:3], np.sqrt(2) * 0.05 / 4)
    p = s.points(v)
    np.testing.assert_allclose(p[:3, 2], 0.0)
    assert (p[:3, 0] > 0).all() and (p[:3, 1] > 0).all() and (p[:3, 0] + p[:3, 1] < 0.05).all()
    # a vertex gets a table entry per sample it takes part in, as corner k
    ptr, idx = vertex_samples(s)
    assert ptr[1] - ptr[0] == 9 and ptr[2] - ptr[1] == 3 and ptr[4] - ptr[3] == 6
    assert set(idx[ptr[3]:ptr[4]] % 3) == {1}


def test_garment_samples_add_face_samples_on_welded_ids():
    from kisekae.avatar import load_builtin_avatar

    mesh = load_builtin_avatar().part("skirt").mesh
    s = garment_edge_samples(mesh)
    e = edge_samples(mesh.vertices, mesh.edges)
    assert len(s) > len(e)
    np.testing.assert_array_equal(s.ends[:len(e)], e.ends)
    weld = np.asarray(mesh.weld)
    assert np.array_equal(weld[s.ends], s.ends)  # representatives only


def test_lift_analytic_on_a_plane():
    """Ends 3 mm below and above a plane: samples at 1/3 (1 mm under) and 2/3 (1 mm over) ask 2 mm and 0.5 mm of
    the push law; vertex a is asked 2 * 1.2 and 0.5 * 0.6, vertex b 2 * 0.6 and 0.5 * 1.2, each blended with
    weights |ask|^2."""
    body, normals, faces = _plane()
    pts = np.array([[0.0, 0.0, -0.003], [0.05, 0.0, 0.003]])
    s = edge_samples(pts, [[0, 1]], spacing=0.02)
    cand = SurfaceCandidates(np.array([[0, 1], [0, 1]], np.int32), 2)
    table = vertex_samples(s)
    prm = PushParams()
    need = push_amount(np.array([-0.001, 0.001]), prm.margin, prm.stiffness, prm.max_push)
    np.testing.assert_allclose(need, [0.002, 0.0005])
    for fn in (edge_lift_numpy, edge_lift):
        new, moved = fn(pts, s, cand, table, body, normals, faces, prm, chord=False) if fn is edge_lift_numpy \
            else fn(pts, s, cand, table, body, normals, faces, prm)
        def blend(*asks):
            asks = np.array(asks)
            return (asks ** 3).sum() / (asks ** 2).sum()

        np.testing.assert_allclose(new[:, 2] - pts[:, 2], [blend(need[0] * 1.2, need[1] * 0.6),
                                                           blend(need[0] * 0.6, need[1] * 1.2)], atol=1e-12)
        np.testing.assert_allclose(new[:, :2], pts[:, :2], atol=1e-12)
        assert moved.tolist() == [True, True]


def test_deep_samples_ask_less_and_the_deepest_nothing():
    """lift_fade: whole up to LIFT_REACH, half at 1.5 times it, nothing from twice it. On a plane, an edge lying
    flat at a depth whose push is 1.5 LIFT_REACH moves by half of it, one whose push is 3 LIFT_REACH not at all (a
    sample that deep lies in another part of the body: lifting it would carry its vertex across a fold)."""
    np.testing.assert_allclose(lift_fade([0.0, LIFT_REACH, 1.5 * LIFT_REACH, 2 * LIFT_REACH, 0.05]),
                               [1.0, 1.0, 0.5, 0.0, 0.0])
    body, normals, faces = _plane()
    prm = PushParams(stiffness=1.0)  # the push is depth + margin
    cand = SurfaceCandidates(np.array([[0, 1], [0, 1]], np.int32), 2)
    for want, fade in ((1.5 * LIFT_REACH, 0.5), (3.0 * LIFT_REACH, 0.0)):
        depth = want - prm.margin
        pts = np.array([[0.0, 0.0, -depth], [0.05, 0.0, -depth]])
        s = edge_samples(pts, [[0, 1]], spacing=0.02)
        table = vertex_samples(s)
        need = push_amount(np.array([-depth]), prm.margin, prm.stiffness, prm.max_push)[0]
        np.testing.assert_allclose(need, want)
        for new, _moved in (edge_lift_numpy(pts, s, cand, table, body, normals, faces, prm, chord=False),
                            edge_lift(pts, s, cand, table, body, normals, faces, prm)):
            # both samples ask fade * need of both ends, with shares 1.2 and 0.6: the blend of the two asks
            asks = fade * need * np.array([1.2, 0.6])
            expect = (asks ** 3).sum() / (asks ** 2).sum() if fade else 0.0
            np.testing.assert_allclose(new[:, 2] - pts[:, 2], [expect, expect], atol=1e-12)


def test_no_lift_when_the_edge_is_clear():
    body, normals, faces = _plane()
    pts = np.array([[0.0, 0.0, 0.01], [0.05, 0.0, 0.01]])
    s = edge_samples(pts, [[0, 1]], spacing=0.02)
    cand = SurfaceCandidates(np.zeros((len(s), 2), np.int32) + [0, 1], 2)
    new, moved = edge_lift(pts, s, cand, vertex_samples(s), body, normals, faces)
    np.testing.assert_array_equal(new, pts)
    assert not moved.any()


def test_vertex_samples_welded_copies_share_the_list():
    v = np.array([[0, 0, 0], [0.05, 0, 0], [0.05, 0.05, 0], [0.05, 0, 0]], dtype=np.float64)
    s = edge_samples(v, [[0, 1], [1, 2]], spacing=0.02)
    ptr, idx = vertex_samples(s, weld=np.array([0, 1, 2, 1]))
    got = [idx[ptr[i]:ptr[i + 1]].tolist() for i in range(4)]
    assert got[3] == got[1] and len(got[1]) == 4  # two samples as end b of edge 0, two as end a of edge 1
    assert all(c % 3 == 0 for c in got[0]) and all(c % 3 == 1 for c in got[2])


def test_kernel_equals_reference_on_random_garment():
    rng = np.random.default_rng(4)
    body = rng.normal(size=(40, 3)) * 0.1
    normals = rng.normal(size=(40, 3))
    normals /= np.linalg.norm(normals, axis=1)[:, None]
    faces = np.array([rng.choice(40, 3, replace=False) for _ in range(30)])  # no degenerate triangles
    pts = rng.normal(size=(25, 3)) * 0.1
    edges = np.unique(np.sort(rng.integers(0, 25, size=(60, 2)), axis=1), axis=0)
    edges = edges[edges[:, 0] != edges[:, 1]]
    tri = np.array([rng.choice(25, 3, replace=False) for _ in range(10)])
    s = edge_samples(pts, edges, spacing=0.03) + face_samples(pts, tri, spacing=0.03)
    assert (s.bary > 0).all(axis=1).any()  # some face samples
    # distinct candidates per row (the bake repeats only its first, as padding, and the kernel stops there)
    cand = SurfaceCandidates(np.array([rng.choice(30, 6, replace=False) for _ in range(len(s))], np.int32), 30)
    table = vertex_samples(s)
    a = edge_lift_numpy(pts, s, cand, table, body, normals, faces, tightness=0.3, softness=0.4)
    b = edge_lift(pts, s, cand, table, body, normals, faces, tightness=0.3, softness=0.4)
    assert a[1].any()
    np.testing.assert_allclose(a[0], b[0], atol=1e-9)
    np.testing.assert_array_equal(a[1], b[1])


def test_lift_reuses_the_pushes_of_samples_that_did_not_move():
    """A round given the previous round's samples pushes again only those whose points changed, and equals a fresh
    round bit for bit; a sample kept from it keeps its old push even if the body changed (the caller's contract:
    the same frame), which shows that it was not pushed again."""
    from kisekae.fit.edge_lift import _lift, lift_frame
    from kisekae.fit.pushout import PushParams as Params
    from kisekae.fit.surface import _body_frame

    rng = np.random.default_rng(5)
    body = rng.normal(size=(40, 3)) * 0.1
    normals = rng.normal(size=(40, 3))
    normals /= np.linalg.norm(normals, axis=1)[:, None]
    faces = np.array([rng.choice(40, 3, replace=False) for _ in range(30)], dtype=np.int64)
    pts = rng.normal(size=(25, 3)) * 0.1
    edges = np.unique(np.sort(rng.integers(0, 25, size=(60, 2)), axis=1), axis=0)
    edges = edges[edges[:, 0] != edges[:, 1]]
    s = edge_samples(pts, edges, spacing=0.03)
    cand = SurfaceCandidates(np.array([rng.choice(30, 6, replace=False) for _ in range(len(s))], np.int32), 30)
    table = tuple(np.ascontiguousarray(a, dtype=np.int64) for a in vertex_samples(s))
    sframe = lift_frame(s, np.zeros(25), np.zeros(25), 25)
    up = np.array([0.0, 1.0, 0.0])

    def run(p, b, previous=None):
        return _lift(p, s, cand, table, b, normals, _body_frame(b, normals, faces, True), sframe, Params(), up,
                     previous=previous)

    first = run(pts, body)
    moved = pts.copy()
    moved[3] += 0.01  # one vertex moves: only the samples on its edges change
    again, fresh = run(moved, body, previous=first[2]), run(moved, body)
    np.testing.assert_array_equal(again[0], fresh[0])
    np.testing.assert_array_equal(again[2][1], fresh[2][1])
    on_3 = ((s.ends == 3) & (s.bary > 0)).any(axis=1)
    assert on_3.any() and not on_3.all()
    shifted = run(moved, body + 0.05, previous=first[2])  # a different body: only the moved samples see it
    np.testing.assert_array_equal(shifted[2][1][~on_3], first[2][1][~on_3])
    assert not np.array_equal(shifted[2][1][on_3], first[2][1][on_3])


def test_stretched_lengths_widen_the_chord_not_the_count():
    """With ``lengths`` (the longest skinning makes each edge) the samples stay where the rest length puts them and
    each one's chord allowance is the stretched edge's spacing; a length below the rest length changes nothing."""
    v = np.array([[0, 0, 0], [0.05, 0, 0], [0.05, 0.01, 0]], dtype=np.float64)
    rest = edge_samples(v, [[0, 1], [1, 2]], spacing=0.02)
    s = edge_samples(v, [[0, 1], [1, 2]], spacing=0.02, lengths=[0.15, 0.001])
    np.testing.assert_array_equal(s.ends, rest.ends)
    np.testing.assert_array_equal(s.bary, rest.bary)
    np.testing.assert_allclose(s.chord, [0.15 / 3] * 2)  # 2 samples cut the 15 cm edge into thirds: kept, not 2 more
    np.testing.assert_allclose(edge_samples(v, [[0, 1]], spacing=0.02, lengths=[0.01]).chord, [0.05 / 3] * 2)
    for bad in ([0.1], [np.nan, 0.1], [-1.0, 0.1]):
        with pytest.raises(KisekaeError, match="edge sample lengths"):
            edge_samples(v, [[0, 1], [1, 2]], spacing=0.02, lengths=bad)


def test_skinned_edge_lengths_is_the_longest_over_the_poses():
    """Analytic: a part whose pose scales x by s; each edge's result is its rest length times the largest s (or its
    rest length when every pose shrinks it)."""
    from types import SimpleNamespace

    from kisekae.fit.edge_lift import skinned_edge_lengths

    v = np.array([[0, 0, 0], [0.03, 0, 0], [0.03, 0.02, 0]], dtype=np.float64)
    mesh = SimpleNamespace(vertices=v, edges=np.array([[0, 1], [1, 2]]))
    part = SimpleNamespace(mesh=mesh, posed=lambda scale: v * np.array([scale, 1.0, 1.0]))
    np.testing.assert_allclose(skinned_edge_lengths(part, [0.5, 3.0, 2.0]), [0.09, 0.02])
    np.testing.assert_allclose(skinned_edge_lengths(part, [0.5]), [0.03, 0.02])
    with pytest.raises(KisekaeError, match="non-finite"):
        skinned_edge_lengths(part, [np.nan])


def test_garment_samples_take_the_chord_from_the_range_of_motion(avatar):
    """The runtime's samples of the built-in tights: the rest samples, with a chord at least the rest one, wider
    where skinning stretches the edge (the crotch, the hip creases), and equal to the stretched spacing; plus samples
    on the edges too short at rest that skinning stretches past ``STRETCHED_SPACING`` spacings."""
    from kisekae.avatar.poses import named_pose
    from kisekae.fit.edge_lift import SAMPLE_SPACING, STRETCHED_SPACING
    from kisekae.fit.runtime import garment_edge_lengths, garment_samples

    mesh = avatar.part("tights").mesh
    rest, s = garment_edge_samples(mesh), garment_samples(avatar, "tights")
    lengths = garment_edge_lengths(avatar, "tights")
    e = mesh.edges
    rest_len = np.linalg.norm(mesh.vertices[e[:, 0]] - mesh.vertices[e[:, 1]], axis=1)
    added = (rest_len < SAMPLE_SPACING) & (lengths >= STRETCHED_SPACING * SAMPLE_SPACING * 1.001)
    assert 0 < added.sum() < 0.01 * len(e)
    extra = np.array([(s.ends[:, 0] == a) & (s.ends[:, 1] == b) for a, b in e[added]]).any(axis=0)
    assert extra.sum() >= added.sum() and len(s) == len(rest) + extra.sum()
    np.testing.assert_array_equal(s.ends[~extra], rest.ends)
    keep = s.chord[~extra]
    assert np.all(keep >= rest.chord - 1e-12) and np.sum(keep > 1.5 * rest.chord) > 100
    crouch = avatar.part("tights").posed(named_pose(avatar.skeleton, "crouch").skinning_matrices(avatar.skeleton))
    posed = np.linalg.norm(crouch[e[:, 0]] - crouch[e[:, 1]], axis=1)
    assert np.mean(posed <= lengths * 1.01) > 0.999  # the range of motion covers a named pose it was not drawn for


def test_bad_input_is_named():
    with pytest.raises(KisekaeError, match="spacing"):
        edge_samples(np.zeros((2, 3)), [[0, 1]], spacing=-1.0)
    body, normals, faces = _plane()
    pts = np.array([[0.0, 0.0, -0.003], [0.05, 0.0, 0.003]])
    s = edge_samples(pts, [[0, 1]], spacing=0.02)
    with pytest.raises(KisekaeError, match="sample candidates"):
        edge_lift(pts, s, SurfaceCandidates(np.zeros((1, 2), np.int32), 2), vertex_samples(s), body, normals, faces)
    with pytest.raises(KisekaeError, match="garment vertices"):
        s.points(np.zeros((3, 3)))


# ------------------------------------------------------------------------------------ unflip
def test_unflip_turns_a_flipped_face_back_and_leaves_the_rest():
    x = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [1, 1, 0], [3, 0, 0], [4, 0, 0], [3, 1, 0]], dtype=np.float64)
    faces = np.array([[0, 1, 2], [1, 3, 2], [4, 5, 6]])
    p = x.copy()
    p[2] = [1.5, -0.5, 0.1]  # faces 0 and 1 turn over
    p[4:] += [0, 0, 0.2]  # face 2 only translated
    flip = flipped_faces(p, x, faces)
    assert flip.tolist() == [True, True, False]
    table = vertex_faces(faces, len(x))
    for fn in (unflip_numpy, unflip):
        out, moved = fn(p, x, faces, table)
        assert moved.tolist() == [True] * 4 + [False] * 3
        d = p - x
        t0, t1 = d[[0, 1, 2]].mean(0), d[[1, 3, 2]].mean(0)
        np.testing.assert_allclose(out[0], x[0] + t0)
        np.testing.assert_allclose(out[1], x[1] + (t0 + t1) / 2)
        np.testing.assert_allclose(out[3], x[3] + t1)
        np.testing.assert_array_equal(out[4:], p[4:])


def test_unflip_rigid_target_is_not_flipped():
    """A lone flipped face given its mean displacement at all corners faces as when skinned."""
    x = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0]], dtype=np.float64)
    p = np.array([[0, 0, 0.1], [1, 0, 0.1], [0.2, -1.0, 0.3]])
    out, _ = unflip(p, x, [[0, 1, 2]], vertex_faces([[0, 1, 2]], 3))
    assert not flipped_faces(out, x, [[0, 1, 2]]).any()


def test_unflip_ignores_degenerate_skinned_faces_and_equals_reference():
    rng = np.random.default_rng(2)
    x = rng.normal(size=(30, 3))
    x[5] = x[6]  # a zero-length edge
    faces = rng.integers(0, 30, size=(50, 3))
    faces[0] = [5, 6, 7]
    faces[1] = [5, 5, 8]
    p = x + rng.normal(size=x.shape) * 0.5
    assert not flipped_faces(p, x, faces)[[0, 1]].any()
    table = vertex_faces(faces, 30)
    a, b = unflip_numpy(p, x, faces, table), unflip(p, x, faces, table)
    assert a[1].any()
    np.testing.assert_allclose(a[0], b[0], atol=1e-12)
    np.testing.assert_array_equal(a[1], b[1])


def test_unflip_pass_reused_over_a_frame_equals_fresh_passes():
    """The face-first pass, its skinned normals made once, gives the reference's result on every call, and leaves a
    garment with no turned face as it is."""
    from kisekae.fit.unflip import TURN_START, UnflipPass

    rng = np.random.default_rng(5)
    x = rng.normal(size=(40, 3))
    faces = rng.integers(0, 40, size=(70, 3)).astype(np.int64)
    table = vertex_faces(faces, 40)
    run = UnflipPass(x, faces, table, TURN_START)
    out, moved = np.empty_like(x), np.empty(40, dtype=np.bool_)
    for scale in (0.5, 0.05, 0.0):
        p = x + rng.normal(size=x.shape) * scale
        run(p, out, moved)
        ref, ref_moved = unflip_numpy(p, x, faces, table)
        np.testing.assert_allclose(out, ref, atol=1e-12)
        np.testing.assert_array_equal(moved, ref_moved)
    assert not moved.any() and np.array_equal(out, p)  # scale 0: the skinned garment, nothing turned


def test_vertex_faces_weld_and_bad_ids():
    faces = np.array([[0, 1, 2], [3, 4, 2]])
    ptr, idx = vertex_faces(faces, 5, weld=np.array([0, 1, 2, 1, 4]))
    assert idx[ptr[1]:ptr[2]].tolist() == [0, 1] == idx[ptr[3]:ptr[4]].tolist()
    with pytest.raises(KisekaeError, match="garment faces"):
        vertex_faces([[0, 1, 9]], 5)
    with pytest.raises(KisekaeError, match="vertex faces"):
        unflip(np.zeros((5, 3)), np.zeros((5, 3)), faces, (np.zeros(3, np.int64), np.zeros(0, np.int64)))


# ------------------------------------------------------------------------------------ on the avatar
@pytest.fixture(scope="module")
def sit_frame():
    from kisekae.avatar.builtin import load_builtin_avatar
    from kisekae.avatar.poses import named_pose
    from kisekae.geom.normals import vertex_normals

    av = load_builtin_avatar().with_body_contact()
    m = named_pose(av.skeleton, "sit").skinning_matrices(av.skeleton)
    body = av.body.posed(m).astype(np.float64)
    return av, m, body, vertex_normals(body, av.body.mesh.faces).astype(np.float64)


def test_runtime_numpy_equals_numba_with_lift_and_unflip(sit_frame):
    from kisekae.fit.fix import params_for
    from kisekae.fit.runtime import garment_candidates, garment_chord, garment_faces, garment_lift, garment_ring
    from kisekae.fit.surface import surface_runtime

    av, m, body, normals = sit_frame
    x = av.part("tights").posed(m).astype(np.float64)
    args = (x, garment_candidates(av, "tights"), garment_ring(av, "tights"), body, normals, av.body.mesh.faces,
            params_for("tights", None))
    kw = dict(chord=garment_chord(av, "tights"), lift=garment_lift(av, "tights"), faces=garment_faces(av, "tights"))
    a = surface_runtime(*args, **kw)[0]
    b = surface_runtime(*args, numpy=True, **kw)[0]
    plain = surface_runtime(*args, chord=kw["chord"])[0]
    np.testing.assert_allclose(a, b, atol=1e-9)
    assert np.abs(a - plain).max() > 1e-3  # the stages do something here


@pytest.mark.parametrize("pose", ["sit", "leg_raise"])
def test_lift_and_unflip_clear_crossings_and_flips_on_the_avatar(sit_frame, pose):
    """The carried per-frame path: with the edge lift and unflip the tights have fewer edges through the body than
    without (measured with 32 candidates: sit 12 -> 5, leg_raise 6 -> 4), no vertex inside and no flipped face."""
    from kisekae.avatar.poses import named_pose
    from kisekae.fit.runtime import runtime_pose
    from kisekae.qa.check import body_topology
    from kisekae.qa.penetration import BodyQuery
    from kisekae.qa.shape import flips_and_strain

    av = sit_frame[0]
    p = named_pose(av.skeleton, pose)
    m = p.skinning_matrices(av.skeleton)
    mesh = av.part("tights").mesh
    x = av.part("tights").posed(m)
    with_stages = runtime_pose(av, p, ["tights"], edge_lift=True, finish_step=None)["tights"][0]
    without = runtime_pose(av, p, ["tights"], edge_lift=False)["tights"][0]
    q = BodyQuery(body_topology(av), av.body.posed(m))
    crossings = [int(q.crossing_edges(y, mesh.edges).sum()) for y in (with_stages, without)]
    assert crossings[0] < crossings[1], crossings
    flipped = flips_and_strain(mesh.vertices, x, with_stages, mesh.faces, mesh.edges)[0]
    assert not flipped.any()
    assert not q.inside(with_stages).any()


def test_check_cli_edge_lift_flag(tmp_path):
    """kisekae check --runtime runs the edge lift and unflip by default, capped at FINISH_STEP, and says so in its
    records; --no-edge-lift turns them off, --finish-step none lifts the cap."""
    import json

    from kisekae.cli import main
    from kisekae.fit.surface import FINISH_STEP

    out = {}
    for k, flag in enumerate((["--no-edge-lift"], ["--finish-step", "none"], [])):
        path = tmp_path / f"r{k}.json"
        # on the joint planes alone (the correctives leave fewer crossings to clear)
        assert main(["check", "--pose", "sit", "--garment", "tights", "--runtime", "--correctives", "off", *flag,
                     "--json", str(path)]) == 0
        data = json.loads(path.read_text())
        recs = data["records"] if isinstance(data, dict) else data
        out[k] = [r for r in recs if r.get("stage") == "runtime"][0]
    assert out[0]["edge_lift"] is False and out[1]["edge_lift"] is True and out[2]["edge_lift"] is True
    assert out[1]["finish_step"] is None and out[2]["finish_step"] == FINISH_STEP
    assert out[1]["edge_crossings"] < out[0]["edge_crossings"]  # measured 12 -> 5
    assert out[2]["edge_crossings"] < out[0]["edge_crossings"]
    assert out[1]["flipped_faces"] == 0


def test_an_edge_short_at_rest_but_stretched_far_gets_samples():
    """An edge without samples at rest (1.9 cm < 2 cm) gets ``ceil(longest / (STRETCHED_SPACING spacing)) - 1`` at
    ``t = k / (n + 1)`` once skinning stretches it far enough, each with the stretched spacing as its chord; one
    stretched less than that keeps none."""
    from kisekae.fit.edge_lift import STRETCHED_SPACING

    v = np.array([[0, 0, 0], [0.019, 0, 0], [0.019, 0.019, 0]], dtype=np.float64)
    reach = STRETCHED_SPACING * 0.02
    long_ = 2.5 * reach  # 2 samples
    s = edge_samples(v, [[0, 1], [1, 2]], spacing=0.02, lengths=[long_, 0.99 * reach])
    np.testing.assert_array_equal(s.ends, [[0, 1, 1], [0, 1, 1]])
    np.testing.assert_allclose(s.bary[:, 1], [1 / 3, 2 / 3])
    np.testing.assert_allclose(s.chord, [long_ / 3] * 2)
    assert len(edge_samples(v, [[0, 1], [1, 2]], spacing=0.02)) == 0


def test_corner_candidates_fill_a_samples_free_slots_in_turn():
    """A sample keeps its own candidates in order, then takes its corners' in turn (the heavier corner first), each
    triangle once; a full row is kept; a corner of weight 0 gives nothing; the row is padded with its first."""
    from kisekae.fit.edge_lift import EdgeSamples, with_corner_candidates
    from kisekae.fit.surface import SurfaceCandidates

    samples = EdgeSamples(np.array([[0, 1, 1], [0, 1, 1], [0, 1, 2]]),
                          np.array([[0.25, 0.75, 0.0], [0.5, 0.5, 0.0], [0.2, 0.3, 0.5]]), np.full(3, 0.01), 3)
    own = SurfaceCandidates(np.array([[7, 7, 7, 7, 7, 7], [9, 8, 7, 6, 5, 4], [7, 1, 7, 7, 7, 7]], np.int32), 20)
    corner = SurfaceCandidates(np.array([[1, 2, 2, 2, 2, 2], [3, 4, 1, 3, 3, 3], [11, 11, 11, 11, 11, 11]], np.int32),
                               20)
    got = with_corner_candidates(own, corner, samples).triangles
    np.testing.assert_array_equal(got[0], [7, 3, 1, 4, 2, 7])  # corner 1 (0.75) first; corner 2 has weight 0
    np.testing.assert_array_equal(got[1], [9, 8, 7, 6, 5, 4])  # full: unchanged
    np.testing.assert_array_equal(got[2], [7, 1, 11, 3, 4, 2])  # corners by weight 2, 1, 0: 11 3 1 | 11 4 2
    with pytest.raises(KisekaeError, match="sample candidates"):
        with_corner_candidates(own, SurfaceCandidates(corner.triangles[:2], 20), samples)
