"""Body pressure (analytic plane cases, brute-force splat reference) and the tight look."""

import numpy as np
import pytest

from kisekae.errors import KisekaeError
from kisekae.fit.pressure import (PRESETS, dent_directions, garment_pressure_values, pressure, splat_to_body,
                                  static_pressure, tight_look)


def grid(n, h, y=0.0, x0=0.0, z0=0.0):
    """An n x n grid of points in the plane y = const, spacing h metres, and its triangles."""
    i, k = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    pts = np.column_stack([x0 + h * i.ravel(), np.full(n * n, y), z0 + h * k.ravel()])
    q = (i[:-1, :-1] * n + k[:-1, :-1]).ravel()
    faces = np.concatenate([np.column_stack([q, q + 1, q + n + 1]), np.column_stack([q, q + n + 1, q + n])])
    return pts, faces


BODY, BODY_F = grid(41, 0.005)  # 20 cm x 20 cm skin patch, normals +Y
UP = np.tile([0.0, 1.0, 0.0], (len(BODY), 1))


def garment_patch(gap, h=0.007):
    """A garment square over the middle of the patch (x, z in 5..15 cm), ``gap`` metres above it."""
    g, f = grid(15, h, y=gap, x0=0.05, z0=0.05)
    return g, f


def interior(margin=0.03):
    x, z = BODY[:, 0], BODY[:, 2]
    return (x > 0.05 + margin) & (x < 0.148 - margin) & (z > 0.05 + margin) & (z < 0.148 - margin)


def far_away(margin=0.021):
    x, z = BODY[:, 0], BODY[:, 2]
    return (x < 0.05 - margin) | (x > 0.148 + margin) | (z < 0.05 - margin) | (z > 0.148 + margin)


@pytest.mark.parametrize("push, expected", [(0.001, 0.2), (0.0025, 0.5), (0.005, 1.0), (0.02, 1.0), (0.0, 0.0)])
def test_plane_pushed_by_known_amount(push, expected):
    after, _ = garment_patch(0.001)  # pushed out to 1 mm above the skin, from ``push`` below that
    before = after - [0.0, push, 0.0]
    p = pressure(BODY, UP, before, after, full_push=0.005)
    np.testing.assert_allclose(p[interior()], expected, atol=1e-12)
    assert np.all(p[far_away()] == 0.0)
    assert p.min() >= 0.0 and p.max() <= 1.0


def test_static_pressure_from_tightness_and_gap():
    for gap, factor in ((0.0, 1.0), (-0.0005, 1.0), (0.0015, 0.5), (0.003, 0.0), (0.01, 0.0)):
        g, _ = garment_patch(gap)
        p = static_pressure(BODY, UP, g, 0.6, contact=0.003)
        np.testing.assert_allclose(p[interior()], 0.6 * factor, atol=1e-12)
    # a per-vertex tightness mask: left half tight, right half loose
    g, _ = garment_patch(0.0)
    t = np.where(g[:, 0] < 0.099, 1.0, 0.0)
    p = static_pressure(BODY, UP, g, t)
    left = interior(0.005) & (BODY[:, 0] < 0.099 - 0.025)
    right = interior(0.005) & (BODY[:, 0] > 0.099 + 0.025)
    np.testing.assert_allclose(p[left], 1.0, atol=1e-12)
    np.testing.assert_allclose(p[right], 0.0, atol=1e-12)


def test_push_and_tightness_take_the_larger():
    before, _ = garment_patch(0.0)
    after = before + [0, 0.001, 0]  # push 1 mm -> 0.2; ends 1 mm above the skin: static 0.9 * s(1/3)
    v, gap = garment_pressure_values(BODY, UP, before, after, 0.9, full_push=0.005, contact=0.003)
    np.testing.assert_allclose(gap, 0.001, atol=1e-12)
    x = 1.0 / 3.0
    np.testing.assert_allclose(v, max(0.2, 0.9 * (1 - x * x * (3 - 2 * x))), atol=1e-12)


def brute_splat(b, n, g, v, R, contact):
    out = np.zeros(len(b))
    for j in range(len(b)):
        num = den = 0.0
        near = np.inf
        for i in range(len(g)):
            r = np.sqrt(np.sum((g[i] - b[j]) ** 2))
            if r > R or np.dot(g[i] - b[j], n[j]) < -contact:
                continue
            kk = (1 - (r / R) ** 2) ** 3
            num += kk * v[i]
            den += kk
            near = min(near, r)
        if den > 0:
            t = min(max((near - R / 2) / (R / 2), 0.0), 1.0)
            out[j] = num / den * (1 - t * t * (3 - 2 * t))
    return out


def test_splat_matches_brute_force_on_a_curved_surface():
    rng = np.random.default_rng(3)
    # body: points on a sphere of radius 10 cm; garment: random points near it with random values
    b = rng.normal(size=(300, 3))
    n = b / np.linalg.norm(b, axis=1, keepdims=True)
    b = 0.1 * n
    gd = rng.normal(size=(400, 3))
    gd /= np.linalg.norm(gd, axis=1, keepdims=True)
    g = gd * rng.uniform(0.095, 0.115, (400, 1))
    v = rng.uniform(0, 1, 400)
    got = splat_to_body(b, n, g, v, radius=0.03, contact=0.002)
    ref = brute_splat(b, n, g, v, 0.03, 0.002)
    assert (ref > 0).sum() > 100
    np.testing.assert_allclose(got, ref, atol=1e-12)


def test_pressure_is_continuous_when_the_garment_slides():
    before, _ = garment_patch(-0.001)
    after = before + [0, 0.004, 0]
    p0 = pressure(BODY, UP, before, after)
    p1 = pressure(BODY, UP, before + [1e-5, 0, 0], after + [1e-5, 0, 0])
    assert np.abs(p1 - p0).max() < 1e-2
    assert p0.max() == pytest.approx(0.8)


def test_other_side_of_the_body_is_ignored():
    # garment on the far side of a thin plate (behind the skin's tangent plane) does not press
    before, _ = garment_patch(-0.01)
    after = before + [0, -0.003, 0]
    p = pressure(BODY, UP, before, after, contact=0.003)
    assert np.all(p == 0)


def test_pressure_bad_input():
    g, _ = garment_patch(0.0)
    with pytest.raises(KisekaeError, match="tightness"):
        pressure(BODY, UP, g, g, np.zeros(len(g) + 1))
    with pytest.raises(KisekaeError, match="tightness"):
        pressure(BODY, UP, g, g, 1.5)
    with pytest.raises(KisekaeError, match="garment_after"):
        pressure(BODY, UP, g, g[:-1])
    bad = g.copy()
    bad[3, 1] = np.nan
    with pytest.raises(KisekaeError, match="garment_before"):
        pressure(BODY, UP, bad, g)
    with pytest.raises(KisekaeError, match="body_normals"):
        pressure(BODY, UP[:-1], g, g)
    with pytest.raises(KisekaeError, match="radius"):
        pressure(BODY, UP, g, g, radius=0.0)
    with pytest.raises(KisekaeError, match="full_push"):
        pressure(BODY, UP, g, g, full_push=-1)


def test_dent_directions_of_a_linear_field_are_exact():
    p = np.clip(1.0 - 4.0 * BODY[:, 0], 0, 1)  # falls by 4 per metre along +X inside (x < 0.25)
    d = dent_directions(BODY, BODY_F, p, scale=0.1)
    np.testing.assert_allclose(d, np.tile([0.4, 0.0, 0.0], (len(BODY), 1)), atol=1e-12)
    d = dent_directions(BODY, BODY_F, p, scale=1.0)  # clipped to length 1
    np.testing.assert_allclose(np.linalg.norm(d, axis=1), 1.0, atol=1e-12)


def test_tight_look_matches_formula_and_shader_reference():
    from kisekae.shaders.reference import tight_look as shader_ref

    rng = np.random.default_rng(2)
    n = rng.normal(size=(500, 3))
    n /= np.linalg.norm(n, axis=1, keepdims=True)
    ao, sss, p, t = (rng.uniform(0, 1, 500) for _ in range(4))
    dent = rng.normal(size=(500, 3)) * 0.5
    for name, st in PRESETS.items():
        got = tight_look(n, ao, sss, p, name, tightness=t, dent_dir=dent)
        ref = shader_ref(n, ao, sss, dent, t, p, **st)
        for a, b in zip(got, ref):
            np.testing.assert_allclose(a, b, atol=1e-12)
    # by hand: k = 0.5, dent along +X on a +Y normal, seed strengths
    nn, ao2, sss2 = tight_look([[0, 1, 0]], [1.0], [0.8], [0.5], "seed", dent_dir=[[1.0, 0, 0]])
    m = np.array([-0.15 * 0.5, 1.0, 0.0])
    np.testing.assert_allclose(nn[0], m / np.linalg.norm(m), atol=1e-15)
    assert ao2[0] == pytest.approx(1 - 0.3 * 0.5) and sss2[0] == pytest.approx(0.8 * (1 - 0.25 * 0.5))
    # no pressure, no change; no dent direction, normals unchanged
    nn, ao2, sss2 = tight_look(n, ao, sss, np.zeros(500), "anime", dent_dir=dent)
    np.testing.assert_allclose(nn, n, atol=1e-15)
    np.testing.assert_array_equal(ao2, ao)
    nn, _, _ = tight_look(n, ao, sss, p, "anime")
    np.testing.assert_allclose(nn, n, atol=1e-15)
    # anime presses harder than realistic, and realistic keeps the SSS drop as its main cue
    a = tight_look(n, ao, sss, np.ones(500), "anime", dent_dir=dent)
    r = tight_look(n, ao, sss, np.ones(500), "realistic", dent_dir=dent)
    assert np.all(a[1] <= r[1]) and np.all(np.abs(a[0] - n).sum(1) >= np.abs(r[0] - n).sum(1) - 1e-12)


def test_tight_look_bad_input():
    with pytest.raises(KisekaeError, match="preset"):
        tight_look([[0, 1, 0]], [1.0], [1.0], [0.5], "cartoon")
    with pytest.raises(KisekaeError, match="preset"):
        tight_look([[0, 1, 0]], [1.0], [1.0], [0.5], {"normal_strength": 2, "ao_strength": 0, "sss_strength": 0})
    with pytest.raises(KisekaeError, match="pressure"):
        tight_look([[0, 1, 0]], [1.0], [1.0], [0.5, 0.5])
    with pytest.raises(KisekaeError, match="normals"):
        tight_look([[0, 0, 0]], [1.0], [1.0], [0.5])
