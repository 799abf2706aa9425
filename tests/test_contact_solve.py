"""The offline self-contact solve (kisekae.avatar.contact_solve): kernels against NumPy references, analytic
two-sphere cases, invariance, and the avatar path."""

import numpy as np
import pytest

from conftest import icosphere
from kisekae.avatar.contact_solve import (ContactSolveParams, ContactSolveTopology, body_contact_solve, detect_pairs,
                                          detect_pairs_numpy, pose_path, project_pairs, project_pairs_numpy,
                                          signed_clearance, smooth_correction, smooth_correction_numpy,
                                          solve_contact_path)
from kisekae.errors import KisekaeError
from kisekae.geom.bvh import build_bvh, refit
from kisekae.geom.winding import winding_number

R = 0.1


def two_spheres(dx=0.3, subdiv=2):
    a, fa = icosphere(subdiv, R)
    b, fb = icosphere(subdiv, R, (dx, 0.0, 0.0))
    return np.concatenate([a, b]), np.concatenate([fa, fb + len(a)]).astype(np.int64), len(a)


def sphere_path(rest, n_a, end_dx, steps):
    """B slides from its rest place towards A until its centre is ``end_dx`` from A's."""
    start = rest[n_a:, 0].mean()
    path = []
    for k in range(1, steps + 1):
        x = rest.copy()
        x[n_a:, 0] += (end_dx - start) * k / steps
        path.append(x)
    return path


def inside_other(y, faces, n_a):
    """(vertices of B inside A, vertices of A inside B) by winding number."""
    fa, fb = faces[faces[:, 0] < n_a], faces[faces[:, 0] >= n_a]
    out = []
    for pts, tri in ((y[n_a:], fa), (y[:n_a], fb)):
        bvh = build_bvh(y, tri)
        out.append(int((winding_number(pts, bvh, refit(bvh, y, tri)) > 0.5).sum()))
    return tuple(out)


def test_pairs_match_brute_force():
    rest, f, n_a = two_spheres()
    topo = ContactSolveTopology(rest, f)
    y = sphere_path(rest, n_a, 0.195, 1)[0]  # 5 mm of overlap
    pv, pt = detect_pairs(y, rest, topo.tri, 0.012, 0.02)
    qv, qt = detect_pairs_numpy(y, rest, topo.tri, 0.012, 0.02)
    assert len(pv) > 20
    np.testing.assert_array_equal(pv, qv)
    np.testing.assert_array_equal(pt, qt)
    # a vertex never pairs with its own sphere (everything on it is within 2 cm or beyond reach)
    assert np.all((pv < n_a) != (topo.tri[pt, 0] < n_a))


def test_projection_and_smoothing_match_numpy():
    rest, f, n_a = two_spheres()
    topo = ContactSolveTopology(rest, f)
    y = sphere_path(rest, n_a, 0.19, 1)[0]  # 1 cm overlap
    pv, pt = detect_pairs_numpy(y, rest, topo.tri, 0.03, 0.02)
    side = np.ones(len(pv))
    need = np.full(len(pv), 0.004)
    a, ha = project_pairs(y, pv, pt, topo.tri, side, need)
    b, hb = project_pairs_numpy(y, pv, pt, topo.tri, side, need)
    assert ha == hb > 0
    np.testing.assert_allclose(a, b, atol=1e-12)
    c = np.random.default_rng(1).normal(size=y.shape) * 1e-3
    np.testing.assert_allclose(smooth_correction(c, topo.ring_ptr, topo.ring_idx, 3, 0.5),
                               smooth_correction_numpy(c, topo.ring_ptr, topo.ring_idx, 3, 0.5), atol=1e-15)


def test_one_projection_round_moves_a_pair_apart_by_its_shortfall():
    # one triangle and a vertex 1 mm in front of it, need 4 mm: the vertex moves +1.5 mm, each corner -1.5 mm times
    # its barycentric weight (0.6, 0.2, 0.2), so the closest point moves 1.5 mm times the sum of their squares
    y = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.2, 0.2, 0.001]])
    tri = np.array([[0, 1, 2]])
    new, hits = project_pairs_numpy(y, np.array([3]), np.array([0]), tri, np.array([1.0]), np.array([0.004]))
    assert hits == 1
    s = signed_clearance(new, np.array([3]), np.array([0]), tri)[0][0]
    np.testing.assert_allclose(new[3, 2], 0.001 + 0.0015, atol=1e-12)
    np.testing.assert_allclose(new[:3, 2], -0.0015 * np.array([0.6, 0.2, 0.2]), atol=1e-12)
    np.testing.assert_allclose(s, 0.001 + 0.0015 + 0.0015 * 0.44, atol=1e-8)  # the corners tilt it a little


@pytest.mark.parametrize("numpy_path", [False, True])
def test_spheres_pushed_together_stay_apart(numpy_path):
    rest, f, n_a = two_spheres(subdiv=1 if numpy_path else 2)
    topo = ContactSolveTopology(rest, f)
    path = sphere_path(rest, n_a, 0.17, 10)  # 3 cm of overlap at the end
    assert min(inside_other(path[-1], f, n_a)) > 0  # plain: each sphere inside the other
    y = solve_contact_path(topo, path, ContactSolveParams(), numpy=numpy_path)
    assert inside_other(y, f, n_a) == (0, 0)
    # they meet at a contact surface with the gap between them, not farther apart
    gap = y[n_a:, 0].min() - y[:n_a, 0].max()
    assert 0.0 < gap < 0.006
    # far from the contact (the far poles) the screened membrane has let the push fade to a few percent
    move = np.linalg.norm(y - path[-1], axis=1)
    far_a, far_b = np.argmin(rest[:n_a, 0]), n_a + np.argmax(rest[n_a:, 0])
    assert move.max() > 0.01
    assert move[[far_a, far_b]].max() < 0.05 * move.max()


def test_no_contact_leaves_skinning_unchanged_and_is_translation_invariant():
    rest, f, n_a = two_spheres()
    topo = ContactSolveTopology(rest, f)
    far = sphere_path(rest, n_a, 0.25, 5)  # never closer than 5 cm
    np.testing.assert_array_equal(solve_contact_path(topo, far), far[-1])
    path = sphere_path(rest, n_a, 0.175, 8)
    y = solve_contact_path(topo, path)
    shift = np.array([10.0, -3.0, 7.0])
    topo2 = ContactSolveTopology(rest + shift, f)
    y2 = solve_contact_path(topo2, [p + shift for p in path])
    np.testing.assert_allclose(y2 - shift, y, atol=1e-6)


def test_weld_moves_seam_duplicates_together():
    rest, f, n_a = two_spheres()
    # duplicate the first vertex of B as a seam copy used by one face
    dup = np.concatenate([rest, rest[n_a:n_a + 1]])
    f2 = f.copy()
    k = np.nonzero((f2 == n_a).any(axis=1))[0][0]
    f2[k][f2[k] == n_a] = len(rest)
    weld = np.concatenate([np.arange(len(rest)), [n_a]])
    topo = ContactSolveTopology(dup, f2, weld)
    path = [np.concatenate([p, p[n_a:n_a + 1]]) for p in sphere_path(rest, n_a, 0.17, 6)]
    y = solve_contact_path(topo, path)
    np.testing.assert_array_equal(y[-1], y[n_a])


def test_bad_settings_and_inputs_are_named():
    rest, f, n_a = two_spheres(subdiv=1)
    topo = ContactSolveTopology(rest, f)
    for bad, word in (({"steps": 0}, "steps"), ({"gap": np.nan}, "gap"), ({"detect": 0.003}, "detect"),
                      ({"smooth": 2.0}, "smooth"), ({"smooth_passes": -1}, "smooth_passes")):
        with pytest.raises(KisekaeError, match=word):
            solve_contact_path(topo, [rest], ContactSolveParams(**bad))
    with pytest.raises(KisekaeError, match="step 1"):
        solve_contact_path(topo, [rest[:-1]])
    nan = rest.copy()
    nan[3, 1] = np.nan
    with pytest.raises(KisekaeError):
        solve_contact_path(topo, [nan])
    with pytest.raises(KisekaeError, match="orientation"):
        ContactSolveTopology(rest, f, orientation=0.5)


def test_pose_path_ends_at_the_pose_and_starts_near_rest(avatar):
    from kisekae.avatar.poses import named_pose

    m = named_pose(avatar.skeleton, "crouch").skinning_matrices(avatar.skeleton)
    path = pose_path(avatar.skeleton, m, 10)
    assert len(path) == 10
    np.testing.assert_array_equal(path[-1], m)
    # the read-back pose reproduces the matrices: a one-step path of a 99.9 % slerp is close to the pose
    near = pose_path(avatar.skeleton, m, 1000)[-2]
    assert np.abs(near - m).max() < 0.01
    first = path[0]
    assert np.abs(first[:, :3, :3] - np.eye(3)).max() < 0.5  # a tenth of the way


def test_avatar_rest_pose_is_unchanged(avatar):
    from kisekae.avatar.pose import Pose

    solve = body_contact_solve(avatar, ContactSolveParams(steps=2, iters=2))
    m = Pose.rest(avatar.skeleton).skinning_matrices(avatar.skeleton)
    x = avatar.body.skinned(m).astype(np.float64)
    np.testing.assert_allclose(solve(x, m), x, atol=1e-9)
