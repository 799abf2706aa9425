"""One frame of the default body in one compiled pass (kisekae.avatar.body_frame) and the correctives' features in
Numba: both against their NumPy references, the stages they replace, the rest pose, bad input; and the stretch
limit's tie rule."""

import numpy as np
import pytest

from kisekae.avatar import correctives as C
from kisekae.avatar.body_frame import posed_body_frame, posed_body_frame_numpy
from kisekae.avatar.contact import GAP, BodyContact, apply_contact, joint_contact_of
from kisekae.avatar.poses import NAMED_POSES, named_pose, range_of_motion_poses
from kisekae.errors import KisekaeError


@pytest.fixture(scope="module")
def default(avatar):
    """(avatar with the default body up to its planes (the part contact after them is tested in test_part_contact),
    its deform, its correctives, its planes)."""
    av = apply_contact(avatar, GAP, part_contact=False)
    return av, av.body.deform, av.body.deform.correctives, joint_contact_of(av.body.deform).planes


def test_numba_features_equal_the_reference(default):
    """The features from the skinning matrices in one Numba call (local rotations read back, their polar factor by
    Newton's iteration, quaternions as SciPy picks them) equal SciPy's quaternions and the NumPy bases."""
    av, _, corr, _ = default
    sk = av.skeleton
    poses = [named_pose(sk, n) for n in NAMED_POSES] + range_of_motion_poses(sk, 20, seed=11)
    for p in poses:
        m = p.skinning_matrices(sk)
        np.testing.assert_allclose(corr.features(sk, m), corr.features_numpy(sk, m), atol=1e-10)
    rest = np.tile(np.eye(4), (sk.n_bones, 1, 1))
    assert np.abs(corr.features(sk, rest)).max() < 1e-12
    # a parent scaled to zero: the least-squares inverse, as the reference's
    m = named_pose(sk, "sit").skinning_matrices(sk).copy()
    m[list(sk.names).index("lowerarm_l")][:3, :3] = 0.0
    np.testing.assert_allclose(corr.features(sk, m), corr.features_numpy(sk, m), atol=1e-10)
    with pytest.raises(KisekaeError, match="finite"):
        corr.features(sk, np.full_like(m, np.nan))
    with pytest.raises(KisekaeError, match="skinning matrices"):
        corr.features(sk, m[:3])


def test_one_pass_equals_the_stages_and_their_references(default):
    """Offsets, skinning and the planes in one pass equal the NumPy references composed (1e-6 m: the float32
    result), the stages run one after the other, and each part alone."""
    av, deform, corr, planes = default
    b, sk = av.body, av.skeleton
    for name in ("crouch", "sit", "arms_forward"):
        m = named_pose(sk, name).skinning_matrices(sk)
        f = corr.features(sk, m)
        got = b.posed(m)  # the default body's pose() is the one pass
        ref = posed_body_frame_numpy(b.mesh.vertices, b.skin, m, correctives=corr, features=f, planes=planes)
        np.testing.assert_allclose(got, ref, atol=1e-6)
        staged = deform(b.skinned(m), m)  # the post-skinning contract, stage by stage
        np.testing.assert_allclose(got, staged, atol=1e-6)
        for kw in ({"correctives": corr, "features": f}, {"planes": planes}, {}):
            np.testing.assert_allclose(posed_body_frame(b.mesh.vertices, b.skin, m, **kw),
                                       posed_body_frame_numpy(b.mesh.vertices, b.skin, m, **kw), atol=1e-6)
    # the planes alone through their own pose() equal the step after skinning
    contact = BodyContact(planes)
    m = named_pose(sk, "knee_bend").skinning_matrices(sk)
    np.testing.assert_allclose(contact.pose(b.mesh.vertices, b.skin, m), contact(b.skinned(m), m), atol=1e-6)
    rest = np.tile(np.eye(4), (sk.n_bones, 1, 1))
    np.testing.assert_allclose(b.posed(rest), b.mesh.vertices, atol=1e-7)


def test_float32_rest_and_weights_give_the_float64_result_bit_for_bit(default):
    """The one pass reads a float32 rest mesh and float32 weights as they are (no float64 copies a frame); every
    product promotes them exactly, so the result equals the one from float64 copies bit for bit."""
    from types import SimpleNamespace

    av, _, corr, planes = default
    b, sk = av.body, av.skeleton
    assert b.mesh.vertices.dtype == np.float32 and b.skin.weights.dtype == np.float32  # the case that is spared
    # Skin keeps float32 weights; a stand-in with float64 ones is what the kernels read after a float64 copy
    wide = SimpleNamespace(indices=b.skin.indices, weights=b.skin.weights.astype(np.float64),
                           n_vertices=b.skin.n_vertices)
    m = named_pose(sk, "crouch").skinning_matrices(sk)
    f = corr.features(sk, m)
    for kw in ({"correctives": corr, "features": f, "planes": planes}, {}):
        got = posed_body_frame(b.mesh.vertices, b.skin, m, **kw)
        want = posed_body_frame(b.mesh.vertices.astype(np.float64), wide, m, **kw)
        assert np.array_equal(got, want)


def test_one_pass_refuses_bad_input(default):
    av, _, corr, planes = default
    b, sk = av.body, av.skeleton
    m = named_pose(sk, "crouch").skinning_matrices(sk)
    f = corr.features(sk, m)
    with pytest.raises(KisekaeError, match="skinning matrices"):
        posed_body_frame(b.mesh.vertices, b.skin, np.full_like(m, np.nan), planes=planes)
    with pytest.raises(KisekaeError, match="correctives"):
        posed_body_frame(b.mesh.vertices, b.skin, m, correctives=corr, features=f[:, :3])
    with pytest.raises(KisekaeError, match="skin of"):
        posed_body_frame(b.mesh.vertices[:-1], b.skin, m, correctives=corr, features=f)
    with pytest.raises(KisekaeError, match="band"):
        posed_body_frame(b.mesh.vertices, b.skin, m, planes=planes, band=0.0)
    with pytest.raises(KisekaeError):
        posed_body_frame(np.full_like(b.mesh.vertices, np.nan), b.skin, m)


def test_stretch_limit_leaves_an_edge_at_the_limit_alone():
    """A pass leaves over-stretched edges exactly at the limit; the next pass must see them as within it in both
    implementations (they used to decide such ties by rounding, differently)."""
    from kisekae.fit.surface import STRETCH_LIMIT, one_ring, stretch_limit, stretch_limit_numpy

    x = np.array([[0.0, 0.0, 0.0], [0.1, 0.03, -0.02]])
    ring = one_ring(2, np.array([[0, 1]]))
    p = x.copy()
    p[1] *= (1.0 + STRETCH_LIMIT) * 1.37  # over the limit: one pass puts both ends at it
    for impl in (stretch_limit, stretch_limit_numpy):
        once, moved = impl(p, x, ring)
        assert moved[0] and moved[1]
        twice, moved2 = impl(once, x, ring)
        assert not moved2.any()
        np.testing.assert_array_equal(twice, once)
    np.testing.assert_allclose(stretch_limit(p, x, ring)[0], stretch_limit_numpy(p, x, ring)[0], atol=1e-15)
