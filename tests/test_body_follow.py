"""The garment follows the body's displacement beyond skinning (kisekae.fit.body_follow): the Numba kernel against
its NumPy reference, analytic cases (outward along the normal is taken, inward and sideways are not, the share fades
with the rest clearance), refusals, and the per-frame path with and without it on the built-in avatar."""

import numpy as np
import pytest

from kisekae.errors import KisekaeError
from kisekae.fit import body_follow as F


def _patch(m=30, n=50, seed=0):
    rng = np.random.default_rng(seed)
    body = rng.normal(0, 0.1, (m, 3))
    skinned = body + rng.normal(0, 0.01, (m, 3))
    normals = rng.normal(0, 1, (m, 3))
    normals /= np.linalg.norm(normals, axis=1, keepdims=True)
    corners = rng.integers(0, m, (n, 3))
    bary = rng.random((n, 3))
    bary /= bary.sum(axis=1, keepdims=True)
    weights = F.follow_weights(rng.uniform(-0.08, 0.08, n))
    return corners, bary, weights, body, skinned, normals


def test_kernel_equals_reference():
    args = _patch()
    got = F.body_follow(*args)
    want = F.body_follow_numpy(*args)
    np.testing.assert_allclose(got, want, atol=1e-15)
    assert np.abs(want).max() > 1e-4  # not trivially zero


def test_outward_is_followed_inward_and_sideways_are_not():
    # a flat patch facing +z, every corner displaced: the garment vertex takes exactly the outward part
    body = np.zeros((3, 3))
    normals = np.tile([0.0, 0.0, 1.0], (3, 1))
    corners = np.array([[0, 1, 2]])
    bary = np.array([[0.2, 0.3, 0.5]])
    one = np.ones(1)
    for d, want in [((0.0, 0.0, 0.01), (0.0, 0.0, 0.01)),      # straight out: all of it
                    ((0.0, 0.0, -0.01), (0.0, 0.0, 0.0)),      # in: nothing
                    ((0.02, -0.01, 0.0), (0.0, 0.0, 0.0)),     # sideways: nothing
                    ((0.02, 0.0, 0.005), (0.0, 0.0, 0.005))]:  # oblique: its normal part
        skinned = body - np.array(d)  # body = skinned + d
        for fn in (F.body_follow, F.body_follow_numpy):
            np.testing.assert_allclose(fn(corners, bary, one, body, skinned, normals)[0], want, atol=1e-15)
    # corners displaced differently: the barycentric blend of their outward parts
    skinned = body - np.array([[0, 0, 0.01], [0, 0, -0.02], [0, 0, 0.03]])
    np.testing.assert_allclose(F.body_follow(corners, bary, one, body, skinned, normals)[0],
                               [0, 0, 0.2 * 0.01 + 0.5 * 0.03], atol=1e-15)


def test_share_fades_with_rest_clearance():
    c = np.array([0.0, -0.01, 0.02, 0.03, -0.04, 0.05, 0.06, 0.2])
    want = np.clip((F.FOLLOW_FAR - np.abs(c)) / (F.FOLLOW_FAR - F.FOLLOW_NEAR), 0, 1)
    np.testing.assert_allclose(F.follow_weights(c), want)
    assert F.follow_weights(c)[0] == 1.0 and F.follow_weights(c)[-1] == 0.0
    np.testing.assert_allclose(F.follow_weights([0.015], near=0.01, far=0.02), [0.5])


@pytest.mark.parametrize("case, match", [
    ("nan body", "NaN"), ("corner", "corners must lie"), ("shape", "must be the same"), ("bary", "do not agree")])
def test_bad_input_is_named(case, match):
    corners, bary, weights, body, skinned, normals = _patch()
    if case == "nan body":
        body[3, 1] = np.nan
    elif case == "corner":
        corners[0, 0] = len(body)
    elif case == "shape":
        normals = normals[:-1]
    else:
        bary = bary[:, :2]
    for fn in (F.body_follow, F.body_follow_numpy):
        with pytest.raises(KisekaeError, match=match):
            fn(corners, bary, weights, body, skinned, normals)
    with pytest.raises(KisekaeError, match="near < far"):
        F.follow_weights([0.0], near=0.05, far=0.05)
    with pytest.raises(KisekaeError, match="finite"):
        F.follow_weights([np.nan])


def test_runtime_starts_from_the_followed_garment(tmp_path, monkeypatch):
    """On the contact body the follow moves where the per-frame path starts, and only there: a plain body has
    nothing to follow (the same result either way), and the result records say which it was."""
    monkeypatch.setenv("KISEKAE_CACHE_DIR", str(tmp_path))
    from kisekae.avatar.builtin import load_builtin_avatar
    from kisekae.avatar.poses import named_pose
    from kisekae.fit.runtime import garment_follow, runtime_pose

    plain = load_builtin_avatar()
    pose = named_pose(plain.skeleton, "leg_raise")
    a = runtime_pose(plain, pose, ["skirt"], body_follow=False)["skirt"]
    b = runtime_pose(plain, pose, ["skirt"], body_follow=True)["skirt"]
    assert np.array_equal(a[0], b[0]) and b[1]["body_follow"] is False
    av = plain.with_body_contact()
    m = pose.skinning_matrices(av.skeleton)
    corners, bary, shares = garment_follow(av, "skirt")
    body = av.body.posed(m).astype(np.float64)
    from kisekae.geom.normals import vertex_normals
    d = F.body_follow(corners, bary, shares, body, av.body.skinned(m), vertex_normals(body, av.body.mesh.faces))
    assert np.abs(d).max() > 1e-4  # the planes push some skin out under the skirt
    on = runtime_pose(av, pose, ["skirt"], body_follow=True)["skirt"]
    off = runtime_pose(av, pose, ["skirt"], body_follow=False)["skirt"]
    assert on[1]["body_follow"] is True and off[1]["body_follow"] is False
    assert not np.array_equal(on[0], off[0])


def test_cli_refuses_the_follow_where_it_does_nothing(capsys):
    from kisekae.cli import main

    assert main(["check", "--pose", "stand", "--garment", "skirt", "--body-follow"]) != 0
    assert "--body-follow" in capsys.readouterr().err
    assert main(["check", "--runtime", "--runtime-method", "capsules", "--pose", "stand", "--garment", "skirt",
                 "--no-body-follow"]) != 0
    assert "carried or surface" in capsys.readouterr().err
