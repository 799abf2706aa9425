"""Node animation on unskinned meshes, morph weights and evaluation at any time, on the Khronos
sample models BoxAnimated, AnimatedTriangle and SimpleMorph.

No package on PyPI or npm ships the Khronos sample models, so each is rebuilt here from its
published structure: the same node graph, scene, channels, samplers and key data (times and
values as stored in the sample's buffer). Mesh geometry that the animation does not depend on is
simplified (BoxAnimated's bevelled boxes become boxes with the published bounds).

The reference is an independent evaluation written from the glTF 2.0 specification: node world
matrices as products of T @ R @ S, Appendix C's interpolation formulas (slerp with
``a = arccos(|dot|)`` and the dot product's sign), quaternions through SciPy, morphing as
``base + sum w_i d_i``.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.transform import Rotation
from test_gltf_kit import Kit

from kisekae.cli import main
from kisekae.errors import KisekaeError
from kisekae.io.gltf import load_gltf

# ---------------------------------------------------------------------------------------------
# reference: glTF 2.0 Appendix C, evaluated here
# ---------------------------------------------------------------------------------------------


def ref_interval(times, t):
    """(k, s): the key interval holding t and the normalised factor, t clamped to the keys."""
    times = np.asarray(times, float)
    t = min(max(t, times[0]), times[-1])
    if len(times) == 1 or t >= times[-1]:
        return len(times) - 1, 0.0
    k = int(np.searchsorted(times, t, side="right") - 1)
    return k, (t - times[k]) / (times[k + 1] - times[k])


def ref_sample(times, values, mode, t, rotation=False):
    """One sampler at time t, straight from the specification's formulas."""
    values = np.asarray(values, float)
    k, s = ref_interval(times, t)
    if mode == "CUBICSPLINE":
        a_in, v, b_out = values[0::3], values[1::3], values[2::3]
    else:
        v = values
    if k == len(times) - 1 or mode == "STEP":
        out = v[k]
    elif mode == "LINEAR" and rotation:
        q0 = v[k] / np.linalg.norm(v[k])  # keys are unit quaternions to the file's 3-4 digits
        q1 = v[k + 1] / np.linalg.norm(v[k + 1])
        d = float(np.dot(q0, q1))
        a = np.arccos(min(abs(d), 1.0))
        sign = 1.0 if d >= 0 else -1.0
        if a < 1e-9:
            out = (1 - s) * q0 + s * q1
        else:
            out = np.sin(a * (1 - s)) / np.sin(a) * q0 + sign * np.sin(a * s) / np.sin(a) * q1
    elif mode == "LINEAR":
        out = (1 - s) * v[k] + s * v[k + 1]
    else:
        td = times[k + 1] - times[k]
        out = ((2 * s**3 - 3 * s**2 + 1) * v[k] + td * (s**3 - 2 * s**2 + s) * b_out[k]
               + (-2 * s**3 + 3 * s**2) * v[k + 1] + td * (s**3 - s**2) * a_in[k + 1])
    if rotation:
        out = out / np.linalg.norm(out)
    return out


def ref_trs(t=(0, 0, 0), q=(0, 0, 0, 1), s=(1, 1, 1)):
    m = np.eye(4)
    m[:3, :3] = Rotation.from_quat(q).as_matrix() * np.asarray(s, float)
    m[:3, 3] = t
    return m


def apply(m, v):
    return v @ m[:3, :3].T + m[:3, 3]


def box(half):
    """8 corners and 12 triangles of an axis-aligned box centred at the origin."""
    hx, hy, hz = half
    v = np.array([[x, y, z] for x in (-hx, hx) for y in (-hy, hy) for z in (-hz, hz)], float)
    f = np.array([[0, 1, 3], [0, 3, 2], [4, 6, 7], [4, 7, 5], [0, 4, 5], [0, 5, 1],
                  [2, 3, 7], [2, 7, 6], [0, 2, 6], [0, 6, 4], [1, 5, 7], [1, 7, 3]])
    return v, f


def mesh_of(k, v, f, **extra):
    prim = {"attributes": {"POSITION": k.add(np.asarray(v, np.float32))},
            "indices": k.add(np.asarray(f, np.uint16).reshape(-1), 5123, "SCALAR")}
    prim.update(extra)
    return prim


# ---------------------------------------------------------------------------------------------
# BoxAnimated
# ---------------------------------------------------------------------------------------------

BOX_ROT_T = [1.25, 2.5]
BOX_ROT_Q = [[-0.0, -0.0, -0.0, -1.0], [1.0, 0.0, 0.0, 4.4896593387466768e-11]]
BOX_TR_T = [0.0, 1.25, 2.5, 3.708329916000366]
BOX_TR_V = [[0.0, 0.0, 0.0], [0.0, 2.5199999809265138, 0.0], [0.0, 2.5199999809265138, 0.0], [0.0, 0.0, 0.0]]
INNER = box((0.33504000306129458, 0.5, 0.33504000306129458))
OUTER = box((0.5, 0.5, 0.5))


def build_box_animated(path):
    """BoxAnimated (glTF-Sample-Assets): node 0 (translated) > node 1 > node 2 (inner box, rotated);
    node 3 (outer box) static; one animation whose two channels have different lengths."""
    k = Kit()
    doc = {
        "scene": 0, "scenes": [{"nodes": [3, 0]}],
        "nodes": [{"children": [1], "rotation": [-0.0, -0.0, -0.0, -1.0]}, {"children": [2]},
                  {"mesh": 0, "rotation": [-0.0, -0.0, -0.0, -1.0]}, {"mesh": 1}],
        "meshes": [{"name": "inner_box", "primitives": [mesh_of(k, *INNER)]},
                   {"name": "outer_box", "primitives": [mesh_of(k, *OUTER)]}],
        "animations": [{"channels": [{"sampler": 0, "target": {"node": 2, "path": "rotation"}},
                                     {"sampler": 1, "target": {"node": 0, "path": "translation"}}],
                        "samplers": [{"input": k.add(np.float32(BOX_ROT_T)), "interpolation": "LINEAR",
                                      "output": k.add(np.float32(BOX_ROT_Q))},
                                     {"input": k.add(np.float32(BOX_TR_T)), "interpolation": "LINEAR",
                                      "output": k.add(np.float32(BOX_TR_V))}]}],
    }
    return k.write_glb(path, doc)


def ref_box(t):
    """World matrices of the inner and outer box at time t."""
    w0 = ref_trs(ref_sample(np.float32(BOX_TR_T), np.float32(BOX_TR_V), "LINEAR", t), [0, 0, 0, -1])
    w2 = w0 @ np.eye(4) @ ref_trs(q=ref_sample(np.float32(BOX_ROT_T), np.float32(BOX_ROT_Q), "LINEAR", t,
                                               rotation=True))
    return w2, np.eye(4)


BOX_TIMES = np.r_[np.linspace(-0.5, 4.2, 48), BOX_TR_T, BOX_ROT_T, 1.875]


def test_box_animated_moves_the_inner_box_as_the_spec_says(tmp_path):
    asset = load_gltf(build_box_animated(tmp_path / "BoxAnimated.glb"), body="outer_box")
    av = asset.avatar
    assert list(av.garments) == ["inner_box"]
    assert av.skeleton.names == ["root", "inner_box"] and list(av.skeleton.parents) == [-1, -1]
    anim = asset.animations[0]
    assert anim.start == 0.0 and anim.end == pytest.approx(3.70833, abs=1e-5)
    np.testing.assert_allclose(anim.times, [0.0, 1.25, 2.5, 3.70833], atol=1e-5)
    for t in BOX_TIMES:
        w_in, w_out = ref_box(t)
        want_in, want_out = apply(w_in, INNER[0]), apply(w_out, OUTER[0])
        np.testing.assert_allclose(asset.posed_vertices("inner_box", 0, t), want_in, atol=2e-6)
        np.testing.assert_allclose(asset.posed_vertices("body", 0, t), want_out, atol=2e-6)
        pose = anim.pose_at(t)  # the Pose route (check, fit, render) gives the same
        np.testing.assert_allclose(av.posed_vertices("inner_box", pose), want_in, atol=2e-6)
        np.testing.assert_allclose(av.posed_vertices("body", pose), want_out, atol=2e-6)
    # the poses sampled on import, at the key times (these came back in the rest pose before)
    for t, pose in zip(anim.times, anim.poses):
        np.testing.assert_allclose(av.posed_vertices("inner_box", pose), apply(ref_box(t)[0], INNER[0]), atol=2e-6)
    # half way through the flip: +90 degrees about X (the short arc of the spec's slerp), lifted 2.52 m
    mid = asset.posed_vertices("inner_box", 0, 1.875)
    np.testing.assert_allclose(mid, INNER[0] @ Rotation.from_euler("x", 90, degrees=True).as_matrix().T
                               + [0, 2.52, 0], atol=2e-6)
    node_w = anim.node_matrices([1.875])[0]
    np.testing.assert_allclose(node_w[2], ref_box(1.875)[0], atol=1e-6)
    assert asset.warnings == []


def test_box_animated_at_fps_and_evaluation_errors(tmp_path):
    asset = load_gltf(build_box_animated(tmp_path / "b.glb"), body="outer_box", fps=10)
    anim = asset.animations[0]
    np.testing.assert_allclose(anim.times, np.arange(38) / 10)
    for t, pose in zip(anim.times[::5], anim.poses[::5]):
        np.testing.assert_allclose(asset.avatar.posed_vertices("inner_box", pose), apply(ref_box(t)[0], INNER[0]),
                                   atol=2e-6)
    with pytest.raises(KisekaeError, match="finite seconds"):
        anim.pose_at(float("nan"))
    with pytest.raises(KisekaeError, match="one time"):
        anim.pose_at([0.0, 1.0])
    with pytest.raises(KisekaeError, match="no animation 'walk'"):
        asset.posed_vertices("body", "walk", 0.0)
    assert len(anim.poses_at(np.linspace(0, 1, 7))) == 7


# ---------------------------------------------------------------------------------------------
# AnimatedTriangle
# ---------------------------------------------------------------------------------------------

TRI = (np.array([[0.0, 0, 0], [1, 0, 0], [0, 1, 0]]), np.array([[0, 1, 2]]))
TRI_T = [0.0, 0.25, 0.5, 0.75, 1.0]
TRI_Q = [[0, 0, 0, 1], [0, 0, 0.707, 0.707], [0, 0, 1, 0], [0, 0, 0.707, -0.707], [0, 0, 0, 1]]


def build_animated_triangle(path, interpolation="LINEAR", values=None, extra=None):
    """AnimatedTriangle: one node with a triangle, its rotation animated over 1 s (a full turn about Z)."""
    k = Kit()
    doc = {
        "scene": 0, "scenes": [{"nodes": [0]}],
        "nodes": [{"mesh": 0, "rotation": [0.0, 0.0, 0.0, 1.0]}],
        "meshes": [{"primitives": [mesh_of(k, *TRI)]}],
        "animations": [{"samplers": [{"input": k.add(np.float32(TRI_T)), "interpolation": interpolation,
                                      "output": k.add(np.float32(TRI_Q if values is None else values))}],
                        "channels": [{"sampler": 0, "target": {"node": 0, "path": "rotation"}}]}],
    }
    if extra:
        extra(k, doc)
    return k.write_gltf(path, doc)


def test_animated_triangle_turns_about_z(tmp_path):
    asset = load_gltf(build_animated_triangle(tmp_path / "AnimatedTriangle.gltf"))
    anim = asset.animations[0]
    for t in np.r_[np.linspace(-0.2, 1.2, 29), 0.875, 0.9999]:
        q = ref_sample(np.float32(TRI_T), np.float32(TRI_Q), "LINEAR", t, rotation=True)
        want = apply(ref_trs(q=q), TRI[0])
        np.testing.assert_allclose(asset.posed_vertices("body", 0, t), want, atol=2e-6)
        np.testing.assert_allclose(asset.avatar.posed_vertices("body", anim.pose_at(t)), want, atol=2e-6)
    for t, pose in zip(anim.times, anim.poses):
        angle = np.degrees(np.arctan2(*asset.avatar.posed_vertices("body", pose)[1, [1, 0]])) % 360
        assert angle == pytest.approx(360 * t % 360, abs=0.05)  # 0, 90, 180, 270, 360 degrees
    # 7/8 of the way round: the last segment takes the short arc from 270 to 360 degrees (dot < 0)
    np.testing.assert_allclose(asset.posed_vertices("body", 0, 0.875)[1],
                               [np.cos(np.radians(315)), np.sin(np.radians(315)), 0], atol=1e-3)


def test_step_and_cubicspline_between_keys(tmp_path):
    step = load_gltf(build_animated_triangle(tmp_path / "step.gltf", "STEP"))
    for t in (0.1, 0.3, 0.74, 0.76, 1.5):
        q = ref_sample(np.float32(TRI_T), np.float32(TRI_Q), "STEP", t, rotation=True)
        np.testing.assert_allclose(step.posed_vertices("body", 0, t), apply(ref_trs(q=q), TRI[0]), atol=2e-6)
    # cubic: in-tangent, value, out-tangent per key; non-zero tangents, so the path leaves the slerp arc
    rng = np.random.default_rng(4)
    keys = np.asarray(TRI_Q, float)
    keys[3] = -keys[3]  # keep neighbouring keys on one hemisphere, as exporters must for CUBICSPLINE
    tang = rng.normal(0, 0.8, (5, 2, 4))
    cubic = np.concatenate([[tang[i, 0], keys[i], tang[i, 1]] for i in range(5)]).astype(np.float32)
    asset = load_gltf(build_animated_triangle(tmp_path / "cubic.gltf", "CUBICSPLINE", cubic))
    anim = asset.animations[0]
    for t in np.r_[np.linspace(0, 1, 23), 0.6180339]:
        q = ref_sample(np.float32(TRI_T), cubic, "CUBICSPLINE", t, rotation=True)
        want = apply(ref_trs(q=q), TRI[0])
        np.testing.assert_allclose(asset.posed_vertices("body", 0, t), want, atol=2e-6)
        np.testing.assert_allclose(asset.avatar.posed_vertices("body", anim.pose_at(t)), want, atol=2e-6)


# ---------------------------------------------------------------------------------------------
# SimpleMorph
# ---------------------------------------------------------------------------------------------

MORPH_BASE = np.array([[0.0, 0, 0], [1, 0, 0], [0.5, 0.5, 0]])
MORPH_D = [np.array([[0.0, 0, 0], [0, 0, 0], [-1, 1, 0]]), np.array([[0.0, 0, 0], [0, 0, 0], [1, 1, 0]])]
MORPH_T = [0.0, 1.0, 2.0, 3.0, 4.0]
MORPH_W = [[0.0, 0.0], [0.0, 1.0], [1.0, 1.0], [1.0, 0.0], [0.0, 0.0]]


def build_simple_morph(path, interpolation="LINEAR", weights=None, node_weights=None):
    """SimpleMorph: a triangle with two morph targets, mesh weights (0.5, 0.5), weights animated over 4 s."""
    k = Kit()
    prim = mesh_of(k, MORPH_BASE, [[0, 1, 2]],
                   targets=[{"POSITION": k.add(np.float32(d))} for d in MORPH_D])
    node = {"mesh": 0}
    if node_weights is not None:
        node["weights"] = node_weights
    doc = {
        "scene": 0, "scenes": [{"nodes": [0]}], "nodes": [node],
        "meshes": [{"primitives": [prim], "weights": [0.5, 0.5]}],
        "animations": [{"samplers": [{"input": k.add(np.float32(MORPH_T)), "interpolation": interpolation,
                                      "output": k.add(np.float32(MORPH_W if weights is None else weights)
                                                      .reshape(-1))}],
                        "channels": [{"sampler": 0, "target": {"node": 0, "path": "weights"}}]}],
    }
    return k.write_gltf(path, doc)


def morphed(w):
    return MORPH_BASE + w[0] * MORPH_D[0] + w[1] * MORPH_D[1]


def test_simple_morph_rest_shape_and_animated_weights(tmp_path):
    asset = load_gltf(build_simple_morph(tmp_path / "SimpleMorph.gltf"))
    av = asset.avatar
    # at rest the mesh weights (0.5, 0.5) apply: the top vertex sits at y = 1.5 (it was 1.0 too low)
    np.testing.assert_allclose(av.body.mesh.vertices, morphed([0.5, 0.5]), atol=1e-7)
    anim = asset.animations[0]
    np.testing.assert_allclose(anim.morph_weights["body"], MORPH_W)
    for t in np.r_[np.linspace(-1, 5, 25), 0.3, 2.71]:
        w = ref_sample(MORPH_T, MORPH_W, "LINEAR", t)
        np.testing.assert_allclose(anim.morph_weights_at(t)["body"][0], w, atol=1e-7)
        np.testing.assert_allclose(asset.posed_vertices("body", 0, t), morphed(w), atol=1e-6)
    np.testing.assert_allclose(asset.morphed_vertices("body", [1, 0]), morphed([1, 0]), atol=1e-7)
    assert any("animates morph weights of body" in w for w in asset.warnings)
    with pytest.raises(KisekaeError, match="1 weights for 2 morph targets"):
        asset.morphed_vertices("body", [1.0])


def test_node_weights_override_mesh_weights_and_cubic_weights(tmp_path):
    asset = load_gltf(build_simple_morph(tmp_path / "n.gltf", node_weights=[1.0, 0.0]))
    np.testing.assert_allclose(asset.avatar.body.mesh.vertices, morphed([1.0, 0.0]), atol=1e-7)
    np.testing.assert_allclose(asset.morph_default_weights["body"], [1.0, 0.0])
    rng = np.random.default_rng(5)
    cubic = np.concatenate([[rng.normal(0, 1, 2), w, rng.normal(0, 1, 2)] for w in MORPH_W])
    asset = load_gltf(build_simple_morph(tmp_path / "c.gltf", "CUBICSPLINE", cubic))
    for t in (0.2, 1.5, 2.9, 3.99):
        w = ref_sample(MORPH_T, np.float32(cubic), "CUBICSPLINE", t)
        np.testing.assert_allclose(asset.posed_vertices("body", 0, t), morphed(w), atol=1e-6)
    step = load_gltf(build_simple_morph(tmp_path / "s.gltf", "STEP"))
    np.testing.assert_allclose(step.posed_vertices("body", 0, 1.99), morphed([0, 1]), atol=1e-7)


def test_weights_channel_with_the_wrong_count_is_a_clear_error(tmp_path):
    bad = np.zeros((5, 3))
    with pytest.raises(KisekaeError, match=r"weights channel of nodes\[0\] has 3 values per key, its mesh has 2"):
        load_gltf(build_simple_morph(tmp_path / "bad.gltf", weights=bad))


# ---------------------------------------------------------------------------------------------
# what is read but not applied: warnings in `kisekae info`
# ---------------------------------------------------------------------------------------------


def test_info_warns_about_what_is_not_applied(tmp_path, capsys):
    def extra(k, doc):
        doc["nodes"].append({"name": "camera_rig"})  # animated, but nothing imported follows it
        doc["scenes"][0]["nodes"].append(1)
        doc["nodes"].append({"mesh": 1})  # a mesh node in no scene
        doc["meshes"].append({"primitives": [mesh_of(k, *TRI, mode=1)]})  # lines
        doc["meshes"][0]["primitives"].append(mesh_of(k, TRI[0], [[0, 1, 2]], mode=0))  # points
        doc["meshes"][0]["primitives"][0]["targets"] = [{"POSITION": k.add(np.zeros((3, 3), np.float32)),
                                                         "NORMAL": k.add(np.zeros((3, 3), np.float32))}]
        a = doc["animations"][0]
        a["samplers"].append({"input": a["samplers"][0]["input"],
                              "output": k.add(np.float32([[0, 0, 0], [0, 1, 0], [0, 2, 0], [0, 3, 0], [0, 4, 0]]))})
        a["samplers"].append({"input": a["samplers"][0]["input"],
                              "output": k.add(np.float32([[1, 1, 1], [2, 2, 2], [1, 1, 1], [1, 1, 1], [1, 1, 1]]))})
        a["channels"].append({"sampler": 1, "target": {"node": 1, "path": "translation"}})
        a["channels"].append({"sampler": 2, "target": {"node": 0, "path": "scale"}})
        a["channels"].append({"sampler": 1, "target": {"path": "pointer",
                                                       "extensions": {"KHR_animation_pointer": {"pointer": "/x"}}}})
        doc["extensionsUsed"] = ["KHR_animation_pointer", "KHR_materials_sheen"]

    path = build_animated_triangle(tmp_path / "busy.gltf", extra=extra)
    asset = load_gltf(path)
    text = "\n".join(asset.warnings)
    assert "1 channel(s) without a node target" in text
    assert "channels on nodes[1] move nothing that was imported" in text
    assert "animated scale (up to 1 from 1) is not in its poses" in text
    assert "POINTS primitives are not read" in text
    assert "morph target NORMAL deltas are not applied" in text
    assert "1 mesh node(s) outside the default scene are not imported" in text
    assert "extensions not applied: KHR_animation_pointer, KHR_materials_sheen" in text
    assert main(["info", str(path)]) == 0
    out = capsys.readouterr().out
    for w in asset.warnings:
        assert f"warning: {w}" in out
    assert "animation 'animation0': 5 frames over 0.000..1.000 s, 3 node channels" in out
    # a clean file has no warnings
    assert load_gltf(build_animated_triangle(tmp_path / "clean.gltf")).warnings == []


def test_box_animated_poses_survive_export(tmp_path):
    """Poses with bone offsets (here a second root that moves) are written as translation channels."""
    from kisekae.io.gltf_write import save_avatar

    asset = load_gltf(build_box_animated(tmp_path / "b.glb"), body="outer_box", fps=8)
    poses = asset.animations[0].poses
    assert any(p.offsets is not None for p in poses)
    save_avatar(tmp_path / "again.glb", asset.avatar, poses=poses, fps=8)
    back = load_gltf(tmp_path / "again.glb")
    assert back.avatar.skeleton.names == ["root", "inner_box"]
    for t, p0, p1 in zip(asset.animations[0].times, poses, back.animations[0].poses):
        want = apply(ref_box(t)[0], INNER[0])
        np.testing.assert_allclose(back.avatar.posed_vertices("inner_box", p1), want, atol=2e-6)
        np.testing.assert_allclose(back.posed_vertices("inner_box", 0, t), want, atol=2e-6)
        np.testing.assert_allclose(back.avatar.posed_vertices("body", p1), OUTER[0], atol=2e-6)
