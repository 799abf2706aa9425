"""The HLSL core, executed on llvmpipe, equals the Python references (kisekae.shaders.conformance)."""

import numpy as np
import pytest

from kisekae.errors import KisekaeError
from kisekae.fit.pushout import PushParams
from kisekae.shaders import conformance as C
from kisekae.shaders import execute as X
from kisekae.shaders.limits import MAX_CAPSULES


@pytest.fixture(scope="module")
def checks():
    return C.run_checks(sources=("constants", "texture", "structured"))


def test_every_check_within_tolerance(checks):
    bad = [f"{c.name}: {c.error:.3g} > {c.tolerance:g}" for c in checks if not c.ok]
    assert not bad, "\n".join(bad)


def test_checks_cover_every_function_and_source(checks):
    names = " ".join(c.name for c in checks)
    for part in ("field distance", "field gradient", "1-D minimisation", "fallbacks", "push-out", "push law",
                 "tension", "tight look", "wound loop", "flat-cost", "morph", "nested", "bound push",
                 "skin push (capsules, then bound)", "wrinkle weights", "wrinkle normal blend", "tight look anime",
                 "tight look realistic", "wound decode article8", "wound decode delta16", "wound decode half",
                 "wound decode delta8", "wound decode float", "body contact crouch one joint a pass",
                 "body contact knee_bend all slots", "body contact synthetic bend 150 all slots",
                 "body contact synthetic bend 180 one joint a pass", "surface push flat sheet (analytic)",
                 "smooth push strip (analytic)", "surface push flat sheet (analytic) curvature 0",
                 "surface push flat sheet (analytic) chord positions",
                 "surface push chord allowance tube (analytic) curvature 1/R",
                 "surface push chord allowance tube (analytic) clearance", "stretch limit pair (analytic)"):
        assert part in names
    for src in ("constants", "texture", "structured"):
        assert f"[{src}]" in names
    for pose in C.SURFACE_POSES:
        for garment in C.SURFACE_GARMENTS:
            assert f"surface push {pose} {garment}" in names and f"smooth push {pose} {garment}" in names
            assert f"surface push {pose} {garment} body curvature" in names
            assert f"stretch limit {pose} {garment} skinned" in names and f"stretch limit {pose} {garment} jittered" in names
            assert f"surface push {pose} {garment} chord b=0 m=0.002 reach=0.1 clearance" in names
            assert f"carry start {pose} {garment} keep 0.9" in names
    for pose in C.POSES:
        assert f"avatar {pose}" in names
        assert f"avatar {pose} bound push" in names and f"avatar {pose} skin push" in names
    # the comparisons are not vacuous
    assert all(c.count > 0 for c in checks if "p=0" not in c.name)


def test_avatar_vectors_span_inside_band_and_outside():
    from kisekae.fit import sdf

    for vec in C.avatar_vectors(C.POSES):
        c = vec["capsules"].astype(np.float64)
        d, _, _ = sdf.capsule_field(vec["points"].astype(np.float64), c[:, 0:3], c[:, 4:7], c[:, 3], c[:, 7])
        assert len(c) >= 15
        assert np.mean(d < 0) > 0.05 and np.mean((d >= 0) & (d < 0.003)) > 0.005 and np.mean(d > 0.003) > 0.05


def test_check_detects_a_wrong_value():
    good = C.Check("x", C._err([1.0, 2.0], [1.0, 2.0]), 1e-6, 2)
    bad = C.Check("x", C._err([1.0, 2.0], [1.0, 2.00001]), 1e-6, 2)
    nan = C.Check("x", C._err([1.0, np.nan], [1.0, 2.0]), 1e-6, 2)
    assert good.ok and not bad.ok and not nan.ok


def test_round_cone_minimize_analytic():
    cap = np.array([0, 0, 0, 0.1, 0, 1, 0, 0.1], np.float32)
    pts = np.array([[0.3, 0.5, 0], [0, -0.5, 0], [0, 0.5, 0.05]], np.float32)
    assert np.allclose(C.round_cone_minimize(pts, cap), [0.2, 0.4, -0.05], atol=1e-9)


def test_gpu_inputs_are_validated():
    caps = C.edge_capsules()
    with pytest.raises(KisekaeError, match="points"):
        X.gpu_capsule_field(np.full((2, 3), np.nan), caps)
    with pytest.raises(KisekaeError, match="capsules"):
        X.gpu_capsule_field(np.zeros((2, 3)), caps[:, :7])
    with pytest.raises(KisekaeError, match="radii"):
        X.gpu_capsule_field(np.zeros((2, 3)), np.where(np.arange(8) == 3, -1.0, caps))
    with pytest.raises(KisekaeError, match="tightness"):
        X.gpu_push_out(np.zeros((3, 3)), caps, tightness=np.zeros(2))
    with pytest.raises(KisekaeError, match="max_push"):
        X.gpu_push_out(np.zeros((3, 3)), caps, PushParams(margin=0.2, max_push=0.1))
    with pytest.raises(KisekaeError, match="source"):
        X.CoreRunner("vertex-colours")
    with pytest.raises(KisekaeError, match="constant arrays"):
        X.gpu_capsule_field(np.zeros((2, 3)), np.resize(caps, (MAX_CAPSULES + 1, 8)))


def test_vertex_texture_layout():
    vals = np.arange(10 * 2, dtype=np.float32).reshape(10, 2)
    tex = X.vertex_texture(vals, 4)
    assert tex.shape == (3, 4, 2)
    for i in range(10):
        assert np.array_equal(tex[i // 4, i % 4], vals[i])
    assert not tex[2, 2:].any()  # padding
    with pytest.raises(KisekaeError, match="width"):
        X.vertex_texture(vals, 0)
    with pytest.raises(KisekaeError, match="values"):
        X.vertex_texture(np.zeros((3, 5)), 4)


def test_blend_wrinkle_normals_analytic():
    from kisekae.shaders.reference import blend_wrinkle_normals

    up = np.array([[0.0, 0.0, 1.0]])
    a = np.array([0.6, 0.0, 0.8])            # slope (0.75, 0)
    b = np.array([0.0, -0.28, 0.96])         # slope (0, -0.291666)
    # weight 0 leaves the base; weight 1 on a flat base gives the map itself
    assert np.allclose(blend_wrinkle_normals([a], [[b]], [[0.0]]), a)
    assert np.allclose(blend_wrinkle_normals(up, [[a]], [[1.0]]), a)
    # slopes add: half of a plus all of b on a flat base
    want = np.array([0.375, -0.28 / 0.96, 1.0])
    assert np.allclose(blend_wrinkle_normals(up, [[a, b]], [[0.5, 1.0]]), want / np.linalg.norm(want))
    # a grazing normal counts with z = 1/64
    g = np.array([1.0, 0.0, 0.0])
    want = np.array([64.0, 0.0, 1.0])
    assert np.allclose(blend_wrinkle_normals(up, [[g]], [[1.0]]), want / np.linalg.norm(want))
    with pytest.raises(KisekaeError, match="weights"):
        blend_wrinkle_normals(up, [[a]], [[1.0, 2.0]])


def test_new_gpu_inputs_are_validated():
    from kisekae.tension.wrinkle import WrinkleMap

    body = np.zeros((4, 3))
    nrm = np.tile([0.0, 1.0, 0.0], (4, 1))
    with pytest.raises(KisekaeError, match="corners"):
        X.gpu_bound_push_out(np.zeros((2, 3)), np.array([[0, 1, 9], [0, 1, 2]]), np.full((2, 3), 1 / 3), body, nrm)
    with pytest.raises(KisekaeError, match="corners"):
        X.gpu_bound_push_out(np.zeros((2, 3)), np.zeros((2, 3)), np.full((2, 3), 1 / 3), body, nrm)
    with pytest.raises(KisekaeError, match="bary"):
        X.gpu_bound_push_out(np.zeros((2, 3)), np.zeros((2, 3), int), np.full((2, 2), 0.5), body, nrm)
    with pytest.raises(KisekaeError, match="body_normals"):
        X.gpu_bound_push_out(np.zeros((2, 3)), np.zeros((2, 3), int), np.full((2, 3), 1 / 3), body, nrm[:3])
    with pytest.raises(KisekaeError, match="max_push"):
        X.gpu_skin_push_out(np.zeros((2, 3)), C.edge_capsules(), np.zeros((2, 3), int), np.full((2, 3), 1 / 3), body,
                            nrm, PushParams(margin=0.2, max_push=0.1))
    with pytest.raises(KisekaeError, match="maps"):
        X.gpu_wrinkle_weights(np.zeros(3), np.zeros(3), [WrinkleMap(f"m{i}") for i in range(9)])
    with pytest.raises(KisekaeError, match="threshold"):
        X.gpu_wrinkle_weights(np.zeros(3), np.zeros(3), [WrinkleMap("m", threshold=1.0)])
    with pytest.raises(KisekaeError, match="source"):
        X.gpu_wrinkle_weights(np.zeros(3), np.zeros(3), [WrinkleMap("m", "shear")])
    with pytest.raises(KisekaeError, match="gain"):
        X.gpu_wrinkle_weights(np.zeros(3), np.zeros(3), [WrinkleMap("m", gain=-1.0)])
    with pytest.raises(KisekaeError, match="normals"):
        X.gpu_blend_wrinkle_normals(np.zeros((2, 3)), np.zeros((2, 5, 3)), np.zeros((2, 5)))
    with pytest.raises(KisekaeError, match="preset"):
        X.gpu_tight_look(nrm, np.ones(4), np.ones(4), np.zeros(4), "cartoon")
    with pytest.raises(KisekaeError, match="tightness"):
        X.gpu_tight_look(nrm, np.ones(4), np.ones(4), np.zeros(4), tightness=np.full(4, 1.5))
    with pytest.raises(KisekaeError, match="mode"):
        X.runner("constants", "tension").run("pushout", 1)


def test_constant_arrays_hold_a_95_capsule_rig():
    """Every capsule of a rig as big as the built-in avatar's fitted one (95) reaches the shader through the
    constant arrays: a point next to capsule i finds capsule i, at the reference distance (the arrays held 64)."""
    from kisekae.fit import sdf

    n = 95
    x = 0.1 * np.arange(n)
    caps = np.zeros((n, 8))
    caps[:, 0], caps[:, 3] = x, 0.02
    caps[:, 4], caps[:, 5], caps[:, 7] = x, 0.05, 0.02
    pts = np.stack([x, np.full(n, 0.025), np.full(n, 0.025)], axis=1)
    d, _, nearest = X.gpu_capsule_field(pts, caps)
    ref = sdf.capsule_distance(pts, caps[:, 0:3], caps[:, 4:7], caps[:, 3], caps[:, 7])[0].min(axis=1)
    assert np.array_equal(nearest, np.arange(n))
    assert np.abs(d - ref).max() < 1e-6 and np.allclose(ref, 0.005, atol=1e-9)
    with pytest.raises(KisekaeError, match=f"has {MAX_CAPSULES + 1} capsules.*hold {MAX_CAPSULES}"):
        X.gpu_capsule_field(pts[:2], np.concatenate([caps, caps])[: MAX_CAPSULES + 1])


def test_surface_gpu_inputs_are_validated():
    from kisekae.fit.surface import one_ring

    ring2 = one_ring(2, [[0, 1]])
    two = np.array([[0.0, 0.0, 0.0], [0.1, 0.0, 0.0]])
    with pytest.raises(KisekaeError, match="stretch"):
        X.gpu_stretch_limit(two, two, ring2, -0.1)
    with pytest.raises(KisekaeError, match="points"):
        X.gpu_stretch_limit(two[:1], two, ring2)
    with pytest.raises(KisekaeError, match="ring"):
        X.gpu_stretch_limit(two, two, (np.array([0, 1, 3]), np.array([1, 0])))
    with pytest.raises(KisekaeError, match="carry keep"):
        X.gpu_carry_start(two, two, 1.5)
    with pytest.raises(KisekaeError, match="previous correction"):
        X.gpu_carry_start(two, two[:1], 0.9)
    np.testing.assert_allclose(X.gpu_carry_start(two, [[0.0, 0.01, 0.0], [0.0, 0.0, -0.02]], 0.5),
                               [[0.0, 0.005, 0.0], [0.1, 0.0, -0.01]], atol=1e-7)

    body = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [1.0, 1.0, 0.0]])
    nrm = np.tile([0.0, 0.0, 1.0], (4, 1))
    faces = np.array([[0, 1, 2], [1, 3, 2]])
    pts = np.array([[0.2, 0.2, -0.01], [0.7, 0.7, 0.001]])
    with pytest.raises(KisekaeError, match="triangles"):
        X.gpu_surface_push(pts, np.zeros((2, X.SURFACE_CANDIDATES + 1, 3), int), body, nrm)  # more than the core reads
    with pytest.raises(KisekaeError, match="triangles"):
        X.gpu_surface_push(pts, np.array([[0, 2], [1, 0]]), body, nrm, faces=faces)
    with pytest.raises(KisekaeError, match="triangles"):
        X.gpu_surface_push(pts, np.full((2, 1, 3), 4), body, nrm)
    with pytest.raises(KisekaeError, match="reach"):
        X.gpu_surface_push(pts, np.zeros((2, 1, 3), int), body, nrm, reach=-1.0)
    # the chord allowance: chords per vertex (finite, >= 0) and the body curvature per body vertex with them
    tri = np.zeros((2, 1, 3), int)
    with pytest.raises(KisekaeError, match="curvature"):
        X.gpu_surface_push(pts, tri, body, nrm, chord=[0.01, 0.01])
    for chord in ([0.01], [0.01, -0.01], [0.01, np.nan]):
        with pytest.raises(KisekaeError, match="chord"):
            X.gpu_surface_push(pts, tri, body, nrm, chord=chord, curvature=np.zeros(4))
    for kv in (np.zeros(3), [0.0, 0.0, -1.0, 0.0], [0.0, np.inf, 0.0, 0.0]):
        with pytest.raises(KisekaeError, match="curvature"):
            X.gpu_surface_push(pts, tri, body, nrm, chord=[0.01, 0.01], curvature=kv)
    for bad in (np.array([[0, 1, 4]]), np.array([[0, 1]]), np.array([[0.0, 1.0, 2.0]])):
        with pytest.raises(KisekaeError, match="faces"):
            X.gpu_body_curvature(body, nrm, bad)
    np.testing.assert_array_equal(X.gpu_body_curvature(body, nrm, faces), np.zeros(4))  # flat
    assert X.gpu_body_curvature(np.zeros((0, 3)), np.zeros((0, 3)), np.zeros((0, 3), int)).shape == (0,)
    bent = nrm.copy()
    bent[3] = (0.6, 0.0, 0.8)  # |n3 - n_j| = sqrt(0.4) over its two edges of length 1 (to vertices 1 and 2)
    kv = X.gpu_body_curvature(body, bent, faces)
    np.testing.assert_allclose(kv, [0.0, np.sqrt(0.4), np.sqrt(0.4), np.sqrt(0.4)], rtol=1e-6)
    # s = z - min(kappa L^2 / 8, 3 mm), kappa = kv blended at the closest point: (0.2, 0.2) in triangle (0, 1, 2) has
    # barycentrics (0.6, 0.2, 0.2), so kappa = 0.4 sqrt(0.4); (0.7, 0.7) in (1, 3, 2) has kappa = sqrt(0.4), capped
    cand = faces[np.array([[0], [1]])]
    lawful = PushParams(margin=0.004, stiffness=1.0, max_push=0.1)
    flat = X.gpu_surface_push(pts, cand, body, bent, lawful)
    got = X.gpu_surface_push(pts, cand, body, bent, lawful, chord=[0.2, 0.2], curvature=kv)
    np.testing.assert_allclose(flat[2] - got[2], [0.4 * np.sqrt(0.4) * 0.04 / 8.0, 0.003], atol=1e-7)
    same = X.gpu_surface_push(pts, cand, body, bent, lawful, chord=[0.0, 0.0], curvature=kv)
    for u, v in zip(same, flat):
        np.testing.assert_array_equal(u, v)
    # fewer candidates than KISEKAE_SURFACE_CANDIDATES are padded with the first; ids or corners alike
    params = PushParams(margin=0.004, stiffness=1.0, max_push=0.1)
    a = X.gpu_surface_push(pts, np.array([[0, 1], [1, 0]]), body, nrm, params, faces=faces)
    b = X.gpu_surface_push(pts, faces[np.array([[0, 1], [1, 0]])], body, nrm, params)
    for u, v in zip(a, b):
        np.testing.assert_array_equal(u, v)
    np.testing.assert_allclose(a[0], [[0.2, 0.2, 0.004], [0.7, 0.7, 0.004]], atol=1e-7)
    ring = one_ring(3, np.array([[0, 1], [1, 2]]))
    with pytest.raises(KisekaeError, match="ring"):
        X.gpu_smooth_push(np.zeros((3, 3)), (ring[0][:-1], ring[1]), 1)
    with pytest.raises(KisekaeError, match="ring"):
        X.gpu_smooth_push(np.zeros((3, 3)), (ring[0], ring[1] + 3), 1)
    with pytest.raises(KisekaeError, match="passes"):
        X.gpu_smooth_push(np.zeros((3, 3)), ring, -1)
    d = np.array([[0.0, 0.0, 0.01], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0]])
    np.testing.assert_array_equal(X.gpu_smooth_push(d, ring, 0), d.astype(np.float32))
    # an isolated vertex (empty ring) keeps its displacement
    lone = one_ring(3, np.array([[0, 1]]))
    np.testing.assert_allclose(X.gpu_smooth_push(d + [0.0, 0.0, 0.002], lone, 3)[2], [0.0, 0.0, 0.002])
