"""Numba twins of the per-frame stages without one before: vertex normals and the skin-bound push-out."""

import numpy as np
import pytest

from kisekae.geom.normals import vertex_normals, vertex_normals_numpy
from kisekae.avatar.poses import named_pose
from kisekae.errors import KisekaeError
from kisekae.fit import PushParams
from kisekae.fit.bound import bind_to_skin, push_out_bound, push_out_bound_numba
from kisekae.fit.pushout import cap_displacement


def test_vertex_normals_numba_analytic_and_as_numpy(avatar):
    # a unit right tetrahedron corner: the origin's three faces have areas 1/2 each, normals -x, -y, -z
    v = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1], [5, 5, 5]], np.float64)
    f = np.array([[0, 2, 1], [0, 1, 3], [0, 3, 2], [1, 2, 3]], np.int32)
    n = vertex_normals(v, f)
    assert n.dtype == np.float32 and n.shape == (5, 3)
    np.testing.assert_allclose(n[0], -np.ones(3) / np.sqrt(3), atol=1e-7)
    assert np.all(n[4] == 0)  # on no face
    b = avatar.body
    posed = b.posed(named_pose(avatar.skeleton, "crouch").skinning_matrices(avatar.skeleton)).astype(np.float64)
    out = np.empty((len(posed), 3), np.float32)
    assert vertex_normals(posed, b.mesh.faces, out=out) is out
    np.testing.assert_array_equal(out, vertex_normals_numpy(posed, b.mesh.faces))
    with pytest.raises(KisekaeError, match="faces"):
        vertex_normals(v, np.array([[0, 1, 9]]))
    with pytest.raises(KisekaeError, match="vertices"):
        vertex_normals(np.full((5, 3), np.nan), f)
    with pytest.raises(KisekaeError, match="out"):
        vertex_normals(v, f, out=np.empty((5, 3)))


@pytest.mark.parametrize("params", [PushParams(), PushParams(margin=0.004, stiffness=0.7, max_push=0.02,
                                                             skirt_bias=0.4)])
def test_bound_numba_equals_the_numpy_reference(avatar, params):
    """Crouch, skirt, with random masks: same positions and clearances as push_out_bound (+ the cap)."""
    b, sk = avatar.body, avatar.skeleton
    g = avatar.garments["skirt"]
    binding = bind_to_skin(g.mesh.vertices, b.mesh.vertices, b.mesh.faces)
    m = named_pose(sk, "crouch").skinning_matrices(sk)
    body = b.posed(m).astype(np.float64)
    x = g.posed(m).astype(np.float64)
    rng = np.random.default_rng(0)
    jitter = x + rng.normal(0, 0.01, x.shape)  # many vertices inside or in the contact band
    t, s = rng.uniform(0, 1, len(x)), rng.uniform(0, 1, len(x))
    ref, push, s_ref = push_out_bound(binding, jitter, body, b.mesh.faces, params, t, s)
    assert (push > 0).mean() > 0.1 and (s_ref < 0).any()
    nb = vertex_normals(body, b.mesh.faces)
    got, s_got = push_out_bound_numba(binding, jitter, body, nb, params, t, s)
    assert np.abs(s_got - s_ref).max() < 1e-12
    assert np.abs(got - ref).max() < 1e-12
    capped, _ = push_out_bound_numba(binding, jitter, body, nb, params, t, s, start=x)
    want = cap_displacement(ref.copy(), x, params.max_push)
    assert np.abs(capped - want).max() < 1e-12
    assert np.linalg.norm(capped - x, axis=1).max() <= params.max_push + 1e-12
    if params.max_push < 0.05:
        assert not np.array_equal(capped, got)  # the cap acted


def test_bound_numba_bad_input(avatar):
    b = avatar.body
    g = avatar.garments["skirt"]
    binding = bind_to_skin(g.mesh.vertices, b.mesh.vertices, b.mesh.faces)
    body = b.mesh.vertices.astype(np.float64)
    nb = vertex_normals(body, b.mesh.faces)
    x = g.mesh.vertices
    with pytest.raises(KisekaeError, match="garment vertices"):
        push_out_bound_numba(binding, x[:-1], body, nb)
    with pytest.raises(KisekaeError, match="body normals"):
        push_out_bound_numba(binding, x, body, nb[:-1])
    with pytest.raises(KisekaeError, match="body vertices"):
        push_out_bound_numba(binding, x, body[:100], nb[:100])
    with pytest.raises(KisekaeError, match="tightness"):
        push_out_bound_numba(binding, x, body, nb, tightness=np.zeros(3))
