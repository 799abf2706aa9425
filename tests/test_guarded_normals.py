"""Guarded vertex normals (kisekae.geom.guarded_normals): analytic weights, the fold they leave out, NumPy = Numba,
bad input, and the per-frame path's use of them."""

import numpy as np
import pytest
from conftest import icosphere

from kisekae.errors import KisekaeError
from kisekae.geom.guarded_normals import (GUARD_FULL, GUARD_OFF, face_guard_weights, guarded_vertex_normals,
                                          guarded_vertex_normals_numpy)
from kisekae.geom.normals import vertex_normals


def _tilted_triangles(angles_deg):
    """One triangle per angle, its normal +z turned by the angle about the x axis (a hinge along x), all on separate
    vertices; reference normals +z everywhere."""
    v, f = [], []
    for i, a in enumerate(np.radians(angles_deg)):
        base = len(v)
        n = np.array([0.0, -np.sin(a), np.cos(a)])  # the normal turned about +x
        u = np.array([1.0, 0.0, 0.0])
        w = np.cross(n, u)  # u x w = n: counter-clockwise about n
        o = np.array([0.0, 0.0, float(i)])
        v += [o, o + 0.02 * u, o + 0.03 * w]
        f.append([base, base + 1, base + 2])
    return np.array(v), np.array(f), np.tile([0.0, 0.0, 1.0], (len(v), 1))


def test_weights_follow_the_cosine_ramp():
    angles = [0.0, 45.0, 89.0, 95.0, 100.0, 105.0, 110.0, 160.0, 180.0]
    v, f, r = _tilted_triangles(angles)
    cos = np.cos(np.radians(angles))
    want = np.minimum(np.maximum((cos - GUARD_OFF) / (GUARD_FULL - GUARD_OFF), 0.0), 1.0)
    np.testing.assert_allclose(face_guard_weights(v, f, r), want, atol=1e-12)
    assert face_guard_weights(v, f, r)[3] == pytest.approx((np.cos(np.radians(95.0)) + 0.3) / 0.3)
    # other thresholds
    np.testing.assert_allclose(face_guard_weights(v, f, r, off=0.0, full=0.5),
                               np.clip(cos / 0.5, 0.0, 1.0), atol=1e-12)


def test_convex_mesh_equals_plain_normals():
    v, f = icosphere(2, 0.1)
    v, f = np.asarray(v, np.float64), np.asarray(f)
    r = vertex_normals(v, f).astype(np.float64)
    np.testing.assert_allclose(guarded_vertex_normals(v, f, r), vertex_normals(v, f, dtype=np.float64), atol=1e-12)
    # the reference's length and small errors in it do not matter where every triangle agrees
    noisy = (r + np.random.default_rng(3).normal(0.0, 0.05, r.shape)) * 7.0
    np.testing.assert_allclose(guarded_vertex_normals(v, f, noisy), vertex_normals(v, f, dtype=np.float64),
                               atol=1e-12)


def _fan(fold_height):
    """A flat hexagonal fan around vertex 0 at the origin (normals +z), its outer vertex 1 pulled across the centre
    and lifted by ``fold_height``: the two triangles at vertex 1 turn inside out."""
    ang = np.radians(np.arange(6) * 60.0)
    v = np.vstack([[0.0, 0.0, 0.0], np.c_[0.05 * np.cos(ang), 0.05 * np.sin(ang), np.zeros(6)]])
    f = np.array([[0, 1 + i, 1 + (i + 1) % 6] for i in range(6)])
    v[1] = (-0.03, 0.0, fold_height)
    return v, f


def test_a_fold_is_left_out():
    v, f = _fan(0.04)
    r = np.tile([0.0, 0.0, 1.0], (len(v), 1))
    plain = vertex_normals(v, f, dtype=np.float64)[0]
    guarded = guarded_vertex_normals(v, f, r)[0]
    w = face_guard_weights(v, f, r)
    assert w[0] == 0.0 and w[5] == 0.0 and np.all(w[1:5] == 1.0)
    # the guarded normal is the sum over the four untouched triangles alone: +z; the plain one tilts away
    np.testing.assert_allclose(guarded, [0.0, 0.0, 1.0], atol=1e-12)
    assert plain @ [0.0, 0.0, 1.0] < 0.9


def test_all_left_out_takes_the_reference():
    v, f = icosphere(1, 0.1)
    v, f = np.asarray(v, np.float64), np.asarray(f)
    r = -3.0 * vertex_normals(v, f).astype(np.float64)  # every triangle faces away from its reference
    got = guarded_vertex_normals(v, f, r)
    np.testing.assert_allclose(got, r / np.linalg.norm(r, axis=1, keepdims=True), atol=1e-12)
    np.testing.assert_allclose(guarded_vertex_normals_numpy(v, f, r), got, atol=1e-12)


def test_numba_equals_numpy_on_a_crumpled_sphere():
    rng = np.random.default_rng(11)
    v, f = icosphere(3, 0.1)
    v, f = np.asarray(v, np.float64), np.asarray(f)
    r = vertex_normals(v, f).astype(np.float64)
    crumpled = v + rng.normal(0.0, 0.006, v.shape)  # a share of the small triangles turn over
    w = face_guard_weights(crumpled, f, r)
    assert (w == 0.0).any() and ((w > 0.0) & (w < 1.0)).any() and (w == 1.0).any()
    for off, full in ((GUARD_OFF, GUARD_FULL), (-0.8, 0.6)):
        a = guarded_vertex_normals(crumpled, f, r, off=off, full=full)
        b = guarded_vertex_normals_numpy(crumpled, f, r, off=off, full=full)
        assert np.abs(a - b).max() <= 1e-12
        np.testing.assert_allclose(np.linalg.norm(a, axis=1), 1.0, atol=1e-12)


def test_bad_input():
    v, f = icosphere(1, 0.1)
    v, f = np.asarray(v, np.float64), np.asarray(f)
    r = vertex_normals(v, f).astype(np.float64)
    bad = r.copy()
    bad[3, 1] = np.nan
    with pytest.raises(KisekaeError, match="reference normals"):
        guarded_vertex_normals(v, f, bad)
    with pytest.raises(KisekaeError, match="reference normals"):
        guarded_vertex_normals_numpy(v, f, r[:-1])
    with pytest.raises(KisekaeError, match="normal guard"):
        guarded_vertex_normals(v, f, r, off=0.2, full=0.1)
    with pytest.raises(KisekaeError, match="normal guard"):
        face_guard_weights(v, f, r, off=-1.5, full=0.0)
    nan_v = v.copy()
    nan_v[0, 0] = np.inf
    with pytest.raises(KisekaeError, match="vertices"):
        guarded_vertex_normals(nan_v, f, r)


def test_the_deep_squat_belly_fold(avatar):
    """On the contact body in benchmarks/poses' deep squat, the joint planes fold the belly's fans: plain normals of
    34 body vertices point away from their skinned normals (belly vertex 4117 at cos -0.66, whose normal drove cloth
    into the body, docs/fit.md); the guarded ones of at most 4, 4117 among the good ones."""
    from pathlib import Path

    from kisekae.avatar.contact import apply_contact, contact_gap
    from kisekae.avatar.poses import load_pose_file
    from kisekae.fit.fix import skinned_normals
    from kisekae.fit.runtime import body_normals

    av = apply_contact(avatar, contact_gap(True), correctives="auto")
    pose = load_pose_file(av.skeleton, Path(__file__).parents[1] / "benchmarks" / "poses" / "deep_squat.json")
    m = pose.skinning_matrices(av.skeleton)
    body = av.body.posed(m).astype(np.float64)
    s = skinned_normals(av.body, m)
    s /= np.linalg.norm(s, axis=1, keepdims=True)
    plain = np.einsum("ij,ij->i", body_normals(av, body, m, guard=False), s)
    guarded = np.einsum("ij,ij->i", body_normals(av, body, m, guard=True), s)
    assert plain[4117] < -0.5 < 0.5 < guarded[4117]
    assert (guarded < 0.0).sum() <= 4 < 30 <= (plain < 0.0).sum()


def test_check_runtime_records_the_guard(tmp_path, capsys):
    import json

    from kisekae.cli import main

    for flag in ("--normal-guard", "--no-normal-guard"):
        out = tmp_path / f"{flag}.json"
        assert main(["check", "--runtime", flag, "--pose", "knee_bend", "--garment", "tights", "--json",
                     str(out)]) == 0
        recs = [r for r in json.loads(out.read_text()) if r.get("stage") == "runtime"]
        assert recs and all(r["normal_guard"] == (flag == "--normal-guard") for r in recs)
    capsys.readouterr()
    assert main(["check", "--normal-guard", "--pose", "knee_bend", "--garment", "tights"]) != 0
    assert "--normal-guard: sets the per-frame path's push: needs --runtime" in capsys.readouterr().err


def test_lbs_normals_equal_the_blended_reference(avatar):
    """The guard's reference per frame (:func:`kisekae.avatar.skinning.lbs_normals`, Numba) against
    kisekae.fit.fix.skinned_normals (the blended rotations by einsum); bad matrices are refused."""
    from kisekae.avatar.poses import named_pose
    from kisekae.avatar.skinning import lbs_normals
    from kisekae.fit.fix import skinned_normals

    m = named_pose(avatar.skeleton, "crouch").skinning_matrices(avatar.skeleton)
    body = avatar.body
    got = lbs_normals(body.mesh.normals, body.skin.indices, body.skin.weights, m)
    assert np.abs(got - skinned_normals(body, m)).max() < 1e-12
    assert np.abs(got - body.mesh.normals).max() > 0.5  # the crouch turns them
    with pytest.raises(KisekaeError, match="skinned normals"):
        lbs_normals(body.mesh.normals, body.skin.indices, body.skin.weights, m[:3])
