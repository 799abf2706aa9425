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
    out, push, d = push_out_capsules(p, A, B, RA, RB, params, tightness=t)
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
    from kisekae.fit.pushout import spatial_order

    rng = np.random.default_rng(11)
    p = shell_points(rng, 4000)
    # vertices on the axes and at the sphere centres exercise the gradient fallbacks
    p = np.vstack([p, A, B, 0.5 * (A + B)])
    t = rng.uniform(0, 1, len(p))
    ref, push_r, d_r = push_out_reference(p, A, B, RA, RB, params, tightness=t)
    order = spatial_order(p)
    assert sorted(order) == list(range(len(p)))
    out, push, d = push_out_capsules(p, A, B, RA, RB, params, tightness=t, order=order, block=block)
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
    out2, _, _ = push_out_capsules(p, A, B, RA, RB, params, tightness=t)
    out3, _, _ = push_out_capsules(p, A, B, RA, RB, params, tightness=t, order=rng.permutation(len(p)), block=block)
    np.testing.assert_array_equal(out2, out)
    np.testing.assert_allclose(out3, ref, atol=1e-12)


def test_blocked_kernel_bad_order():
    p = np.zeros((5, 3))
    with pytest.raises(KisekaeError, match="order"):
        push_out_capsules(p, A, B, RA, RB, order=[0, 1, 2, 3])
    with pytest.raises(KisekaeError, match="order"):
        push_out_capsules(p, A, B, RA, RB, order=[0, 1, 2, 3, 5])
    with pytest.raises(KisekaeError, match="repeats"):
        push_out_capsules(p, A, B, RA, RB, order=[0, 1, 2, 3, 3])
    with pytest.raises(KisekaeError, match="block"):
        push_out_capsules(p, A, B, RA, RB, block=0)
    with pytest.raises(KisekaeError, match="non-finite"):
        push_out_capsules([[np.nan, 0, 0]], A, B, RA, RB)


# --------------------------------------------------------------------------- CapsulePushPlan (the 1 ms path)
def _crossing_capsules(offset):
    """Two crossing capsules (an X): along their bisector planes the nearest capsule swaps."""
    a = np.array([[-0.15, -0.15, 0.0], [-0.15, 0.15, 0.01]]) + offset
    b = np.array([[0.15, 0.15, 0.0], [0.15, -0.15, 0.01]]) + offset
    return a, b, np.array([0.05, 0.045]), np.array([0.04, 0.05])


def _near_tie_points(rng, a, b, ra, rb, n, jitter=2e-6):
    """Points within ``jitter`` (metres) of being equidistant from both capsules, at clearances -10..+3 mm."""
    from kisekae.fit.sdf import capsule_distance

    p = np.vstack([a + rng.uniform(0, 1, (n, 1)) * (b - a) for a, b in zip(a, b)]) + rng.normal(0, 0.06, (2 * n, 3))
    target = rng.uniform(-0.01, 0.003, len(p))
    for _ in range(40):  # Newton steps onto {d0 = d1 = target}
        d, g = capsule_distance(p, a, b, ra, rb)
        gs = g[:, 0] + g[:, 1]  # changes both distances alike
        p += ((target - d[:, 0]) / np.maximum(1 + (g[:, 0] * g[:, 1]).sum(1), 1e-3))[:, None] * gs
        d, g = capsule_distance(p, a, b, ra, rb)
        gd = g[:, 0] - g[:, 1]
        p -= ((d[:, 0] - d[:, 1]) / np.maximum((gd * gd).sum(1), 1e-12))[:, None] * gd
    d, _ = capsule_distance(p, a, b, ra, rb)
    p = p[np.abs(d[:, 0] - d[:, 1]) < 1e-10]
    return p + rng.normal(0, jitter, p.shape)


@pytest.mark.parametrize("offset", [0.0, 300.0])
@pytest.mark.parametrize("params", [PushParams(), PushParams(smooth_k=0.01, skirt_bias=0.5, stiffness=0.8, softness=0.3)])
def test_plan_matches_reference_on_near_ties(offset, params):
    from kisekae.fit.pushout import CapsulePushPlan

    rng = np.random.default_rng(21)
    a, b, ra, rb = _crossing_capsules(np.array([offset, -offset, 0.5 * offset]))
    p = _near_tie_points(rng, a, b, ra, rb, 1500)
    p = np.vstack([p, shell_points(rng, 1000) + offset * np.array([1, -1, 0.5])])
    t = rng.uniform(0, 1, len(p))
    ref, push_r, d_r = push_out_reference(p, a, b, ra, rb, params, tightness=t)
    assert (push_r > 0).sum() > 1000
    plan = CapsulePushPlan(p, params, tightness=t)
    out, push, d = plan.run(p, a, b, ra, rb)
    np.testing.assert_allclose(out, ref, rtol=0, atol=1e-9)
    np.testing.assert_allclose(push, push_r, rtol=0, atol=1e-12)
    near = d_r < params.margin + params.smooth_k
    np.testing.assert_allclose(d[near], d_r[near], rtol=0, atol=1e-12)
    assert np.all(d[~near] >= params.margin)
    far = d_r >= params.margin
    assert np.all(out[far] == p[far])
    # a second frame through the same plan reuses its buffers and gives the same numbers
    out2, _, _ = plan.run(p, a, b, ra, rb)
    assert out2 is out


def test_plan_float32_tolerance_is_needed():
    """With no tolerance the float32 ranking picks the wrong capsule near ties: the tests see it."""
    from kisekae.fit.pushout import CapsulePushPlan

    rng = np.random.default_rng(22)
    a, b, ra, rb = _crossing_capsules(np.array([300.0, -300.0, 150.0]))
    p = _near_tie_points(rng, a, b, ra, rb, 1500, jitter=1e-9)
    ref, _, _ = push_out_reference(p, a, b, ra, rb)
    plan = CapsulePushPlan(p)
    plan.f32_tol = 0.0
    out, _, _ = plan.run(p, a, b, ra, rb)
    assert np.abs(out - ref).max() > 1e-7
    plan.f32_tol = 4e-6
    out, _, _ = plan.run(p, a, b, ra, rb)
    np.testing.assert_allclose(out, ref, rtol=0, atol=1e-9)


def test_plan_float32_error_bound():
    """float32 block-local distances stay within F32_TOL * scale / 4 of float64 (what eps assumes)."""
    from kisekae.fit.pushout import F32_TOL
    from kisekae.fit.sdf import capsule_distance

    rng = np.random.default_rng(23)
    for offset in (0.0, 1000.0):
        a = rng.uniform(-0.3, 0.3, (20, 3)) + offset
        b = a + rng.normal(0, 0.15, (20, 3))
        ra = rng.uniform(0.01, 0.08, 20)
        rb = rng.uniform(0.01, 0.08, 20)
        keep = np.linalg.norm(b - a, axis=1) > np.abs(ra - rb) + 1e-3
        a, b, ra, rb = a[keep], b[keep], ra[keep], rb[keep]
        centre = np.full(3, offset)
        p = centre + rng.uniform(-0.4, 0.4, (3000, 3))
        d64, _ = capsule_distance(p, a, b, ra, rb)
        # the float32 evaluation of the kernel, in coordinates relative to the block centre
        f = lambda v: np.asarray(v, np.float32)
        pl, al, bl = f(p - centre), f(a - centre), f(b - centre)
        d32, _ = capsule_distance(pl.astype(np.float64), al.astype(np.float64), bl.astype(np.float64), ra, rb)
        scale = np.linalg.norm(a - centre, axis=1) + np.linalg.norm(b - a, axis=1) + np.maximum(ra, rb) + 0.7
        assert np.all(np.abs(d32 - d64) <= 0.25 * F32_TOL * scale[None])


def test_plan_in_place_and_positions_only():
    from kisekae.fit.pushout import CapsulePushPlan

    rng = np.random.default_rng(24)
    p = shell_points(rng, 3000)
    ref, push_r, _ = push_out_reference(p, A, B, RA, RB)
    plan = CapsulePushPlan(p, order=np.arange(len(p)), block=32)
    q = p.copy()
    out, push, d = plan.run(q, A, B, RA, RB, out=q, diagnostics=False)
    assert out is q and push is None and d is None
    np.testing.assert_allclose(q, ref, rtol=0, atol=1e-9)
    out, push, d = plan.run(p, A, B, RA, RB)
    np.testing.assert_allclose(push, push_r, rtol=0, atol=1e-12)


def test_plan_bad_input():
    from kisekae.fit.pushout import CapsulePushPlan

    p = shell_points(np.random.default_rng(25), 200)
    plan = CapsulePushPlan(p)
    with pytest.raises(KisekaeError, match="garment vertices.*shape"):
        plan.run(p[:-1], A, B, RA, RB)
    bad = p.copy()
    bad[137, 1] = np.nan
    with pytest.raises(KisekaeError, match="row 137"):
        plan.run(bad, A, B, RA, RB)
    with pytest.raises(KisekaeError, match="degenerate"):
        plan.run(p, A, A, RA, RB)
    with pytest.raises(KisekaeError, match="radius <= 0"):
        plan.run(p, A, B, np.array([0.05, 0.0]), RB)
    with pytest.raises(KisekaeError, match="non-finite"):
        plan.run(p, np.array([[0.0, np.inf, 0.0], [0.0, 0.3, 0.0]]), B, RA, RB)
    with pytest.raises(KisekaeError, match="capsule b"):
        plan.run(p, A, B[:1], RA, RB)
    with pytest.raises(KisekaeError, match="out"):
        plan.run(p, A, B, RA, RB, out=np.empty((len(p), 3), dtype=np.float32))
    with pytest.raises(KisekaeError, match="tightness"):
        CapsulePushPlan(p, tightness=np.zeros(len(p) + 1))
    with pytest.raises(KisekaeError, match="repeats"):
        CapsulePushPlan(p, order=np.zeros(len(p), dtype=int))
    with pytest.raises(KisekaeError, match="greater than max_push"):
        CapsulePushPlan(p, PushParams(margin=0.05, max_push=0.02))


def test_plan_float32_kernel_error_bound():
    """The compiled float32 pass (nearest and second-nearest distance per vertex) stays within
    F32_TOL * scale / 4 of the float64 distances, end caps, cone sides and tapers included."""
    from kisekae.fit.pushout import F32_TOL, _block_min32
    from kisekae.fit.sdf import capsule_distance, prepare_capsules

    rng = np.random.default_rng(26)
    a = rng.uniform(-0.3, 0.3, (12, 3))
    b = a + rng.normal(0, 0.15, (12, 3))
    ra = rng.uniform(0.01, 0.08, 12)
    rb = rng.uniform(0.01, 0.08, 12)
    keep = np.linalg.norm(b - a, axis=1) > np.abs(ra - rb) + 1e-3
    a, b, ra, rb = a[keep], b[keep], ra[keep], rb[keep]
    caps = prepare_capsules(a, b, ra, rb)
    cl = caps[:, :11].astype(np.float32)
    p32 = rng.uniform(-0.4, 0.4, (4000, 3)).astype(np.float32)
    p32[:len(a)] = a  # on the sphere centres and the axes
    p32[len(a):2 * len(a)] = 0.5 * (a + b)
    m = len(p32)
    b1 = np.full(m, np.inf, np.float32)
    b2 = np.full(m, np.inf, np.float32)
    i1 = np.zeros(m, np.int32)
    fx, fy, fz = (np.ascontiguousarray(p32[:, i]) for i in range(3))
    for q in range(len(cl)):
        _block_min32(fx, fy, fz, m, cl, q, b1, b2, i1)
    # float64 on the same (float32-rounded) capsules and points: the kernel's own arithmetic error
    a32 = cl[:, :3].astype(np.float64)
    b32 = a32 + cl[:, 3:6].astype(np.float64) * cl[:, 6:7].astype(np.float64)
    d64, _ = capsule_distance(p32.astype(np.float64), a32, b32, cl[:, 9].astype(np.float64), cl[:, 10].astype(np.float64))
    srt = np.sort(d64, axis=1)
    scale = (np.linalg.norm(a32, axis=1) + cl[:, 6] + np.maximum(cl[:, 9], cl[:, 10])).max() + 0.7
    tol = 0.25 * F32_TOL * scale
    assert np.abs(b1 - srt[:, 0]).max() <= tol
    assert np.abs(b2 - srt[:, 1]).max() <= tol
    clear = srt[:, 1] - srt[:, 0] > 2 * tol
    np.testing.assert_array_equal(i1[clear], np.argmin(d64, axis=1)[clear])


def test_spatial_order_is_the_stable_morton_sort():
    """The compiled Morton order equals a NumPy stable argsort of codes built bit by bit."""
    from kisekae.fit.pushout import spatial_order

    rng = np.random.default_rng(8)
    for p in (rng.normal(size=(3000, 3)), np.repeat(rng.uniform(size=(50, 3)), 4, axis=0), np.zeros((5, 3))):
        lo = p.min(axis=0)
        ext = max(float((p.max(axis=0) - lo).max()), 1e-9)
        q = np.minimum((p - lo) / ext * 1024, 1023).astype(np.int64)
        code = np.zeros(len(p), np.int64)
        for bit in range(10):
            for axis in range(3):
                code |= ((q[:, axis] >> bit) & 1) << (3 * bit + axis)
        np.testing.assert_array_equal(spatial_order(p), np.argsort(code, kind="stable"))
