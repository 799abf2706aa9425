"""Push law, capsule push-out (Numba culled vs NumPy reference), masks, smoothing, bad input."""

import numpy as np
import pytest

from kisekae.errors import KisekaeError
from kisekae.fit.pushout import (PushParams, push_amount, push_out_capsules, push_out_reference, resolve_mask,
                                 smooth_displacement)

A = np.array([[0.0, 0.0, 0.0], [0.0, 0.3, 0.0]])
B = np.array([[0.0, 0.3, 0.0], [0.2, 0.5, 0.0]])
RA = np.array([0.05, 0.04])
RB = np.array([0.04, 0.03])


def shell_points(rng, n):
    """Points around the two capsules at clearances from -20 mm to +20 mm."""
    i = rng.integers(0, 2, n)
    t = rng.uniform(0, 1, n)
    c = A[i] + t[:, None] * (B[i] - A[i])
    r = RA[i] + t * (RB[i] - RA[i])
    d = rng.normal(size=(n, 3))
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    return c + d * (r + rng.uniform(-0.02, 0.02, n))[:, None]


def test_push_law_analytic():
    m, s = 0.002, 0.5
    d = np.array([-0.01, 0.0, 0.001, 0.002, 0.01])
    push = push_amount(d, m, s, 0.1)
    np.testing.assert_allclose(push, [0.01 + 0.001, 0.001, 0.0005, 0.0, 0.0])
    # penetration always resolved to the target gap, capped by max_push
    assert push_amount([-0.2], m, s, 0.1)[0] == pytest.approx(0.1)
    # grows with stiffness, tightness halves the gap, softness rounds the onset
    assert push_amount([0.001], m, 0.8, 0.1)[0] > push_amount([0.001], m, 0.3, 0.1)[0]
    assert push_amount([-0.001], m, s, 0.1, tightness=1.0)[0] == pytest.approx(0.001 + 0.0005)
    assert push_amount([0.0015], m, s, 0.1, softness=1.0)[0] == pytest.approx(0.001 * 0.25**2)


@pytest.mark.parametrize("params", [PushParams(), PushParams(smooth_k=0.01, skirt_bias=0.5, stiffness=0.8)])
def test_culled_numba_matches_reference(params):
    rng = np.random.default_rng(5)
    p = shell_points(rng, 4000)
    t = rng.uniform(0, 1, len(p))
    ref, push_r, d_r = push_out_reference(p, A, B, RA, RB, params, tightness=t)
    out, push, d = push_out_capsules(p, A, B, RA, RB, params, tightness=t, cell_size=0.02)
    assert (push_r > 0).sum() > 1000
    np.testing.assert_allclose(out, ref, atol=1e-9)
    np.testing.assert_allclose(push, push_r, atol=1e-12)
    far = d_r >= params.margin
    assert np.all(push[far] == 0) and np.all(out[far] == p[far])
    after, _, _ = push_out_reference(out, A, B, RA, RB, PushParams(margin=1e-9, max_push=1.0))
    assert push.max() <= params.max_push


def test_penetration_resolved_against_field():
    rng = np.random.default_rng(6)
    p = shell_points(rng, 2000)
    params = PushParams()
    out, push, d = push_out_capsules(p, A, B, RA, RB, params)
    from kisekae.fit.sdf import capsule_field

    f_after, _, _ = capsule_field(out, A, B, RA, RB)
    inside_before = d < 0
    assert inside_before.sum() > 200
    # one push along the gradient lands on the target gap, except where it runs into the
    # other capsule at the concave joint (a known limit of a single capsule step)
    resolved = f_after[inside_before] >= 0.001 - 1e-9
    assert resolved.mean() > 0.95
    joint = np.linalg.norm(p[inside_before][~resolved] - A[1], axis=1)
    assert np.all(joint < 0.1)


def test_masks_per_vertex_and_texture():
    uv = np.array([[0.1, 0.1], [0.9, 0.9]])
    tex = np.zeros((4, 4))
    tex[3, 3] = 1.0
    m = resolve_mask(tex, 2, "tightness", uv)
    assert m[0] == pytest.approx(0.0) and m[1] == pytest.approx(1.0)
    np.testing.assert_allclose(resolve_mask((tex * 255).astype(np.uint8), 2, "t", uv), m)
    with pytest.raises(KisekaeError, match="garment has 3 vertices"):
        resolve_mask(np.zeros(2), 3, "tightness")
    with pytest.raises(KisekaeError, match="needs the garment's UVs"):
        resolve_mask(tex, 2, "softness")
    with pytest.raises(KisekaeError, match=r"\[0, 1\]"):
        resolve_mask(np.array([0.5, 2.0]), 2, "softness")


def test_bad_input():
    with pytest.raises(KisekaeError, match="greater than max_push"):
        PushParams(margin=0.05, max_push=0.02)
    with pytest.raises(KisekaeError, match="stiffness"):
        PushParams(stiffness=1.5)
    with pytest.raises(KisekaeError, match="non-finite"):
        push_out_capsules([[np.nan, 0, 0]], A, B, RA, RB)
    with pytest.raises(KisekaeError, match="tightness"):
        push_out_capsules(np.zeros((3, 3)), A, B, RA, RB, tightness=np.zeros(4))
    with pytest.raises(KisekaeError, match="degenerate"):
        push_out_capsules(np.zeros((3, 3)), A, A, RA, RB)


def test_smoothing_keeps_floor_and_fixed_vertices():
    disp = np.array([[0, 0.004, 0], [0, 0.0, 0], [0, 0.001, 0], [0, 0, 0]], dtype=float)
    moved = np.array([True, True, True, False])
    edges = np.array([[0, 1], [1, 2], [2, 3]])
    dirs = np.tile([0.0, 1.0, 0.0], (4, 1))
    floor = np.array([0.004, 0.0, 0.001, 0.0])
    out = smooth_displacement(disp, moved, edges, 3, 0.5, floor, dirs)
    assert np.all(out[3] == 0)
    assert np.all(out[:3, 1] >= floor[:3] - 1e-15)
    assert out[1, 1] > 0  # the step was spread to the neighbour


@pytest.mark.parametrize("params, block", [(PushParams(), 64), (PushParams(), 7),
                                           (PushParams(smooth_k=0.01, skirt_bias=0.5, stiffness=0.8), 64),
                                           (PushParams(margin=0.01, softness=0.5), 200)])
def test_blocked_kernel_matches_reference(params, block):
    from kisekae.fit.pushout import push_out_blocked, spatial_order

    rng = np.random.default_rng(11)
    p = shell_points(rng, 4000)
    # vertices on the axes and at the sphere centres exercise the gradient fallbacks
    p = np.vstack([p, A, B, 0.5 * (A + B)])
    t = rng.uniform(0, 1, len(p))
    ref, push_r, d_r = push_out_reference(p, A, B, RA, RB, params, tightness=t)
    order = spatial_order(p)
    assert sorted(order) == list(range(len(p)))
    out, push, d = push_out_blocked(p, A, B, RA, RB, params, tightness=t, order=order, block=block)
    assert (push_r > 0).sum() > 1000
    np.testing.assert_allclose(out, ref, atol=1e-12)
    np.testing.assert_allclose(push, push_r, atol=1e-12)
    # exact wherever the field is below margin + k (the hard minimum is then below margin + 1.5 k)
    near = d_r < params.margin + params.smooth_k
    np.testing.assert_allclose(d[near], d_r[near], atol=1e-12)
    assert np.all(d[~near] >= params.margin)
    far = d_r >= params.margin
    assert np.all(push[far] == 0) and np.all(out[far] == p[far])
    # the default order gives the same result, and a shuffled order as well
    out2, _, _ = push_out_blocked(p, A, B, RA, RB, params, tightness=t)
    out3, _, _ = push_out_blocked(p, A, B, RA, RB, params, tightness=t, order=rng.permutation(len(p)), block=block)
    np.testing.assert_array_equal(out2, out)
    np.testing.assert_allclose(out3, ref, atol=1e-12)


def test_blocked_kernel_bad_order():
    from kisekae.fit.pushout import push_out_blocked

    p = np.zeros((5, 3))
    with pytest.raises(KisekaeError, match="order"):
        push_out_blocked(p, A, B, RA, RB, order=[0, 1, 2, 3])
    with pytest.raises(KisekaeError, match="order"):
        push_out_blocked(p, A, B, RA, RB, order=[0, 1, 2, 3, 5])
    with pytest.raises(KisekaeError, match="repeats"):
        push_out_blocked(p, A, B, RA, RB, order=[0, 1, 2, 3, 3])
    with pytest.raises(KisekaeError, match="block"):
        push_out_blocked(p, A, B, RA, RB, block=0)
    with pytest.raises(KisekaeError, match="non-finite"):
        push_out_blocked([[np.nan, 0, 0]], A, B, RA, RB)
