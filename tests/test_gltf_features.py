"""glTF import features on a hand-made file, checked against glTF's own formulas evaluated here
with SciPy (quaternions, slerp) and NumPy: several primitives, index types, sparse and normalised
accessors, matrix and TRS nodes, 4 and 8 influences, LINEAR/STEP/CUBICSPLINE, morph targets."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.transform import Rotation, Slerp
from test_gltf_kit import Kit, cylinder, quat, trs

from kisekae.errors import KisekaeError
from kisekae.io.gltf import load_gltf, sample_channel

ARM_Q = quat([0, 1, 0], 30)
HIP_T, HIP_Q = np.array([0.0, 1.0, 0.0]), quat([1, 0, 0], 10)
KNEE_T = np.array([0.0, -0.4, 0.0])
PROP_LOCAL = trs((0.0, -0.1, 0.02), quat([0, 0, 1], 20))
HIP_KEYS = (quat([1, 0, 0], 10), quat([0.3, 0, 1], 80))
KNEE_KEYS = (quat([1, 0, 0], 0), quat([1, 0, 0], 45))


def arm_t(t):
    """Armature translation: a cubic, reproduced exactly by CUBICSPLINE with exact tangents."""
    return np.array([0.1 + t ** 3, 0.2 * t ** 2, -t])


def arm_dt(t):
    return np.array([3 * t ** 2, 0.4 * t, -1.0])


def locals_at(t):
    """Local matrices of nodes 0..2 and 5 at time t, from the channel definitions (reference).
    Every channel's keys span 0..1 s (knee: 0..0.6 s); outside them the end values hold."""
    tc = min(max(t, 0.0), 1.0)
    hip_q = Slerp([0, 1], Rotation.from_quat(HIP_KEYS))([tc]).as_quat()[0]
    knee_q = KNEE_KEYS[1] if t >= 0.6 else KNEE_KEYS[0]
    return {0: trs(arm_t(tc), ARM_Q), 1: trs(HIP_T, hip_q), 2: trs(KNEE_T, knee_q), 5: PROP_LOCAL}


def worlds(loc):
    w0 = loc[0]
    w1 = w0 @ loc[1]
    w2 = w1 @ loc[2]
    return {0: w0, 1: w1, 2: w2, 5: w2 @ loc[5]}


REST_LOCAL = {0: trs((0.1, 0, 0), ARM_Q), 1: trs(HIP_T, HIP_Q), 2: trs(KNEE_T), 5: PROP_LOCAL}
REST_W = worlds(REST_LOCAL)


def body_geometry():
    v, f = cylinder(8, 5, 0.05, 0.2, 1.0)
    v = (REST_W[1] @ np.c_[v - [0, 1.0, 0], np.ones(len(v))].T).T[:, :3]  # around the hip bone's rest frame
    h = np.linspace(0, 1, 5).repeat(8)
    w = np.c_[h, 1 - h, np.zeros((len(v), 2))]  # hip weight rises with height
    wq = np.round(w * 255).astype(np.uint8)
    wq[:, 0] = 255 - wq[:, 1]
    j = np.tile([0, 1, 0, 0], (len(v), 1)).astype(np.uint16)
    return v, f, j, wq


def bulge_deltas(n):
    """The body's one morph target: +1 cm in x on the lowest ring."""
    d = np.zeros((n, 3))
    d[:8, 0] = 0.01
    return d


def build(tmp_path, fmt="glb"):
    k = Kit()
    v, f, j, wq = body_geometry()
    broken = v.copy()
    broken[[3, 17, 30]] = 0.0  # the sparse accessor restores these
    pos = k.add(broken.astype(np.float32), sparse=([3, 17, 30], v[[3, 17, 30]].astype(np.float32)))
    uv = k.add((np.c_[np.linspace(0, 1, len(v)), np.zeros(len(v))] * 65535).astype(np.uint16), 5123, "VEC2",
               normalized=True)
    bulge = bulge_deltas(len(v))
    body_prim = {"attributes": {"POSITION": pos, "TEXCOORD_0": uv, "JOINTS_0": k.add(j, 5123, "VEC4"),
                                "WEIGHTS_0": k.add(wq, 5121, "VEC4", normalized=True),
                                "_TENSION": k.add(np.linspace(0, 1, len(v)).astype(np.float32))},
                 "indices": k.add(f.reshape(-1).astype(np.uint16), 5123, "SCALAR"),
                 "targets": [{"POSITION": k.add(bulge.astype(np.float32))}]}
    # sock: two primitives (u8 triangles, u32 strip), 8 influences, strided positions
    sv, sf = cylinder(6, 2, 0.06, 0.3, 0.5)
    sv = sv + REST_W[2][:3, 3] - [0, 0.4, 0]
    sj = np.tile([1, 0, 0, 0, 0, 0, 0, 0], (len(sv), 1)).astype(np.uint8)
    sj[:, 1] = 0
    sw = np.zeros((len(sv), 8), np.float32)
    sw[:, 0] = 0.5
    sw[:, 4:6] = 0.25
    sj8 = sj.copy()
    sj8[:, 4], sj8[:, 5] = 0, 1  # extra influences in the second set: hip 0.25 + knee 0.25
    strip_v = np.array([[0.0, 0.3, 0.1], [0.05, 0.3, 0.1], [0.0, 0.35, 0.1], [0.05, 0.35, 0.1], [0.0, 0.4, 0.1]])
    prims = []
    for verts, idx, ctype, mode in ((sv, sf.reshape(-1), 5121, 4), (strip_v, np.arange(5), 5125, 5)):
        n = len(verts)
        attrs = {"POSITION": k.add(verts.astype(np.float32), stride=16),
                 "JOINTS_0": k.add(sj8[:n, :4], 5121, "VEC4"), "JOINTS_1": k.add(sj8[:n, 4:], 5121, "VEC4"),
                 "WEIGHTS_0": k.add(sw[:n, :4]), "WEIGHTS_1": k.add(sw[:n, 4:])}
        if n != len(sv):
            attrs["JOINTS_0"] = k.add(np.tile([1, 0, 0, 0], (n, 1)).astype(np.uint8), 5121, "VEC4")
            attrs["JOINTS_1"] = k.add(np.tile([0, 0, 0, 0], (n, 1)).astype(np.uint8), 5121, "VEC4")
            attrs["WEIGHTS_0"] = k.add(np.tile([0.75, 0, 0, 0], (n, 1)).astype(np.float32))
            attrs["WEIGHTS_1"] = k.add(np.tile([0.25, 0, 0, 0], (n, 1)).astype(np.float32))
        prims.append({"attributes": attrs, "indices": k.add(idx.astype(DT_NP[ctype]), ctype, "SCALAR"), "mode": mode})
    prop = {"attributes": {"POSITION": k.add(np.array([[0, 0, 0], [0.02, 0, 0], [0, 0.02, 0]], np.float32))}}
    ibm = np.stack([np.linalg.inv(REST_W[1]), np.linalg.inv(REST_W[2])])
    ibm_acc = k.add(ibm.transpose(0, 2, 1).reshape(2, 16).astype(np.float32), 5126, "MAT4")
    t_hip = k.add(np.array([0.0, 1.0], np.float32))
    t_arm = k.add(np.array([0.0, 0.5, 1.0], np.float32))
    t_knee = k.add(np.array([0.0, 0.6], np.float32))
    cubic = np.concatenate([[arm_dt(t), arm_t(t), arm_dt(t)] for t in (0.0, 0.5, 1.0)]).astype(np.float32)
    doc = {
        "scene": 0, "scenes": [{"nodes": [0, 3, 4]}],
        "nodes": [
            {"name": "Armature", "translation": [0.1, 0, 0], "rotation": ARM_Q.tolist(), "children": [1]},
            {"name": "hip", "translation": HIP_T.tolist(), "rotation": HIP_Q.tolist(), "children": [2]},
            {"name": "knee", "translation": KNEE_T.tolist(), "children": [5]},
            {"name": "body", "mesh": 0, "skin": 0},
            {"name": "sock_node", "mesh": 1, "skin": 0},
            {"name": "prop", "mesh": 2, "matrix": PROP_LOCAL.T.reshape(-1).tolist()},
        ],
        "meshes": [{"name": "body_mesh", "primitives": [body_prim], "weights": [0.25],
                    "extras": {"targetNames": ["bulge"]}},
                   {"name": "sock", "primitives": prims}, {"name": "prop", "primitives": [prop]}],
        "skins": [{"joints": [1, 2], "inverseBindMatrices": ibm_acc}],
        "animations": [{"name": "walk", "samplers": [
            {"input": t_hip, "output": k.add(np.array(HIP_KEYS, np.float32)), "interpolation": "LINEAR"},
            {"input": t_arm, "output": k.add(cubic), "interpolation": "CUBICSPLINE"},
            {"input": t_knee, "output": k.add(np.array(KNEE_KEYS, np.float32)), "interpolation": "STEP"},
            {"input": t_hip, "output": k.add(np.array([0.25, 1.0], np.float32)), "interpolation": "LINEAR"},
        ], "channels": [
            {"sampler": 0, "target": {"node": 1, "path": "rotation"}},
            {"sampler": 1, "target": {"node": 0, "path": "translation"}},
            {"sampler": 2, "target": {"node": 2, "path": "rotation"}},
            {"sampler": 3, "target": {"node": 3, "path": "weights"}},
        ]}],
    }
    if fmt == "glb":
        return k.write_glb(tmp_path / "scene.glb", doc)
    return k.write_gltf(tmp_path / "scene.gltf", doc, uri="scene data.bin")


DT_NP = {5121: np.uint8, 5123: np.uint16, 5125: np.uint32}


def reference_posed(t, morph_weight=0.25):
    """glTF skinning evaluated directly: sum_k w_k * W[j_k](t) @ IBM[j_k] @ (v + weight * bulge)
    (the rest weight 0.25 of ``mesh.weights`` unless given)."""
    w = worlds(locals_at(t))
    mats = [w[1] @ np.linalg.inv(REST_W[1]), w[2] @ np.linalg.inv(REST_W[2])]
    v, f, j, wq = body_geometry()
    v = v + morph_weight * bulge_deltas(len(v))
    wf = wq / 255.0
    wf = wf / wf.sum(1, keepdims=True)
    vh = np.c_[v, np.ones(len(v))]
    body = sum(wf[:, c:c + 1] * np.einsum("ij,nj->ni", mats[0] if c == 0 else mats[1], vh)[:, :3] for c in (0, 1))
    prop_local = np.array([[0, 0, 0], [0.02, 0, 0], [0, 0.02, 0]], float)
    prop = (w[5] @ np.c_[prop_local, np.ones(3)].T).T[:, :3]
    return body, prop


@pytest.mark.parametrize("fmt", ["glb", "gltf"])
def test_hand_made_scene_poses_match_gltf_formulas(tmp_path, fmt):
    asset = load_gltf(build(tmp_path, fmt), mapping={"prop": "prop"})
    av = asset.avatar
    assert av.skeleton.names == ["hip", "knee"]
    assert list(av.skeleton.parents) == [-1, 0]
    np.testing.assert_allclose(av.skeleton.rest, np.stack([REST_W[1], REST_W[2]]), atol=1e-6)
    assert sorted(av.garments) == ["prop", "sock_node"]
    v, f, j, wq = body_geometry()
    # sparse values substituted; the rest weight 0.25 of the morph target applied (glTF: base + sum w d)
    np.testing.assert_allclose(av.body.mesh.vertices, v + 0.25 * bulge_deltas(len(v)), atol=1e-6)
    np.testing.assert_array_equal(av.body.mesh.faces, f)
    np.testing.assert_allclose(av.body.mesh.uvs["uv0"][:, 0], np.linspace(0, 1, len(v)), atol=1e-4)  # normalized u16
    anim = asset.animations[0]
    np.testing.assert_allclose(anim.times, [0.0, 0.5, 0.6, 1.0], atol=1e-7)
    assert anim.dropped_translation_m < 1e-6 and anim.dropped_scale < 1e-6
    for t, pose in zip(anim.times, anim.poses):
        ref_body, ref_prop = reference_posed(t)
        np.testing.assert_allclose(av.posed_vertices("body", pose), ref_body, atol=2e-6)
        np.testing.assert_allclose(av.posed_vertices("prop", pose), ref_prop, atol=2e-6)
    # between keys, with the animated morph weight (0.25 -> 1 over a second), as a glTF viewer shows it
    for t in (-0.5, 0.13, 0.55, 0.61, 0.97, 1.4):
        ref_body, ref_prop = reference_posed(t, morph_weight=0.25 + 0.75 * min(max(t, 0.0), 1.0))
        np.testing.assert_allclose(asset.posed_vertices("body", "walk", t), ref_body, atol=2e-6)
        np.testing.assert_allclose(asset.posed_vertices("prop", 0, t), ref_prop, atol=2e-6)
        np.testing.assert_allclose(av.posed_vertices("prop", anim.pose_at(t)), ref_prop, atol=2e-6)
    np.testing.assert_allclose(anim.morph_weights["body"][:, 0], 0.25 + 0.75 * anim.times, atol=1e-6)
    np.testing.assert_allclose(asset.morph_targets["body"]["bulge"][:8, 0], 0.01, atol=1e-7)
    np.testing.assert_allclose(asset.morph_default_weights["body"], [0.25])
    np.testing.assert_allclose(asset.attributes["body"]["_TENSION"], np.linspace(0, 1, len(v)), atol=1e-6)


def test_several_primitives_and_eight_influences(tmp_path):
    asset = load_gltf(build(tmp_path))
    sock = asset.avatar.garments["sock_node"]
    sv, sf = cylinder(6, 2, 0.06, 0.3, 0.5)
    assert sock.mesh.n_vertices == len(sv) + 5
    assert sock.skin.indices.shape[1] == 8
    # strip of 5 indices -> 3 triangles {p_i, p_(i+1+i%2), p_(i+2-i%2)} (glTF spec), offset by the first primitive's vertices
    n0 = len(sv)
    np.testing.assert_array_equal(sock.mesh.faces[-3:], np.array([[0, 1, 2], [1, 3, 2], [2, 3, 4]]) + n0)
    dense = sock.skin.dense(2)
    np.testing.assert_allclose(dense[:n0], np.tile([0.25, 0.75], (n0, 1)), atol=1e-6)
    np.testing.assert_allclose(dense[n0:], np.tile([0.25, 0.75], (5, 1)), atol=1e-6)


def test_resampling_at_fps(tmp_path):
    asset = load_gltf(build(tmp_path), fps=4, mapping={"body_mesh": "body"})
    anim = asset.animations[0]
    np.testing.assert_allclose(anim.times, [0, 0.25, 0.5, 0.75, 1.0])
    for t, pose in zip(anim.times, anim.poses):
        np.testing.assert_allclose(asset.avatar.posed_vertices("body", pose), reference_posed(t)[0], atol=2e-6)


def test_sample_channel_against_formulas():
    times = np.array([0.0, 1.0, 3.0])
    vals = np.array([[0.0], [2.0], [3.0]])
    t = np.array([-1.0, 0.5, 1.0, 2.0, 5.0])
    np.testing.assert_allclose(sample_channel(times, vals, "LINEAR", t)[:, 0], [0, 1, 2, 2.5, 3])
    np.testing.assert_allclose(sample_channel(times, vals, "STEP", t)[:, 0], [0, 0, 2, 2, 3])
    p = lambda x: 2 * x ** 3 - x ** 2 + 0.5  # noqa: E731
    dp = lambda x: 6 * x ** 2 - 2 * x  # noqa: E731
    cub = np.concatenate([[[dp(x)], [p(x)], [dp(x)]] for x in times])
    ts = np.linspace(0, 3, 13)
    np.testing.assert_allclose(sample_channel(times, cub, "CUBICSPLINE", ts)[:, 0], p(ts), atol=1e-12)
    q = np.array([quat([0, 0, 1], 0), quat([0, 0, 1], 120)])
    got = sample_channel(np.array([0.0, 1.0]), q, "LINEAR", np.array([0.25]), rotation=True)
    np.testing.assert_allclose(np.abs(got[0]), np.abs(quat([0, 0, 1], 30)), atol=1e-12)
    scale = sample_channel(np.array([0.0, 2.0]), np.array([[1.0, 1, 1], [3.0, 1, 1]]), "LINEAR", np.array([1.0]))
    np.testing.assert_allclose(scale, [[2.0, 1, 1]])


def test_scale_is_reported_as_dropped(tmp_path):
    path = build(tmp_path)
    import json
    import struct

    data = path.read_bytes()
    jl = struct.unpack_from("<I", data, 12)[0]
    doc = json.loads(data[20:20 + jl])
    # reuse the weights sampler output (0.25 -> 1.0) as a uniform... scale needs VEC3: add one
    k = Kit()
    k.blob = bytearray(data[20 + jl + 8:])
    k.views, k.accessors = doc["bufferViews"], doc["accessors"]
    out = k.add(np.array([[1, 1, 1], [1.5, 1.5, 1.5]], np.float32))
    doc["animations"][0]["samplers"].append({"input": doc["animations"][0]["samplers"][0]["input"], "output": out})
    doc["animations"][0]["channels"].append({"sampler": 4, "target": {"node": 2, "path": "scale"}})
    del doc["buffers"]
    asset = load_gltf(k.write_glb(tmp_path / "scaled.glb", doc))
    assert asset.animations[0].dropped_scale == pytest.approx(0.5, abs=1e-6)
    assert any("animated scale" in w and "not in its poses" in w for w in asset.warnings)
    # the exact path applies it: the prop hangs below the knee, whose scale grows 1 -> 1.5 over 0..1 s
    for t in (0.3, 0.8):
        loc = locals_at(t)
        loc[2] = loc[2] @ np.diag([1 + 0.5 * t] * 3 + [1.0])
        want = (worlds(loc)[5] @ np.c_[[[0, 0, 0], [0.02, 0, 0], [0, 0.02, 0]], np.ones(3)].T).T[:, :3]
        np.testing.assert_allclose(asset.posed_vertices("prop", 0, t), want, atol=2e-6)


def test_unknown_garment_name_is_a_clear_error(tmp_path):
    with pytest.raises(KisekaeError, match="no mesh or node named 'cape'"):
        load_gltf(build(tmp_path), garments=["cape"])
    asset = load_gltf(build(tmp_path), garments=["sock"])  # by mesh name
    assert list(asset.avatar.garments) == ["sock"] and asset.ignored == ["prop"]
