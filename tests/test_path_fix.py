"""The garment carried from the rest pose (kisekae.fit.path_fix): kernels against NumPy references, an analytic
sheet-over-sphere case, invariance, and the fix on the avatar."""

import numpy as np
import pytest

from conftest import icosphere
from kisekae.errors import KisekaeError
from kisekae.fit.path_fix import (PathParams, carry_garment, mesh_pairs, mesh_pairs_numpy, project_behind,
                                  project_behind_numpy, project_front, project_front_numpy)
from kisekae.fit.surface import one_ring

R = 0.1


def sheet(n=16, half=0.2, y=0.0):
    """A flat square sheet in the xz plane at height ``y``, normals up: vertices, faces, edges."""
    g = np.linspace(-half, half, n)
    xx, zz = np.meshgrid(g, g, indexing="ij")
    v = np.stack([xx.ravel(), np.full(n * n, y), zz.ravel()], 1)
    idx = np.arange(n * n).reshape(n, n)
    a, b, c, d = idx[:-1, :-1].ravel(), idx[1:, :-1].ravel(), idx[:-1, 1:].ravel(), idx[1:, 1:].ravel()
    f = np.concatenate([np.stack([a, c, b], 1), np.stack([b, c, d], 1)]).astype(np.int64)
    e = np.unique(np.sort(np.concatenate([f[:, [0, 1]], f[:, [1, 2]], f[:, [2, 0]]]), axis=1), axis=0)
    return v, f, e


def rising_sphere(top, steps, subdiv=2):
    """A sphere below the sheet rising until its centre is ``top`` above the sheet: bodies of each step."""
    v, f = icosphere(subdiv, R)
    start = -R - 0.03
    return [v + np.array([0.0, start + (top - start) * k / steps, 0.0]) for k in range(steps + 1)], f


def carry(bodies, bf, sv, sf, se, params=None, numpy=False, shift=0.0):
    n = len(sv)
    ring = one_ring(n, se)
    steps = len(bodies) - 1
    return carry_garment([b + shift for b in bodies[1:]], bf, [sv + shift] * steps, sf, np.arange(n), ring,
                         params or PathParams(steps=steps), 1.0, start=(bodies[0] + shift, sv + shift), numpy=numpy)


def test_pairs_and_projections_match_numpy():
    bodies, bf = rising_sphere(-0.005, 1)
    sv, sf, se = sheet()
    body = bodies[-1]
    a = mesh_pairs(sv, body, bf, 0.02)
    b = mesh_pairs_numpy(sv, body, bf, 0.02)
    assert len(a[0]) > 10
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)
    c = mesh_pairs(body, sv, sf, 0.02)
    d = mesh_pairs_numpy(body, sv, sf, 0.02)
    for x, y in zip(c, d):
        np.testing.assert_array_equal(x, y)
    for fn, ref, args in (
            (project_front, project_front_numpy, (sv, a[0], body, bf, a[1], 0.002, 1.0)),
            (project_behind, project_behind_numpy, (body, c[0], sv, sf, c[1], -np.ones(len(c[0])),
                                                    np.full(len(c[0]), 0.002)))):
        acc1, cnt1 = np.zeros_like(sv), np.zeros(len(sv))
        acc2, cnt2 = np.zeros_like(sv), np.zeros(len(sv))
        fn(*args, acc1, cnt1)
        ref(*args, acc2, cnt2)
        assert cnt1.sum() > 0
        np.testing.assert_allclose(acc1, acc2, atol=1e-14)
        np.testing.assert_allclose(cnt1, cnt2, atol=1e-14)


@pytest.mark.parametrize("numpy_path", [False, True])
def test_sheet_stays_on_top_of_a_sphere_that_rises_through_it(numpy_path):
    # the sphere ends with its centre 6 cm above the sheet: a fix that looks at the last pose alone pushes the
    # sheet's middle out of the sphere's nearest side, which for points below the centre is downwards
    top = 0.06
    bodies, bf = rising_sphere(top, 12, subdiv=1 if numpy_path else 2)
    sv, sf, se = sheet(10 if numpy_path else 16)
    y = carry(bodies, bf, sv, sf, se, numpy=numpy_path)
    centre = np.array([0.0, top, 0.0])
    r = np.linalg.norm(y - centre, axis=1)
    assert r.min() > 0.95 * R  # every vertex outside the sphere (the mesh sphere lies within R)
    middle = np.linalg.norm(sv[:, [0, 2]], axis=1) < 0.5 * R
    assert middle.sum() > 0
    assert np.all(y[middle, 1] > top + 0.25 * R)  # carried over the top, not pushed out of the bottom
    plain_nearest = sv[middle, 1] < top  # the same vertices lie below the centre where the sphere ends
    assert plain_nearest.all()


def test_no_contact_leaves_the_garment_and_translation_does_not_matter():
    bodies, bf = rising_sphere(-R - 0.02, 6)  # stays 2 cm below the sheet
    sv, sf, se = sheet()
    np.testing.assert_allclose(carry(bodies, bf, sv, sf, se), sv, atol=1e-7)  # float32 steps around vertex 0
    steps = []
    carry_garment(bodies[1:], bf, [sv] * 6, sf, np.arange(len(sv)), one_ring(len(sv), se), PathParams(steps=6),
                  start=(bodies[0], sv), on_step=lambda k, y: steps.append((k, y)))
    assert [k for k, _ in steps] == list(range(6))
    np.testing.assert_allclose(steps[-1][1], sv, atol=1e-7)
    bodies, bf = rising_sphere(0.03, 8)
    y = carry(bodies, bf, sv, sf, se)
    y2 = carry(bodies, bf, sv, sf, se, shift=np.array([10.0, -4.0, 6.0]))
    np.testing.assert_allclose(y2 - np.array([10.0, -4.0, 6.0]), y, atol=1e-6)


def test_bad_settings_and_inputs_are_named():
    bodies, bf = rising_sphere(0.0, 2, subdiv=1)
    sv, sf, se = sheet(6)
    for bad, word in (({"steps": 0}, "steps"), ({"radius": 0.001}, "radius"), ({"need": np.inf}, "need"),
                      ({"screen": -1.0}, "screen")):
        with pytest.raises(KisekaeError, match=word):
            carry(bodies, bf, sv, sf, se, params=PathParams(**bad))
    with pytest.raises(KisekaeError, match="bodies"):
        carry_garment(bodies[1:], bf, [sv], sf, np.arange(len(sv)), one_ring(len(sv), se))
    with pytest.raises(KisekaeError, match="step 2"):
        carry_garment([bodies[1], bodies[2][:-1]], bf, [sv, sv], sf, np.arange(len(sv)), one_ring(len(sv), se))


def test_path_fix_on_the_crouch_keeps_the_cloth_better_than_the_exact_solver(avatar):
    """Same run: the exact solver and the carried garment with its exact finish, both to 0 vertices inside; the
    carried one turns fewer faces over and stretches its edges less."""
    from kisekae.avatar.poses import named_pose
    from kisekae.fit.fix import fix_pose
    from kisekae.qa.check import check_pose

    av = avatar.with_body_contact()
    pose = named_pose(av.skeleton, "crouch")
    recs = {}
    for method in ("exact", "path"):
        fixed = fix_pose(av, pose, ["skirt"], method=method)
        recs[method] = check_pose(av, pose, ["skirt"], posed_garments={"skirt": fixed["skirt"].positions})[0]
        assert fixed["skirt"].metrics["max_push_m"] <= 0.1 + 1e-6
    assert recs["path"]["inside_count"] == recs["exact"]["inside_count"] == 0
    assert recs["path"]["flipped_faces"] < recs["exact"]["flipped_faces"]
    assert recs["path"]["strain_p99"] < recs["exact"]["strain_p99"]
