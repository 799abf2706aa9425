"""Self layers (kisekae.fit.self_layers): the bake on two sheets, the push against analytic planes, NumPy against
Numba, and the stage inside the per-frame correction."""

from pathlib import Path

import numpy as np
import pytest

from kisekae.errors import KisekaeError
from kisekae.fit.pushout import PushParams
from kisekae.fit.self_layers import (SELF_GAP, SelfLayers, bake_self_layers, self_layer_push, self_layer_push_numpy,
                                     self_layer_stage)
from kisekae.fit.surface import SurfaceCandidates, one_ring, surface_runtime
from kisekae.geom.edges import face_edges

UP = np.array([0.0, 0.0, 1.0])


def grid(z, n=6, size=0.02, flip=False, start=0):
    """An n x n vertex grid of spacing ``size`` (m) at height ``z``, normal +Z (-Z when flipped); ids from ``start``."""
    xs = (np.arange(n) - (n - 1) / 2) * size
    v = np.array([[x, y, z] for y in xs for x in xs])
    f = []
    for r in range(n - 1):
        for c in range(n - 1):
            a = r * n + c
            f += [[a, a + 1, a + n + 1], [a, a + n + 1, a + n]]
    f = np.array(f) + start
    return v, (f[:, ::-1] if flip else f)


def two_sheets(gap=0.003, flip_inner=False):
    """An inner sheet at z = 0 and an outer one ``gap`` above it, one mesh; a body plane under both (z = -0.01)."""
    vi, fi = grid(0.0, flip=flip_inner)
    vo, fo = grid(gap, start=len(vi))
    v, f = np.vstack([vi, vo]), np.vstack([fi, fo])
    body = np.array([[-1, -1, -0.01], [1, -1, -0.01], [1, 1, -0.01], [-1, 1, -0.01]], dtype=np.float64)
    return v, f, body, np.tile(UP, (4, 1)), len(vi)


@pytest.mark.parametrize("flip_inner", [False, True])
def test_only_the_outer_sheet_gets_candidates_whatever_the_winding(flip_inner):
    v, f, body, normals, n_inner = two_sheets(flip_inner=flip_inner)
    layers = bake_self_layers(v, f, body, normals)
    has = layers.triangles[:, 0] >= 0
    assert not has[:n_inner].any()  # the inner sheet has nothing beneath it
    assert has[n_inner:].all()  # every outer vertex lies over the inner sheet, 3 mm away
    assert (layers.triangles[has] < len(f) // 2).all() or (layers.triangles[has] >= 0).all()
    cand = layers.triangles[has]
    assert np.all((cand < 0) | (cand < len(f) // 2))  # candidates are inner triangles only
    np.testing.assert_allclose(layers.gap[n_inner:], SELF_GAP)  # 3 mm apart at rest: the gap is capped at 2 mm
    expected = -1 if flip_inner else 1  # the side of the inner triangles' winding the outer sheet is on
    assert np.all(layers.sides[has][cand >= 0] == expected)


@pytest.mark.parametrize("flip", [True, False])
def test_a_double_sided_or_duplicated_cloth_gets_none(flip):
    """Two coincident sheets, wound against each other (a double-sided mesh) or alike (duplicated faces), have no
    order to keep."""
    vi, fi = grid(0.0, flip=flip)
    vo, fo = grid(1e-7, start=len(vi))  # 0.1 um apart: the same cloth, rounded
    body = np.array([[-1, -1, -0.01], [1, -1, -0.01], [1, 1, -0.01]], dtype=np.float64)
    layers = bake_self_layers(np.vstack([vi, vo]), np.vstack([fi, fo]), body, np.tile(UP, (3, 1)))
    assert not len(layers.vertices)
    v, f, body, normals, _ = two_sheets(gap=0.0002)  # 0.2 mm apart: layers
    assert len(bake_self_layers(v, f, body, normals).vertices)


def test_a_single_sheet_and_far_sheets_get_none():
    v, f = grid(0.0)
    body = np.array([[-1, -1, -0.01], [1, -1, -0.01], [1, 1, -0.01]], dtype=np.float64)
    assert not len(bake_self_layers(v, f, body, np.tile(UP, (3, 1))).vertices)  # own neighbours never count
    v, f, body, normals, _ = two_sheets(gap=0.02)  # 2 cm apart: beyond the reach
    assert not len(bake_self_layers(v, f, body, normals).vertices)


@pytest.mark.parametrize("push", [self_layer_push, self_layer_push_numpy])
def test_an_inner_sheet_pushed_through_lifts_the_outer_one_to_its_gap(push):
    v, f, body, normals, n_inner = two_sheets(gap=0.001)  # 1 mm apart at rest: that is their gap
    layers = bake_self_layers(v, f, body, normals)
    np.testing.assert_allclose(layers.gap[n_inner:], 0.001)
    p = v.copy()
    p[:n_inner, 2] += 0.004  # the body push lifted the inner sheet 4 mm: 3 mm above the outer one
    new, moved = push(p, layers, f)
    assert moved[n_inner:].all() and not moved[:n_inner].any()
    np.testing.assert_allclose(new[n_inner:, 2], 0.004 + 0.001, atol=1e-12)  # back outside by the gap
    np.testing.assert_array_equal(new[:, :2], p[:, :2])  # along the normal only
    np.testing.assert_array_equal(new[:n_inner], p[:n_inner])
    same, moved = push(v, layers, f)  # at rest nothing moves
    assert not moved.any()
    np.testing.assert_array_equal(same, v)


def test_numba_equals_numpy_on_a_crumpled_pair_of_sheets():
    rng = np.random.default_rng(5)
    v, f, body, normals, n_inner = two_sheets(gap=0.002)
    layers = bake_self_layers(v, f, body, normals)
    p = v + rng.normal(scale=0.002, size=v.shape)
    a, ma = self_layer_push_numpy(p, layers, f)
    b, mb = self_layer_push(p, layers, f)
    np.testing.assert_array_equal(ma, mb)
    assert ma.any()
    np.testing.assert_allclose(a, b, atol=1e-12)
    ring = one_ring(len(v), face_edges(f))
    np.testing.assert_allclose(self_layer_stage(p, layers, f, ring, numpy=True), self_layer_stage(p, layers, f, ring),
                               atol=1e-12)


def test_the_stage_spreads_a_lift_to_the_neighbours_and_passes_zero_change_nothing():
    v, f, body, normals, n_inner = two_sheets(gap=0.001)
    layers = bake_self_layers(v, f, body, normals)
    ring = one_ring(len(v), face_edges(f))
    p = v.copy()
    p[3 * 6 + 3, 2] += 0.004  # one inner vertex poked up through the outer sheet
    np.testing.assert_array_equal(self_layer_stage(p, layers, f, ring, passes=0), p)
    new = self_layer_stage(p, layers, f, ring, passes=1, smooth=2)
    rise = new[n_inner:, 2] - p[n_inner:, 2]
    assert rise.max() > 0 and (rise >= 0).all()  # the outer sheet only rises
    lifted = np.flatnonzero(rise > 0)
    bare = self_layer_stage(p, layers, f, ring, passes=1, smooth=0)
    assert len(lifted) > np.count_nonzero(bare[n_inner:, 2] - p[n_inner:, 2])  # the smoothing carried it further


def test_the_per_frame_correction_keeps_the_outer_sheet_outside():
    """A two-sheet garment whose inner sheet lies inside a flat body: the body push lifts the inner sheet by the
    margin; without the stage it ends above the outer sheet, with it the outer sheet stays above by its gap."""
    vi, fi = grid(-0.002)
    vo, fo = grid(0.001, start=len(vi))
    v, f = np.vstack([vi, vo]), np.vstack([fi, fo])
    tight = np.r_[np.zeros(len(vi)), np.ones(len(vo))]  # the outer sheet keeps half the margin: the inner passes it
    bv = np.array([[-1, -1, 0.0], [1, -1, 0.0], [1, 1, 0.0], [-1, 1, 0.0]])
    bf = np.array([[0, 1, 2], [0, 2, 3]])
    bn = np.tile(UP, (4, 1))
    cand = SurfaceCandidates(np.tile(np.array([0, 1], dtype=np.int32), (len(v), 1)), 2)
    ring = one_ring(len(v), face_edges(f))
    params = PushParams(margin=0.004, stiffness=1.0, max_push=0.1)
    layers = bake_self_layers(v, f, bv + [0, 0, -0.01], bn)
    n = len(vi)
    for numpy in (False, True):
        plain, _ = surface_runtime(v, cand, ring, bv, bn, bf, params, tightness=tight, numpy=numpy)
        kept, _ = surface_runtime(v, cand, ring, bv, bn, bf, params, tightness=tight, numpy=numpy,
                                  self_layers=(layers, f))
        assert (plain[:n, 2] > plain[n:, 2]).all()  # the inner sheet came out above the outer one
        assert (kept[n:, 2] >= kept[:n, 2] + layers.gap[n:] - 1e-9).all()  # kept in order, by the gap
        assert (kept[:, 2] >= params.margin * 0.5).all()  # both outside the body
        np.testing.assert_allclose(kept[n:, 2], kept[:n, 2] + layers.gap[n:], atol=1e-9)  # and no farther


def test_bad_input_is_named():
    v, f, body, normals, _ = two_sheets()
    layers = bake_self_layers(v, f, body, normals)
    with pytest.raises(KisekaeError, match="garment vertices"):
        self_layer_push(v[:-1], layers, f[:-2])
    with pytest.raises(KisekaeError, match="triangles"):
        self_layer_push(v, layers, f[:-1])
    with pytest.raises(KisekaeError, match="body normals"):
        bake_self_layers(v, f, body, normals[:2])
    with pytest.raises(KisekaeError, match="reach"):
        bake_self_layers(v, f, body, normals, reach=-1.0)
    with pytest.raises(KisekaeError, match="rings"):
        bake_self_layers(v, f, body, normals, rings=0)
    with pytest.raises(KisekaeError, match="passes"):
        self_layer_stage(v, layers, f, one_ring(len(v), face_edges(f)), passes=-1)
    bad = v.copy()
    bad[0, 0] = np.nan
    with pytest.raises(KisekaeError):
        self_layer_push(bad, layers, f)
    assert isinstance(layers, SelfLayers)


def test_the_built_in_garments_are_one_sheet_and_a_suit_is_not():
    from kisekae.avatar import load_builtin_avatar
    from kisekae.fit.runtime import garment_self_layers
    from kisekae.io.mhclo import add_garments

    av = load_builtin_avatar()
    assert garment_self_layers(av, "tights") is None and garment_self_layers(av, "skirt") is None
    samples = Path(__file__).resolve().parent.parent / "src" / "kisekae" / "data" / "samples"
    suit = add_garments(av, [str(samples / "female_casualsuit01.mhclo")])[0]
    layers = garment_self_layers(av, suit)
    # the shirt's hem over the trousers' waistband: a few dozen vertices, all at the waist (y 0.85 to 1.0 m)
    assert 10 < len(layers.vertices) < 200
    y = av.part(suit).mesh.vertices[layers.vertices, 1]
    assert np.all((y > 0.85) & (y < 1.0))
    assert garment_self_layers(av, suit) is layers  # cached
