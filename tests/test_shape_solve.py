"""The shape-preserving fix (kisekae.fit.shape_solve): analytic cases and a direct KKT reference."""

import numpy as np
import pytest
import scipy.sparse as sp

from conftest import icosphere
from kisekae.avatar.mesh import Mesh
from kisekae.avatar.poses import named_pose
from kisekae.errors import KisekaeError
from kisekae.fit import PushParams
from kisekae.fit.fix import fix_pose
from kisekae.fit.shape_solve import ShapeSolve, shape_operator, solve_shape_preserving
from kisekae.qa import BodyQuery, BodyTopology
from kisekae.qa.shape import shape_stats


def sheet(n=21, size=1.0, height=0.0, shift=(0.0, 0.0, 0.0)):
    """An n x n grid of triangles in the plane y = height, centred on the origin (metres)."""
    u = np.linspace(-size / 2, size / 2, n)
    x, z = np.meshgrid(u, u, indexing="ij")
    v = np.stack([x.ravel(), np.full(x.size, height), z.ravel()], axis=1) + np.asarray(shift)
    idx = np.arange(n * n).reshape(n, n)
    a, b, c, d = idx[:-1, :-1].ravel(), idx[1:, :-1].ravel(), idx[1:, 1:].ravel(), idx[:-1, 1:].ravel()
    faces = np.concatenate([np.stack([a, c, b], 1), np.stack([a, d, c], 1)])
    return Mesh(v.astype(np.float32), faces.astype(np.int32))


def ball(radius=0.2, center=(0.0, 0.0, 0.0)):
    v, f = icosphere(4, radius, center)
    return BodyQuery(BodyTopology.from_mesh(v, f), v)


def test_operator_energy_of_a_translation_is_the_screening():
    """A rigid translation costs no membrane or bending energy: d^T M d = sum(2 A_i / falloff^2) |c|^2."""
    m = sheet(11, 1.0)
    falloff = 0.05
    reps, index, M = shape_operator(m.vertices, m.faces, m.edges, falloff=falloff)
    c = np.array([0.01, -0.02, 0.03])
    d = np.tile(c, (len(reps), 1))
    energy = np.einsum("ij,ij->", d, M @ d)
    area = 1.0  # the sheet is 1 m x 1 m
    np.testing.assert_allclose(energy, 2.0 * area / falloff**2 * c @ c, rtol=1e-9)
    assert abs(M - M.T).max() < 1e-12
    assert np.linalg.eigvalsh(M.toarray()).min() > 0


def test_bending_and_falloff_are_validated():
    m = sheet(5, 1.0)
    with pytest.raises(KisekaeError, match="falloff"):
        shape_operator(m.vertices, m.faces, m.edges, falloff=0.0)


def test_constrained_solve_matches_direct_kkt():
    """The projected conjugate gradients give the minimiser of d^T M d with n_i . d_i = b_i (direct KKT solve)."""
    m = sheet(15, 0.6)
    q = ball(0.1, (0.0, -0.5, 0.0))  # far away: only the solver's linear algebra is exercised
    s = ShapeSolve(q, m.vertices.astype(np.float64), m, PushParams())
    rng = np.random.default_rng(3)
    active = np.zeros(s.r, bool)
    active[rng.choice(s.r, 12, replace=False)] = True
    normal = rng.normal(size=(s.r, 3))
    normal /= np.linalg.norm(normal, axis=1, keepdims=True)
    target = s.x0 + rng.normal(scale=0.01, size=(s.r, 3))
    d = s.solve(active, target, normal)
    # Reference: [K C^T; C 0] [d; lam] = [0; b] with K = kron(M, I3) in interleaved order.
    ids = np.flatnonzero(active)
    K = sp.kron(s.M, sp.eye(3)).tocsc()
    C = sp.lil_matrix((len(ids), 3 * s.r))
    for row, i in enumerate(ids):
        C[row, 3 * i:3 * i + 3] = normal[i]
    b = np.einsum("ij,ij->i", normal[ids], target[ids] - s.x0[ids])
    kkt = sp.bmat([[K, C.T], [C, None]]).tocsc()
    ref = sp.linalg.spsolve(kkt, np.r_[np.zeros(3 * s.r), b])[:3 * s.r].reshape(-1, 3)
    np.testing.assert_allclose(d, ref, atol=1e-8)


@pytest.fixture(scope="module")
def draped():
    """A sheet 8 cm above a ball's centre, the ball poking 2 cm through it."""
    m = sheet(41, 0.8)
    q = ball(0.1, (0.013, -0.08, 0.007))  # off the grid's symmetry: no ties between closest faces
    skinned = m.vertices.astype(np.float64)
    params = PushParams(margin=0.004, stiffness=0.5, max_push=0.2)
    up = np.tile([0.0, 1.0, 0.0], (len(skinned), 1))
    y, info = solve_shape_preserving(q, skinned, m, params, directions=up)
    return m, q, skinned, params, up, y, info


def test_sheet_over_a_ball_leaves_it_as_a_smooth_sheet(draped):
    m, q, skinned, params, _up, y, info = draped
    assert not q.inside(y).any()
    assert not q.crossing_edges(y, m.edges).any()
    gap = params.stiffness * params.margin
    assert q.distance(y).min() >= gap - 1e-4
    stats = shape_stats(m.vertices, skinned, y, m.faces, m.edges)
    assert stats["flipped_faces"] == 0 and stats["folded_pairs"] == 0 and stats["zero_area_faces"] == 0
    assert stats["strain_p99"] < 0.1 and stats["strain_max"] < 0.3
    # The cap of the ball lifts the sheet by about its 2 cm, and the corners stay where they were.
    push = np.linalg.norm(y - skinned, axis=1)
    assert 0.02 <= push.max() <= 0.02 + gap + 0.005
    corners = [0, 40, 41 * 40, 41 * 41 - 1]
    assert push[corners].max() < 1e-3
    assert not info["forced"].any()


def test_sheet_solve_is_the_same_anywhere_in_the_world(draped):
    m, _q, skinned, params, up, y, _info = draped
    shift = np.array([10.0, -3.0, 7.0])
    m2 = Mesh((m.vertices.astype(np.float64) + shift).astype(np.float32), m.faces)
    q2 = ball(0.1, (shift[0] + 0.013, shift[1] - 0.08, shift[2] + 0.007))
    y2, _ = solve_shape_preserving(q2, skinned + shift, m2, params, directions=up)
    # float32 storage of the shifted rest mesh only changes the operator's areas at 1e-7 relative.
    np.testing.assert_allclose(y2 - shift, y, atol=1e-6)


def test_bad_inputs():
    m = sheet(5, 0.2)
    q = ball()
    with pytest.raises(KisekaeError, match="vertices"):
        solve_shape_preserving(q, np.zeros((3, 3)), m)
    with pytest.raises(KisekaeError):
        solve_shape_preserving(q, np.full((25, 3), np.nan), m)
    with pytest.raises(KisekaeError, match="directions"):
        solve_shape_preserving(q, m.vertices, m, directions=np.ones((3, 3)))


def test_fix_pose_shape_method_on_the_contact_body(avatar):
    av = avatar.with_body_contact()
    pose = named_pose(av.skeleton, "leg_raise")
    out = fix_pose(av, pose, ["skirt"], method="shape")["skirt"]
    m = pose.skinning_matrices(av.skeleton)
    q = BodyQuery(BodyTopology.from_mesh(av.body.mesh.vertices, av.body.mesh.faces), av.body.posed(m))
    assert not q.inside(out.positions).any()
    assert out.metrics["max_push_m"] <= 0.1 + 1e-6
    with pytest.raises(KisekaeError, match="fix method"):
        fix_pose(av, pose, ["skirt"], method="cloth")


def test_layered_shape_fix_keeps_the_skirt_over_the_tights(avatar):
    """Layers: the skirt stays outside the fixed tights with the same shape terms (contact body, leg_raise)."""
    av = avatar.with_body_contact()
    pose = named_pose(av.skeleton, "leg_raise")
    out = fix_pose(av, pose, ["tights", "skirt"], layered=True, method="shape")
    skirt = out["skirt"].metrics
    assert skirt["layer_crossings"] == 0 and skirt["under_lower_layers"] == 0
    assert out["tights"].metrics["unresolved"] == 0 and skirt["unresolved"] == 0


def test_auto_never_picks_more_defects_than_exact(avatar):
    """Where the shape solve leaves clipping (plain skinning, leg_raise tights), auto's choice has no more
    (visible defects, largest strain, inside) than the exact solver's own result, and nothing inside."""
    from kisekae.fit.fix import _defects
    from kisekae.qa.check import body_topology

    pose = named_pose(avatar.skeleton, "leg_raise")
    m = pose.skinning_matrices(avatar.skeleton)
    q = BodyQuery(body_topology(avatar), avatar.body.posed(m))
    auto = fix_pose(avatar, pose, ["tights"], query=q)["tights"]
    exact = fix_pose(avatar, pose, ["tights"], query=q, method="exact")["tights"]
    skinned = avatar.part("tights").posed(m)
    assert auto.metrics["fix_method"] in ("exact", "shape+exact", "shape") or \
        auto.metrics["fix_method"].startswith(("runtime", "path"))
    ours, theirs = (_defects(q, avatar.part("tights"), skinned, r.positions) for r in (auto, exact))
    assert ours <= theirs and ours[2] == 0
