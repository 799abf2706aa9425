"""Layers in the per-frame path (kisekae.fit.layer_push, runtime_pose(layers=True)): analytic cases on planes,
Numba against the NumPy reference, the bake, and the built-in tights under the skirt."""

import numpy as np
import pytest

from kisekae.errors import KisekaeError
from kisekae.fit.layer_push import LAYER_FADE, LAYER_REACH, layer_push
from kisekae.fit.pushout import PushParams, push_amount
from kisekae.fit.surface import SurfaceCandidates, one_ring


def _sheet(z, size=0.5, n=6):
    """A flat square grid at height z (normals +Z): vertices, triangles."""
    g = np.linspace(-size, size, n)
    xx, yy = np.meshgrid(g, g)
    v = np.stack([xx.ravel(), yy.ravel(), np.full(xx.size, z)], axis=1)
    f = []
    for i in range(n - 1):
        for j in range(n - 1):
            a = i * n + j
            f += [[a, a + 1, a + n + 1], [a, a + n + 1, a + n]]
    return v, np.array(f)


def _all_candidates(n_points, faces):
    k = min(len(faces), 64)
    return SurfaceCandidates(np.tile(np.arange(k, dtype=np.int32), (n_points, 1)), len(faces))


@pytest.mark.parametrize("numpy", [True, False])
def test_outer_sheet_under_the_inner_one_is_lifted_by_the_push_law(numpy):
    """A flat outer sheet 1 mm under a flat inner one: every vertex is pushed up by the law (gap - d) to
    stiffness * margin above it, then, the smoothing of equal pushes changing nothing, pushed again by the law's
    band from there (the second push of the moved vertices, as in the body push)."""
    inner, fi = _sheet(0.0)
    outer, fo = _sheet(-0.001, size=0.3, n=4)
    prm = PushParams()
    ring = one_ring(len(outer), np.unique(np.sort(np.concatenate([fo[:, [0, 1]], fo[:, [1, 2]], fo[:, [2, 0]]]),
                                                  axis=1), axis=0))
    new, push = layer_push(outer, _all_candidates(len(outer), fi), ring, inner, fi, prm, numpy=numpy)
    first = push_amount(np.array([-0.001]), prm.margin, prm.stiffness, prm.max_push)[0]
    want = first + push_amount(np.array([-0.001 + first]), prm.margin, prm.stiffness, prm.max_push)[0]
    assert 0.002 < want < 0.003
    np.testing.assert_allclose(push, want, atol=1e-12)
    np.testing.assert_allclose(new[:, 2], -0.001 + want, atol=1e-12)
    np.testing.assert_allclose(new[:, :2], outer[:, :2], atol=1e-12)


def test_clear_outer_sheet_and_far_layers_are_left_alone():
    inner, fi = _sheet(0.0)
    prm = PushParams()
    for z in (prm.margin + 1e-4, -(LAYER_REACH + 0.002)):  # clear above, or beyond the layer reach below
        outer, fo = _sheet(z, size=0.3, n=4)
        ring = one_ring(len(outer), np.array([[0, 1]]))
        new, push = layer_push(outer, _all_candidates(len(outer), fi), ring, inner, fi, prm)
        np.testing.assert_array_equal(new, outer)
        assert not push.any()


def test_deep_moves_fade_out():
    """A sheet 6 mm under (the two pushes ask 7.5 mm) is lifted only in part; 9 mm under (within the reach, asking
    more than twice LAYER_FADE): not at all."""
    inner, fi = _sheet(0.0)
    prm = PushParams()
    ring = one_ring(16, np.array([[0, 1]]))
    outer, _ = _sheet(-0.006, size=0.3, n=4)
    push = layer_push(outer, _all_candidates(16, fi), ring, inner, fi, prm)[1]
    first = push_amount(np.array([-0.006]), prm.margin, prm.stiffness, prm.max_push)[0]
    ask = first + push_amount(np.array([-0.006 + first]), prm.margin, prm.stiffness, prm.max_push)[0]
    assert LAYER_FADE < ask < 2 * LAYER_FADE
    np.testing.assert_allclose(push, ask * (2.0 - ask / LAYER_FADE), atol=1e-12)
    outer, _ = _sheet(-0.009, size=0.3, n=4)
    assert not layer_push(outer, _all_candidates(16, fi), ring, inner, fi, prm)[1].any()


def test_numba_equals_numpy_on_a_bumpy_layer():
    rng = np.random.default_rng(3)
    inner, fi = _sheet(0.0, n=9)
    inner[:, 2] += rng.normal(0, 0.002, len(inner))
    outer, fo = _sheet(0.0, size=0.4, n=7)
    outer[:, 2] += rng.normal(0, 0.002, len(outer))
    edges = np.unique(np.sort(np.concatenate([fo[:, [0, 1]], fo[:, [1, 2]], fo[:, [2, 0]]]), axis=1), axis=0)
    ring = one_ring(len(outer), edges)
    cand = SurfaceCandidates(np.array([rng.choice(len(fi), 12, replace=False) for _ in range(len(outer))],
                                      np.int32), len(fi))
    a = layer_push(outer, cand, ring, inner, fi, PushParams(skirt_bias=0.3), numpy=True)
    b = layer_push(outer, cand, ring, inner, fi, PushParams(skirt_bias=0.3))
    assert a[1].any()
    np.testing.assert_allclose(a[0], b[0], atol=1e-9)


def test_bad_input_is_named():
    inner, fi = _sheet(0.0)
    outer, _ = _sheet(-0.001, n=3)
    ring = one_ring(len(outer), np.array([[0, 1]]))
    cand = _all_candidates(len(outer), fi)
    with pytest.raises(KisekaeError, match="layer smoothing passes"):
        layer_push(outer, cand, ring, inner, fi, passes=-1)
    bad = outer.copy()
    bad[0, 0] = np.nan
    with pytest.raises(KisekaeError, match="outer garment"):
        layer_push(bad, cand, ring, inner, fi)


@pytest.fixture(scope="module")
def contact_avatar():
    from kisekae.avatar.builtin import load_builtin_avatar
    from kisekae.avatar.contact import GAP, apply_contact

    return apply_contact(load_builtin_avatar(), GAP)


def test_bake_finds_the_tights_under_the_skirt(contact_avatar):
    from kisekae.avatar.poses import named_pose
    from kisekae.fit.layer_push import bake_layer_candidates
    from kisekae.geom.closest import closest_point_triangles_numpy

    av = contact_avatar
    pose = named_pose(av.skeleton, "stand")
    cand = bake_layer_candidates(av, "skirt", "tights", poses=[pose], k=4)
    tights, skirt = av.part("tights"), av.part("skirt")
    assert cand.triangles.shape == (skirt.mesh.n_vertices, 4) and cand.n_body_faces == len(tights.mesh.faces)
    m = pose.skinning_matrices(av.skeleton)
    t, s = tights.posed(m).astype(np.float64), skirt.posed(m).astype(np.float64)
    # the first candidate is the nearest tights triangle (brute force over all of them)
    f = tights.mesh.faces
    d = np.stack([np.linalg.norm(s - closest_point_triangles_numpy(s, *[np.repeat(t[f[i, c]][None], len(s), 0)
                                                                         for c in range(3)])[0], axis=1)
                  for i in range(len(f))], axis=1)
    np.testing.assert_allclose(np.linalg.norm(s - closest_point_triangles_numpy(
        s, *[t[f[cand.triangles[:, 0], c]] for c in range(3)])[0], axis=1), d.min(axis=1), atol=1e-9)
    with pytest.raises(KisekaeError, match="beneath itself"):
        bake_layer_candidates(av, "skirt", "skirt", poses=[pose])


def test_runtime_layers_keep_the_skirt_over_the_tights(contact_avatar):
    """Stand: worn alone, 57 skirt vertices lie under the corrected tights and 71 skirt edges pass through them;
    worn as a stack (layers=True) almost none, the tights are unchanged, and the skirt stays out of the body."""
    from kisekae.avatar.poses import named_pose
    from kisekae.fit.layers import LayerSurface, layer_stats
    from kisekae.fit.runtime import runtime_pose
    from kisekae.qa.check import check_pose

    av = contact_avatar
    pose = named_pose(av.skeleton, "stand")
    res = {lay: runtime_pose(av, pose, ["tights", "skirt"], layers=lay) for lay in (False, True)}
    np.testing.assert_array_equal(res[True]["tights"][0], res[False]["tights"][0])
    stats = {}
    for lay, r in res.items():
        t, s = (np.asarray(r[g][0], np.float64) for g in ("tights", "skirt"))
        stats[lay] = layer_stats(s, av.part("skirt").mesh.edges, [LayerSurface(t, av.part("tights").mesh.faces)])
        rec = check_pose(av, pose, ["skirt"], posed_garments={"skirt": s})[0]
        assert rec["inside_count"] == 0 and rec["edge_crossings"] == 0 and rec["flipped_faces"] == 0
        assert rec["strain_max"] < 0.2
    assert stats[False]["under_lower_layers"] > 40 and stats[False]["layer_crossings"] > 50
    assert stats[True]["under_lower_layers"] <= stats[False]["under_lower_layers"] // 5
    assert stats[True]["layer_crossings"] <= stats[False]["layer_crossings"] // 5
    with pytest.raises(KisekaeError, match="layers need"):
        runtime_pose(av, pose, ["tights", "skirt"], method="capsules", layers=True)


def test_check_cli_runtime_layered(tmp_path):
    import json

    from kisekae.cli import main

    out = tmp_path / "c.json"
    assert main(["check", "--runtime", "--layered", "--pose", "stand", "--garment", "tights", "--garment", "skirt",
                 "--json", str(out)]) == 0
    recs = [r for r in json.loads(out.read_text()) if r["stage"] == "runtime"]
    by = {r["garment"]: r for r in recs}
    assert by["tights"]["under_lower_layers"] == 0 and by["tights"]["layered"] is True
    assert by["skirt"]["under_lower_layers"] < 20 and by["skirt"]["layer_crossings"] < 20


def test_fit_layered_writes_the_layer_bake(tmp_path):
    """kisekae fit --layered writes OUTER.over.INNER.surface.json + .bytes: the skirt's candidates and its samples'
    candidates on the tights' triangles, loadable with the tights as the body."""
    from kisekae.avatar.builtin import load_builtin_avatar
    from kisekae.cli import main
    from kisekae.fit.runtime import garment_samples
    from kisekae.shaders import surface_bake as sb

    assert main(["fit", "--pose", "stand", "--garment", "tights", "--garment", "skirt", "--layered",
                 "-o", str(tmp_path)]) == 0
    head, binary = sb.layer_bake_paths(tmp_path, "skirt", "tights")
    assert head.name == "skirt.over.tights.surface.json" and binary.exists()
    assert not (tmp_path / "tights.over.skirt.surface.json").exists()
    av = load_builtin_avatar()
    tights, skirt = av.part("tights").mesh, av.part("skirt").mesh
    bake = sb.load_surface_bake(head, skirt.n_vertices, tights.n_vertices)
    assert bake["corners"].shape[0] == skirt.n_vertices and bake["corners"].max() < tights.n_vertices
    assert bake["n_body_triangles"] == len(tights.faces)
    assert len(bake["sample_chord"]) == len(garment_samples(av, "skirt"))
    with pytest.raises(KisekaeError, match="baked for a body of 2674 vertices"):
        sb.load_surface_bake(head, skirt.n_vertices, av.body.mesh.n_vertices)


def test_layered_auto_starts_from_the_layered_per_frame_result(contact_avatar):
    """Over a fixed inner garment, ``auto`` starts from the per-frame path worn as a stack (the layer push out of
    the inner garment's per-frame result), pushed once more out of the fixed inner garment: in the stand that is
    clean, so it is the result."""
    from kisekae.avatar.poses import named_pose
    from kisekae.fit.fix import fix_pose, params_for
    from kisekae.fit.layer_push import layer_push
    from kisekae.fit.runtime import garment_ring, layer_candidates, layer_lift, runtime_pose

    av = contact_avatar
    pose = named_pose(av.skeleton, "stand")
    fixed = fix_pose(av, pose, ["tights", "skirt"], layered=True)
    assert fixed["tights"].metrics["fix_method"] == "runtime"
    assert fixed["skirt"].metrics["fix_method"] == "runtime-layered"
    shown = runtime_pose(av, pose, ["tights", "skirt"], layers=True)
    np.testing.assert_allclose(fixed["tights"].positions, shown["tights"][0], atol=1e-6)
    tights = av.part("tights").mesh
    want = layer_push(shown["skirt"][0], layer_candidates(av, "skirt", "tights"), garment_ring(av, "skirt"),
                      shown["tights"][0], tights.faces, params_for("skirt", None), inner_weld=tights.weld,
                      lift=layer_lift(av, "skirt", "tights"))[0]
    np.testing.assert_allclose(fixed["skirt"].positions, want, atol=1e-5)
    assert fixed["skirt"].metrics["layer_crossings"] == 0
