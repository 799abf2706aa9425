"""Strain mode, blur, temporal smoothing, wrinkle weights and animation export."""

from __future__ import annotations

import json

import numpy as np
import pytest

from kisekae.errors import KisekaeError
from kisekae.tension import (
    TemporalSmoother,
    TensionPlan,
    WrinkleMap,
    bake_vertex_colors,
    blur,
    face_strain,
    map_ratio,
    pack_rgba,
    plot_t_curves,
    region_mask,
    save_npz,
    smooth_sequence,
    strain_tension,
    t_curves,
    tension_map,
    tension_sequence,
    wrinkle_weights,
    write_t_curves_json,
)

from test_tension import bent_cylinder, grid


def _rot(axis, ang):
    axis = np.asarray(axis, float) / np.linalg.norm(axis)
    K = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
    return np.eye(3) + np.sin(ang) * K + (1 - np.cos(ang)) * K @ K


# --------------------------------------------------------------------------------------------
# strain
# --------------------------------------------------------------------------------------------


def test_strain_sees_area_preserving_shear_that_edge_mode_misses():
    rest, quads, tris = grid(8, 8)
    deformed = rest * np.array([1.1, 0.9, 1.0], np.float32)
    edge = tension_map(rest, deformed, quads)
    s = strain_tension(rest, deformed, tris)
    np.testing.assert_allclose(s.lambda_max, 1.1, rtol=1e-6)
    np.testing.assert_allclose(s.lambda_min, 0.9, rtol=1e-6)
    np.testing.assert_allclose(s.area_ratio, 0.99, rtol=1e-6)
    np.testing.assert_allclose(np.abs(s.direction), np.tile([0, 1, 0], (64, 1)), atol=1e-6)
    m = map_ratio(np.array([1 / 0.9, 1 / 1.1]))
    np.testing.assert_allclose(s.compress, m.compress[0], atol=1e-5)  # float32 grid coordinates
    np.testing.assert_allclose(s.stretch, m.stretch[1], atol=1e-5)
    assert s.compress.min() > 0.5 and s.stretch.min() > 0.2
    inner = np.zeros((8, 8), bool)
    inner[1:-1, 1:-1] = True
    assert edge.compress[inner.ravel()].max() < 1e-5 and edge.stretch[inner.ravel()].max() < 1e-5


def test_face_strain_against_svd_of_3x3_map():
    rng = np.random.default_rng(5)
    rest = rng.normal(size=(30, 3))
    tris = rng.integers(0, 30, size=(40, 3))
    tris = tris[(tris[:, 0] != tris[:, 1]) & (tris[:, 1] != tris[:, 2]) & (tris[:, 0] != tris[:, 2])]
    A = np.eye(3) + 0.3 * rng.normal(size=(3, 3))
    deformed = rest @ A.T + rng.normal(scale=0.05, size=rest.shape)
    fs = face_strain(rest, deformed, tris)
    for f, (i, j, k) in enumerate(tris):
        e = np.c_[rest[j] - rest[i], rest[k] - rest[i]]
        d = np.c_[deformed[j] - deformed[i], deformed[k] - deformed[i]]
        n = np.cross(e[:, 0], e[:, 1])
        nd = np.cross(d[:, 0], d[:, 1])
        M = np.c_[d, nd / np.linalg.norm(nd)] @ np.linalg.inv(np.c_[e, n / np.linalg.norm(n)])
        sv = np.linalg.svd(M, compute_uv=False)
        sv = np.delete(sv, np.argmin(np.abs(sv - 1.0)))  # drop the normal's singular value 1
        # the normal direction's value is exactly 1 only up to the tangent/normal split; compare
        # with stretches of the tangent map instead: eigen of (M_t^T M_t) in the rest plane basis
        P = np.linalg.qr(e)[0]
        Mt = M @ P
        st = np.sqrt(np.linalg.eigvalsh(Mt.T @ Mt))
        np.testing.assert_allclose([fs.lambda_min[f], fs.lambda_max[f]], st, rtol=1e-9)
        np.testing.assert_allclose(fs.area_ratio[f], np.linalg.norm(nd) / np.linalg.norm(n), rtol=1e-9)
        assert sv.size == 2
        # direction: unit, in the deformed plane, and stretched by lambda_min
        dvec = fs.direction[f]
        np.testing.assert_allclose(np.linalg.norm(dvec), 1.0, rtol=1e-9)
        assert abs(dvec @ nd) < 1e-9 * np.linalg.norm(nd)
        pre = np.linalg.lstsq(Mt, dvec, rcond=None)[0]
        np.testing.assert_allclose(1.0 / np.linalg.norm(pre), fs.lambda_min[f], rtol=1e-7)


def test_strain_rigid_motion_and_uniform_scale():
    rest, deformed, quads = bent_cylinder()
    R = _rot([1, 2, 3], 0.7)
    moved = rest @ R.T + np.array([1.0, -2.0, 0.5])
    s = strain_tension(rest, moved, quads)
    np.testing.assert_allclose(s.lambda_min, 1, atol=1e-5)
    np.testing.assert_allclose(s.lambda_max, 1, atol=1e-5)
    np.testing.assert_allclose(s.color, 0, atol=1e-4)
    s = strain_tension(rest, rest * 0.857, quads)
    e = tension_map(rest, rest * 0.857, quads)
    np.testing.assert_allclose(s.compress, e.compress, atol=1e-5)
    s = strain_tension(rest, rest * 1.2, quads)
    np.testing.assert_allclose(s.stretch, 1.0, atol=1e-5)


def test_strain_errors():
    rest, quads, _ = grid(3, 3)
    with pytest.raises(KisekaeError, match="deformed"):
        strain_tension(rest, rest[:4], quads)
    with pytest.raises(KisekaeError, match="faces.*out of range"):
        strain_tension(rest, rest, quads + 5)


# --------------------------------------------------------------------------------------------
# blur and temporal smoothing
# --------------------------------------------------------------------------------------------


def test_blur_against_explicit_neighbour_mean():
    rest, quads, _ = grid(5, 4)
    plan = TensionPlan(rest, quads)
    rng = np.random.default_rng(2)
    v = rng.random(len(rest))
    want = v.copy()
    for _ in range(2):
        nxt = np.empty_like(want)
        for i in range(len(rest)):
            nb = [b for a, b in plan.edges if a == i] + [a for a, b in plan.edges if b == i]
            nxt[i] = (want[i] + want[nb].sum()) / (1 + len(nb))
        want = nxt
    np.testing.assert_allclose(blur(v, plan.edges, iterations=2), want, rtol=1e-6)
    np.testing.assert_allclose(blur(np.c_[v, 2 * v], plan.edges, iterations=2)[:, 1], 2 * want, rtol=1e-6)
    const = blur(np.full(len(rest), 0.3), plan.edges, iterations=5)
    np.testing.assert_allclose(const, 0.3, rtol=1e-6)
    with pytest.raises(KisekaeError, match="iterations"):
        blur(v, plan.edges, iterations=-1)
    with pytest.raises(KisekaeError, match="edges"):
        blur(v, plan.edges + 100)


def test_temporal_smoother_rise_and_fall():
    sm = TemporalSmoother(rise=0.0, fall=0.1)
    assert sm.update([0.0]) == 0.0
    assert sm.update([1.0], dt=0.05) == 1.0  # rise 0: follows at once
    y = sm.update([0.0], dt=0.05)
    np.testing.assert_allclose(y, np.exp(-0.5), rtol=1e-6)  # falls by exp(-dt/tau)
    seq = smooth_sequence(np.r_[np.zeros(3), np.ones(30)][:, None], rise=0.1, fall=0.1, dt=1 / 30)
    assert np.all(np.diff(seq[:, 0]) >= 0) and seq[-1, 0] > 0.99 and seq[3, 0] < 0.5
    with pytest.raises(KisekaeError, match="rise"):
        TemporalSmoother(rise=-1)


# --------------------------------------------------------------------------------------------
# wrinkle weights
# --------------------------------------------------------------------------------------------


def test_wrinkle_weights_masks_threshold_and_normalize():
    co = np.array([0.0, 0.5, 1.0, 1.0])
    st = np.array([1.0, 0.0, 0.2, 1.0])
    mask = np.array([1.0, 1.0, 0.5, 0.0])
    maps = [
        WrinkleMap("knee", "compress", mask=mask, threshold=0.5),
        WrinkleMap("all_stretch", "stretch", gain=2.0),
    ]
    w = wrinkle_weights(co, st, maps, normalize=False)
    np.testing.assert_allclose(w[:, 0], [0, 0, 0.5, 0])
    np.testing.assert_allclose(w[:, 1], [1, 0, 0.4, 1])
    wn = wrinkle_weights(co, st, [WrinkleMap("a", "compress"), WrinkleMap("b", "compress")])
    np.testing.assert_allclose(wn.sum(axis=1), [0, 1, 1, 1])  # 0.5 + 0.5 and scaled 1 + 1
    rgba = pack_rgba(np.c_[w, w, w])
    assert rgba.shape == (4, 2, 4) and rgba[2, 1, 0] == w[2, 0] and rgba[0, 1, 3] == 0
    idx = np.array([[0, 1], [2, 3], [1, 1]])
    wts = np.array([[0.7, 0.3], [0.5, 0.5], [0.6, 0.4]])
    np.testing.assert_allclose(region_mask(idx, wts, [1]), [0.3, 0.0, 1.0])
    with pytest.raises(KisekaeError, match="source"):
        wrinkle_weights(co, st, [WrinkleMap("x", "shear")])
    with pytest.raises(KisekaeError, match="threshold"):
        wrinkle_weights(co, st, [WrinkleMap("x", threshold=1.0)])
    with pytest.raises(KisekaeError, match="gain"):
        wrinkle_weights(co, st, [WrinkleMap("x", gain=float("nan"))])
    with pytest.raises(KisekaeError, match="mask"):
        wrinkle_weights(co, st, [WrinkleMap("x", mask=np.ones(3))])


# --------------------------------------------------------------------------------------------
# animation
# --------------------------------------------------------------------------------------------


def _bend_frames(n=7):
    frames = []
    for ang in np.linspace(0, 1.0, n):
        rest, deformed, quads = bent_cylinder(angle=float(ang))
        frames.append(deformed)
    return rest, quads, frames


def test_sequence_curves_json_png_and_bake(tmp_path):
    rest, quads, frames = _bend_frames()
    plan = TensionPlan(rest, quads)
    seq = tension_sequence(plan, frames)
    assert seq.ratio.shape == (7, len(rest))
    for k, f in enumerate(frames):
        np.testing.assert_array_equal(seq.ratio[k], tension_map(rest, f, quads).ratio)
    vid = [int(np.argmax(seq.ratio[-1])), int(np.argmin(seq.ratio[-1]))]
    curves = t_curves(seq, vid)
    assert curves[str(vid[0])][0] == pytest.approx(1.0, abs=1e-5)
    assert curves[str(vid[0])][-1] > 1.05 and curves[str(vid[1])][-1] < 0.95
    assert curves["max_index"][-1] == vid[0] and curves["min_index"][-1] == vid[1]
    js = write_t_curves_json(tmp_path / "t.json", seq, vid, x=np.linspace(0, 60, 7), x_label="Angle(Degree)")
    data = json.loads(js.read_text())
    assert data["x"][-1] == 60 and data[str(vid[1])] == curves[str(vid[1])]
    png = plot_t_curves(tmp_path / "t.png", seq, vid)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 5000
    rgba = bake_vertex_colors(seq)
    assert rgba.shape == (7, len(rest), 4) and rgba.dtype == np.uint8
    np.testing.assert_array_equal(rgba[..., 0], np.rint(seq.compress * 255))
    assert np.all(rgba[..., 3] == 255)
    z = np.load(save_npz(tmp_path / "t.npz", seq))
    np.testing.assert_array_equal(z["ratio"], seq.ratio)
    with pytest.raises(KisekaeError, match="vertices"):
        t_curves(seq, [10**6])


def test_sequence_blur_and_smoothing_change_output():
    rest, quads, frames = _bend_frames(4)
    plan = TensionPlan(rest, quads)
    raw = tension_sequence(plan, frames)
    blurred = tension_sequence(plan, frames, blur_iterations=2)
    assert not np.allclose(raw.compress, blurred.compress)
    assert blurred.compress.max() <= raw.compress.max() + 1e-6
    sm = tension_sequence(plan, frames, smoother=TemporalSmoother(rise=0.2, fall=0.2))
    np.testing.assert_allclose(sm.compress, smooth_sequence(raw.compress, rise=0.2, fall=0.2), atol=1e-7)
    np.testing.assert_array_equal(sm.ratio, raw.ratio)
    assert sm.compress[-1].max() < raw.compress[-1].max()
    with pytest.raises(KisekaeError, match="frames"):
        tension_sequence(plan, [])
