"""The local repair of the last edges through the body (kisekae.fit.crossing_repair) and its place in the fix."""

import numpy as np
import pytest

from conftest import icosphere

from kisekae.errors import KisekaeError
from kisekae.fit.crossing_repair import repair_crossings
from kisekae.qa.penetration import BodyQuery, BodyTopology

MARGIN = 0.002


@pytest.fixture(scope="module")
def ball():
    v, f = icosphere(3, radius=0.1)
    return BodyQuery(BodyTopology.from_mesh(v, f), v)


def _dip(ball):
    """Two vertices outside a 10 cm ball whose edge cuts through its top (about 3 mm deep), a third far away."""
    p = np.array([[-0.045, 0.0965, 0.0], [0.045, 0.0965, 0.0], [0.5, 0.0, 0.0]])
    e = np.array([[0, 1]])
    assert not ball.inside(p).any() and ball.crossing_edges(p, e).all()
    return p, e


def test_a_dipping_edge_is_lifted_out_by_its_depth_and_the_margin(ball):
    p, e = _dip(ball)
    t = np.linspace(0.0, 1.0, 201)[:, None]
    depth = ball.distance(p[0] * (1 - t) + p[1] * t)[ball.inside(p[0] * (1 - t) + p[1] * t)].max()
    out, info = repair_crossings(ball, p, e, MARGIN)
    assert info["clean"] and info["rounds"] >= 1
    assert not ball.crossing_edges(out, e).any() and not ball.inside(out).any()
    line = out[0] * (1 - t) + out[1] * t
    assert not ball.inside(line).any()  # the whole edge, not only the sampled points
    move = np.linalg.norm(out - p, axis=1)
    assert move[2] == 0.0 and info["moved"].tolist() == [True, True, False]  # the far vertex is left alone
    # each end moves at least the depth (the middle of the edge had to come out), at most depth + margin a round times
    # the largest least-motion share of an end, max (1 - t) / ((1 - t)^2 + t^2) = 1.207
    assert depth > 0.002 and depth <= move[:2].min() and move.max() < info["rounds"] * 1.21 * (depth + MARGIN)
    # straight up, along the top faces' normals (the edge's midpoint is over the pole)
    assert np.all((out - p)[:2, 1] > 0.99 * move[:2])


def test_a_vertex_inside_is_pushed_out_and_a_clean_garment_is_left_as_it_is(ball):
    p = np.array([[0.0, 0.095, 0.0], [0.0, 0.2, 0.0]])
    e = np.array([[0, 1]])
    assert ball.inside(p).tolist() == [True, False]
    out, info = repair_crossings(ball, p, e, MARGIN)
    assert info["clean"] and not ball.inside(out).any() and not ball.crossing_edges(out, e).any()
    assert ball.distance(out[:1])[0] > 0.25 * MARGIN  # its own ask blends with its edge's shallower samples' asks
    again, info = repair_crossings(ball, out, e, MARGIN)
    assert info["rounds"] == 0 and info["clean"] and not info["moved"].any() and np.array_equal(again, out)


def test_seam_copies_move_with_their_representative_and_the_ring_spreads_the_lift(ball):
    p, e = _dip(ball)
    p = np.vstack([p, p[1], [[0.06, 0.09, 0.0]]])  # 3: a seam copy of 1; 4: a neighbour of 1 beyond it
    e = np.array([[0, 1], [1, 4]])
    out, info = repair_crossings(ball, p, e, MARGIN, weld=np.array([0, 1, 2, 1, 4]))
    assert info["clean"] and np.array_equal(out[3], out[1])
    assert 0.0 < np.linalg.norm(out[4] - p[4]) < np.linalg.norm(out[1] - p[1])  # spread, fading


def test_bad_input_is_refused(ball):
    p, e = _dip(ball)
    for points, edges, margin, weld, message in (
            (p[:, :2], e, MARGIN, None, "finite"), (np.where(p == p[0, 0], np.nan, p), e, MARGIN, None, "finite"),
            (p, e + 5, MARGIN, None, "outside"), (p, e, MARGIN, np.array([0, 1]), "outside"),
            (p, e, 0.0, None, "margin"), (p, e, float("nan"), None, "margin")):
        with pytest.raises(KisekaeError, match=f"crossing repair: .*{message}"):
            repair_crossings(ball, points, edges, margin, weld=weld)
    for kw in ({"spacing": 0.0}, {"slack": -0.1}, {"slack": float("inf")}, {"rounds": -1}, {"rounds": 2.5},
               {"rounds": True}):
        with pytest.raises(KisekaeError, match="crossing repair: "):
            repair_crossings(ball, p, e, MARGIN, **kw)


def test_the_fix_keeps_the_per_frame_shape_where_the_repair_clears_the_crouch(avatar):
    """The crouch's skirt: the per-frame result leaves an edge through the body; the fix lifts it locally instead of
    running the shape-preserving and exact solvers, so the cloth keeps the per-frame shape. The tights' per-frame
    result is clean there (the samples of their stretched crotch edges): the fix keeps it as it is."""
    from kisekae.avatar.contact import GAP, apply_contact
    from kisekae.avatar.poses import named_pose
    from kisekae.fit.fix import fix_pose
    from kisekae.fit.runtime import runtime_pose
    from kisekae.qa.check import body_topology
    from kisekae.qa.shape import shape_stats

    av = apply_contact(avatar, GAP)
    pose = named_pose(av.skeleton, "crouch")
    m = pose.skinning_matrices(av.skeleton)
    query = BodyQuery(body_topology(av), av.body.posed(m))
    fixed = fix_pose(av, pose, ["tights", "skirt"])
    start = runtime_pose(av, pose, ["tights", "skirt"])
    assert fixed["tights"].metrics["fix_method"] == "runtime"
    np.testing.assert_array_equal(fixed["tights"].positions, start["tights"][0])
    for name in ("tights", "skirt"):
        mesh, result = av.part(name).mesh, fixed[name]
        assert result.metrics["fix_method"] == ("runtime" if name == "tights" else "runtime+repair")
        y = result.positions.astype(np.float64)
        assert not query.inside(y).any() and not query.crossing_edges(y, mesh.edges).any()
        x = av.part(name).posed(m).astype(np.float64)
        s0, s1 = (shape_stats(mesh.vertices, x, q, mesh.faces, mesh.edges, mesh.weld)
                  for q in (start[name][0].astype(np.float64), y))
        assert s1["flipped_faces"] == s0["flipped_faces"] == 0
        assert s1["strain_p99"] <= s0["strain_p99"] + 0.01 and s1["strain_max"] <= s0["strain_max"] + 0.1
        assert np.linalg.norm(y - start[name][0], axis=1).max() < 0.005  # millimetres, where it crossed


def test_the_repair_is_the_same_anywhere_in_the_world():
    """The ball and the garment moved 10 m: the same lifts, to 1e-6 m."""
    v, f = icosphere(3, radius=0.1)
    shift = np.array([10.0, -3.0, 7.0])
    results = []
    for offset in (np.zeros(3), shift):
        ball = BodyQuery(BodyTopology.from_mesh(v + offset, f), v + offset)
        # off the ball's mirror planes: where two faces are exactly as near, the nearest one is a coin toss
        p = np.array([[-0.041, 0.0962, 0.013], [0.047, 0.0958, 0.021], [0.011, 0.095, 0.03], [0.0, 0.2, 0.03]]) + offset
        out, info = repair_crossings(ball, p, np.array([[0, 1], [2, 3]]), MARGIN)
        assert info["clean"]
        results.append(out - offset)
    assert np.abs(results[0] - results[1]).max() < 1e-6
