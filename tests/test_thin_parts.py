"""Correctives on thin parts (kisekae.avatar.thin_parts): which parts are thin, and the smoothing of their offsets
against a Jacobi pass of the offset field written out here."""

import numpy as np
import pytest

from kisekae.avatar import correctives as C
from kisekae.avatar.skinning import Skin
from kisekae.avatar.thin_parts import THIN_PASSES, smooth_thin_parts, thin_part_vertices
from kisekae.errors import KisekaeError
from kisekae.geom.ring import one_ring


def _fingers(avatar) -> set:
    names = avatar.skeleton.names
    idx, w = np.asarray(avatar.body.skin.indices), np.asarray(avatar.body.skin.weights)
    own = {names[b] for b in np.unique(idx[np.arange(len(idx)), w.argmax(axis=1)])}
    return {n for n in own if n.split("_")[0] in ("thumb", "index", "middle", "ring", "pinky")}


def test_thin_parts_are_the_fingers_and_thin_cylinders(avatar, avatar_cmu):
    thin = thin_part_vertices(avatar.body.mesh.vertices, avatar.body.skin)
    idx, w = np.asarray(avatar.body.skin.indices), np.asarray(avatar.body.skin.weights)
    own = idx[np.arange(len(idx)), w.argmax(axis=1)]
    assert {avatar.skeleton.names[b] for b in np.unique(own[thin])} == _fingers(avatar)
    thin_cmu = thin_part_vertices(avatar_cmu.body.mesh.vertices, avatar_cmu.body.skin)
    idx, w = np.asarray(avatar_cmu.body.skin.indices), np.asarray(avatar_cmu.body.skin.weights)
    own = idx[np.arange(len(idx)), w.argmax(axis=1)]
    assert {avatar_cmu.skeleton.names[b] for b in np.unique(own[thin_cmu])} == {"LThumb", "RThumb"}
    # analytic: cylinders along x of radius 5 mm and 2 cm, each skinned to its own bone
    t = np.linspace(0.0, 2 * np.pi, 12, endpoint=False)
    ring = np.stack([np.zeros_like(t), np.cos(t), np.sin(t)], axis=1)
    cyl = [np.concatenate([ring * r + [x, 0, 0] for x in np.linspace(0, 0.05, 6)]) for r in (0.005, 0.02)]
    skin = Skin(np.repeat([[0, 0], [1, 0]], len(cyl[0]), axis=0).astype(np.int32),
                np.tile([1.0, 0.0], (2 * len(cyl[0]), 1)).astype(np.float32))
    got = thin_part_vertices(np.concatenate(cyl), skin)
    assert got[:len(cyl[0])].all() and not got[len(cyl[0]):].any()
    with pytest.raises(KisekaeError, match="skin rows"):
        thin_part_vertices(np.zeros((5, 3)), skin)


def _jacobi(offsets, ring, thin, passes):
    """The reference: ``passes`` passes of o_v <- (o_v + mean of o_u over v's ring) / 2 on the thin vertices."""
    ptr, idx = ring
    o = np.array(offsets, dtype=np.float64)
    for _ in range(passes):
        new = o.copy()
        for v in np.flatnonzero(thin):
            nb = idx[ptr[v]:ptr[v + 1]]
            if len(nb):
                new[v] = 0.5 * (o[v] + o[nb].mean(axis=0))
        o = new
    return o


def test_smoothing_is_a_jacobi_pass_of_the_offsets(avatar):
    """Offsets are linear in the coefficients, so smoothing the coefficients joint by joint gives the smoothed offset
    field in every pose; the other vertices keep their numbers, and thin vertices next to a corrected one get entries."""
    mesh = avatar.body.mesh
    ring = one_ring(mesh.n_vertices, mesh.edges, mesh.weld)
    rng = np.random.default_rng(2)
    base = C.load_correctives(C.builtin_correctives_path("game_engine"))
    thin = np.zeros(mesh.n_vertices, dtype=bool)
    has = np.flatnonzero(np.diff(base.vertex_ptr) > 0)
    seed = rng.choice(has, 40, replace=False)
    thin[seed] = True
    thin[ring[1][np.concatenate([np.arange(ring[0][v], ring[0][v + 1]) for v in seed])]] = True  # and their rings
    out = smooth_thin_parts(base, ring, thin, passes=3)
    assert out.settings["thin_passes"] == 3
    for _ in range(3):
        f = rng.random(base.centres.shape[:2]) * 0.4
        before = C.corrective_offsets_numpy(base, f)
        after = C.corrective_offsets_numpy(out, f)
        np.testing.assert_allclose(after, _jacobi(before, ring, thin, 3), atol=2e-7, rtol=0)
        np.testing.assert_array_equal(after[~thin], before[~thin])
    grown = thin & (np.diff(base.vertex_ptr) == 0) & (np.diff(out.vertex_ptr) > 0)
    assert grown.any()
    np.testing.assert_array_equal(C.corrective_offsets_numpy(smooth_thin_parts(base, ring, thin, passes=0), f),
                                  C.corrective_offsets_numpy(base, f))
    with pytest.raises(KisekaeError, match="passes"):
        smooth_thin_parts(base, ring, thin, passes=-1)
    with pytest.raises(KisekaeError, match="flags"):
        smooth_thin_parts(base, ring, thin[:-1])


def test_the_fit_and_the_packaged_bakes_smooth_the_fingers(avatar):
    """fit_correctives ends with the smoothing on the body (a finger vertex the samples move spreads its offsets to
    its thin neighbours); the packaged bakes were made so."""
    from test_correctives import _synthetic

    mats, _, first = _synthetic(avatar, n=40)
    thin = thin_part_vertices(avatar.body.mesh.vertices, avatar.body.skin)
    near = C._near_joints(avatar.skeleton, avatar.body.skin, first.joints)
    finger = next(i for i in np.flatnonzero(thin) if near[i])
    d = np.zeros((len(mats), avatar.body.mesh.n_vertices, 3), np.float32)
    d[:, finger] = np.random.default_rng(3).normal(0, 0.005, (len(mats), 3))
    fit = C.fit_correctives(avatar, mats, d, centres=4)
    assert fit.settings["thin_passes"] == THIN_PASSES
    with_entries = np.flatnonzero(np.diff(fit.vertex_ptr) > 0)
    assert finger in with_entries and len(with_entries) > 5 and thin[with_entries].all()
    for rig in ("game_engine", "cmu_mb"):
        assert C.load_correctives(C.builtin_correctives_path(rig)).settings["thin_passes"] == THIN_PASSES
