"""Capsule field: exact distance, analytic gradient, smooth union, Numba kernels vs NumPy reference."""

import json

import numpy as np
import pytest

from kisekae.errors import KisekaeError
from kisekae.avatar.capsules import CapsuleRig, transform_capsules, validate_capsules
from kisekae.fit.sdf import capsule_distance, capsule_field, capsule_field_culled, capsule_field_numba


def random_capsules(rng, c=12):
    a = rng.uniform(-0.3, 0.3, (c, 3))
    b = a + rng.normal(0, 0.12, (c, 3))
    ra = rng.uniform(0.02, 0.08, c)
    rb = rng.uniform(0.02, 0.08, c)
    ok = np.linalg.norm(b - a, axis=1) > np.abs(ra - rb) + 1e-3
    return a[ok], b[ok], ra[ok], rb[ok]


def dense_reference(p, a, b, ra, rb, samples=20001):
    """Signed distance to the round cone as min over the swept spheres (independent formula)."""
    t = np.linspace(0.0, 1.0, samples)
    out = np.empty((len(p), len(a)))
    for i in range(len(a)):
        c = a[i] + t[:, None] * (b[i] - a[i])
        r = ra[i] + t * (rb[i] - ra[i])
        out[:, i] = np.min(np.linalg.norm(p[:, None, :] - c[None], axis=2) - r[None], axis=1)
    return out


def test_distance_matches_swept_sphere_reference():
    rng = np.random.default_rng(1)
    a, b, ra, rb = random_capsules(rng, 6)
    p = rng.uniform(-0.5, 0.5, (300, 3))
    d, _ = capsule_distance(p, a, b, ra, rb)
    assert np.abs(d - dense_reference(p, a, b, ra, rb)).max() < 1e-6
    assert (d < 0).any() and (d > 0).any()


def test_analytic_cases():
    a = np.array([[0.0, 0.0, 0.0]])
    b = np.array([[0.0, 1.0, 0.0]])
    d, g = capsule_distance([[0.3, 0.5, 0.0], [0.0, -0.5, 0.0], [0.0, 0.5, 0.0]], a, b, [0.1], [0.1])
    np.testing.assert_allclose(d[:, 0], [0.2, 0.4, -0.1], atol=1e-12)
    np.testing.assert_allclose(g[0, 0], [1, 0, 0], atol=1e-12)
    np.testing.assert_allclose(g[1, 0], [0, -1, 0], atol=1e-12)


def test_gradient_is_analytic_and_matches_finite_differences():
    rng = np.random.default_rng(2)
    a, b, ra, rb = random_capsules(rng, 8)
    p = rng.uniform(-0.5, 0.5, (400, 3))
    _, g = capsule_distance(p, a, b, ra, rb)
    eps = 1e-6
    for j in range(3):
        dp = np.zeros(3)
        dp[j] = eps
        fd = (capsule_distance(p + dp, a, b, ra, rb)[0] - capsule_distance(p - dp, a, b, ra, rb)[0]) / (2 * eps)
        assert np.abs(fd - g[..., j]).max() < 1e-5
    np.testing.assert_allclose(np.linalg.norm(g, axis=2), 1.0, atol=1e-9)


def test_smooth_union_gradient_and_bounds():
    rng = np.random.default_rng(3)
    a, b, ra, rb = random_capsules(rng, 10)
    p = rng.uniform(-0.4, 0.4, (500, 3))
    k = 0.03
    f, G, _ = capsule_field(p, a, b, ra, rb, k)
    hard, _, _ = capsule_field(p, a, b, ra, rb, 0.0)
    assert np.all(f <= hard + 1e-15) and np.all(f >= hard - k / 2 - 1e-15)
    assert (f < hard - 1e-4).any()  # the blend is active somewhere
    eps = 1e-7
    for j in range(3):
        dp = np.zeros(3)
        dp[j] = eps
        fd = (capsule_field(p + dp, a, b, ra, rb, k)[0] - capsule_field(p - dp, a, b, ra, rb, k)[0]) / (2 * eps)
        assert np.median(np.abs(fd - G[:, j])) < 1e-6
        assert np.mean(np.abs(fd - G[:, j]) < 1e-4) > 0.99


@pytest.mark.parametrize("k", [0.0, 0.02])
def test_numba_kernels_match_numpy(k):
    rng = np.random.default_rng(4)
    a, b, ra, rb = random_capsules(rng, 40)
    p = rng.uniform(-0.5, 0.5, (3000, 3))
    f, G, n = capsule_field(p, a, b, ra, rb, k)
    f2, G2, n2 = capsule_field_numba(p, a, b, ra, rb, k)
    np.testing.assert_allclose(f2, f, atol=1e-12)
    np.testing.assert_allclose(G2, G, atol=1e-9)
    assert np.array_equal(n, n2)
    reach = 0.01
    f3, G3, _ = capsule_field_culled(p, a, b, ra, rb, k, reach=reach, cell_size=0.03)
    near = f < reach
    assert near.sum() > 100
    np.testing.assert_allclose(f3[near], f[near], atol=1e-12)
    np.testing.assert_allclose(G3[near], G[near], atol=1e-9)
    assert np.all(f3[~near] >= reach)


def test_bad_capsules_are_rejected():
    p0 = np.zeros((1, 3))
    with pytest.raises(KisekaeError, match="p0 == p1"):
        validate_capsules([0], p0, p0, [0.1], [0.1])
    with pytest.raises(KisekaeError, match="radius <= 0"):
        validate_capsules([0], p0, [[0, 1, 0]], [0.0], [0.1])
    with pytest.raises(KisekaeError, match="inside the other"):
        validate_capsules([0], p0, [[0, 0.01, 0]], [0.1], [0.02])
    with pytest.raises(KisekaeError, match="not finite"):
        validate_capsules([0], [[np.nan, 0, 0]], [[0, 1, 0]], [0.1], [0.1])
    with pytest.raises(KisekaeError, match="skeleton has 1"):
        validate_capsules([3], p0, [[0, 1, 0]], [0.1], [0.1], n_bones=1)
    with pytest.raises(KisekaeError, match="non-finite"):
        capsule_distance([[np.inf, 0, 0]], p0, [[0, 1, 0]], [0.1], [0.1])


def test_transform_and_json_and_vrm_round_trip(tmp_path):
    rig = CapsuleRig([0, 1], [[0, 0, 0], [0, 0.1, 0]], [[0, 0.3, 0], [0, 0.4, 0.01]], [0.05, 0.04], [0.04, 0.03],
                     ["hips", "spine"])
    m = np.tile(np.eye(4), (2, 1, 1))
    m[1, :3, 3] = [1, 2, 3]
    a, b, ra, rb = transform_capsules(*rig.arrays(), m)
    np.testing.assert_allclose(a[1], [1, 2.1, 3])
    np.testing.assert_allclose(ra, rig.r0)
    path = tmp_path / "rig.json"
    rig.save(path)
    data = json.loads(path.read_text())
    assert data["capsules"][1]["bone"] == "spine"
    back = CapsuleRig.load(path)
    np.testing.assert_allclose(back.p1, rig.p1)
    assert back.bone_names == rig.bone_names
    vrm = rig.to_vrm_colliders()
    assert vrm[0]["shape"]["capsule"]["radius"] == pytest.approx(0.05)
    again = CapsuleRig.from_vrm_colliders(vrm, bone_names=rig.bone_names)
    np.testing.assert_allclose(again.p0, rig.p0)
    np.testing.assert_allclose(again.r1, [0.05, 0.04])
    path.write_text("{not json")
    with pytest.raises(KisekaeError, match="invalid JSON"):
        CapsuleRig.load(path)
