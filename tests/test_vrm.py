"""VRM 0.x / 1.0: humanoid mapping, springBone colliders <-> capsule rig, automatic capsules."""

from __future__ import annotations

import json
import struct

import numpy as np
import pytest
from test_gltf_kit import Kit, cylinder, quat, trs

from kisekae.errors import KisekaeError
from kisekae.io.gltf import load_gltf
from kisekae.io.gltf_write import save_avatar
from kisekae.avatar.humanoid import VRM1_REQUIRED, guess_humanoid
from kisekae.fit.humanoid import humanoid_capsules

HIP = trs((0, 0.9, 0), quat([0, 0, 1], 20))
KNEE_LOCAL = trs((0, -0.45, 0))
TAG_LOCAL = trs((0.03, -0.1, 0.0), quat([1, 0, 0], 90))  # a non-joint child of the knee


def vrm_scene(tmp_path, extensions, name="a.vrm"):
    k = Kit()
    v, f = cylinder(6, 3, 0.06, 0.4, 0.9)
    rest = [HIP, HIP @ KNEE_LOCAL]
    ibm = np.stack([np.linalg.inv(m) for m in rest]).transpose(0, 2, 1).reshape(2, 16)
    j = np.tile([0, 1, 0, 0], (len(v), 1)).astype(np.uint8)
    w = np.tile([0.5, 0.5, 0, 0], (len(v), 1)).astype(np.float32)
    prim = {"attributes": {"POSITION": k.add(v.astype(np.float32)), "JOINTS_0": k.add(j, 5121, "VEC4"),
                           "WEIGHTS_0": k.add(w)}, "indices": k.add(f.reshape(-1).astype(np.uint16), 5123, "SCALAR")}
    doc = {"scenes": [{"nodes": [0, 3]}],
           "nodes": [{"name": "J_hips", "translation": [0, 0.9, 0], "rotation": quat([0, 0, 1], 20).tolist(),
                      "children": [1]},
                     {"name": "J_knee", "translation": [0, -0.45, 0], "children": [2]},
                     {"name": "tag", "matrix": TAG_LOCAL.T.reshape(-1).tolist()},
                     {"name": "Body", "mesh": 0, "skin": 0}],
           "meshes": [{"primitives": [prim]}],
           "skins": [{"joints": [0, 1], "inverseBindMatrices": k.add(ibm.astype(np.float32), 5126, "MAT4")}],
           "extensions": extensions, "extensionsUsed": sorted(extensions)}
    return k.write_glb(tmp_path / name, doc), v


def world_of(rig, pose_world):
    a, b, ra, rb = rig.posed(pose_world)
    return a, b, ra


def test_vrm1_humanoid_and_colliders(tmp_path):
    ext = {"VRMC_vrm": {"specVersion": "1.0", "humanoid": {"humanBones": {"hips": {"node": 0},
                                                                         "leftUpperLeg": {"node": 0},
                                                                         "leftLowerLeg": {"node": 1}}}},
           "VRMC_springBone": {"specVersion": "1.0", "colliders": [
               {"node": 0, "shape": {"sphere": {"offset": [0.0, 0.1, 0.0], "radius": 0.08}}},
               {"node": 2, "shape": {"capsule": {"offset": [0.0, 0.0, 0.0], "tail": [0.0, 0.2, 0.0], "radius": 0.05}}},
           ]}}
    path, _ = vrm_scene(tmp_path, ext)
    asset = load_gltf(path)
    assert asset.vrm.version == "1"
    assert asset.vrm.humanoid == {"hips": 0, "leftUpperLeg": 0, "leftLowerLeg": 1}
    rig = asset.capsules
    np.testing.assert_array_equal(rig.bone, [0, 1])  # the tag's collider moves to its ancestor bone (knee)
    rest_world = asset.avatar.skeleton.rest.astype(np.float64)
    a, b, r = world_of(rig, rest_world)
    np.testing.assert_allclose(a[0], (HIP @ [0, 0.1, 0, 1])[:3], atol=1e-6)
    tag_world = HIP @ KNEE_LOCAL @ TAG_LOCAL
    np.testing.assert_allclose(a[1], tag_world[:3, 3], atol=1e-6)
    np.testing.assert_allclose(b[1], (tag_world @ [0, 0.2, 0, 1])[:3], atol=1e-6)
    np.testing.assert_allclose(r, [0.08, 0.05])


def test_vrm0_turn_and_offsets(tmp_path):
    ext = {"VRM": {"humanoid": {"humanBones": [{"bone": "hips", "node": 0}, {"bone": "leftLowerLeg", "node": 1}]},
                   "secondaryAnimation": {"colliderGroups": [
                       {"node": 1, "colliders": [{"offset": {"x": 0.01, "y": 0.02, "z": 0.03}, "radius": 0.04}]}]}}}
    path, v = vrm_scene(tmp_path, ext)
    asset = load_gltf(path)
    turn = np.diag([-1.0, 1.0, -1.0])
    assert asset.vrm.version == "0" and asset.vrm.humanoid == {"hips": 0, "leftLowerLeg": 1}
    np.testing.assert_allclose(asset.avatar.body.mesh.vertices, v @ turn.T, atol=1e-6)
    a, _, r = world_of(asset.capsules, asset.avatar.skeleton.rest.astype(np.float64))
    knee = HIP @ KNEE_LOCAL
    np.testing.assert_allclose(a[0], turn @ (knee @ [0.01, 0.02, -0.03, 1])[:3], atol=1e-6)  # z flipped (VRM 0.x)
    assert r[0] == pytest.approx(0.04)
    unturned = load_gltf(path, vrm0_turn=False)
    np.testing.assert_allclose(unturned.avatar.body.mesh.vertices, v, atol=1e-6)


def test_bad_vrm_data_is_a_clear_error(tmp_path):
    ext = {"VRMC_springBone": {"colliders": [{"node": 9, "shape": {"sphere": {"radius": 0.1}}}]}}
    path, _ = vrm_scene(tmp_path, ext)
    with pytest.raises(KisekaeError, match=r"colliders\[0\].node = 9 is not a node index"):
        load_gltf(path)


def test_capsules_round_trip_through_vrm_colliders_only(tmp_path, avatar):
    hum = guess_humanoid(avatar.skeleton.names)
    body = avatar.body
    rig = humanoid_capsules(body.mesh.vertices, body.skin.indices, body.skin.weights, avatar.skeleton.rest, hum,
                            avatar.skeleton.names)
    path = tmp_path / "a.vrm"
    save_avatar(path, avatar, capsules=rig)
    # drop our exact extras so that only VRMC_springBone is left
    data = path.read_bytes()
    jl = struct.unpack_from("<I", data, 12)[0]
    doc = json.loads(data[20:20 + jl])
    del doc["extras"]["kisekae"]["capsules"]
    js = json.dumps(doc).encode()
    js += b" " * (-len(js) % 4)
    blob = data[20 + jl:]
    path.write_bytes(struct.pack("<4sII", b"glTF", 2, 20 + len(js) + len(blob)) + struct.pack("<II", len(js), 0x4E4F534A)
                     + js + blob)
    back = load_gltf(path).capsules
    np.testing.assert_array_equal(back.bone, rig.bone)
    np.testing.assert_allclose(back.p0, rig.p0, atol=1e-6)
    np.testing.assert_allclose(back.p1, rig.p1, atol=1e-6)
    np.testing.assert_allclose(back.r0, np.maximum(rig.r0, rig.r1), atol=1e-7)  # VRM has one radius


def test_guess_humanoid_on_builtin_rigs(avatar, avatar_cmu):
    for av in (avatar, avatar_cmu):
        hum = guess_humanoid(av.skeleton.names)
        assert set(VRM1_REQUIRED) <= set(hum)
        # left is the character's left: +X in the glTF frame (character faces +Z)
        assert av.skeleton.heads[hum["leftUpperLeg"], 0] > 0 > av.skeleton.heads[hum["rightUpperLeg"], 0]
    assert guess_humanoid(["a", "b"]) == {}


def test_humanoid_capsules_on_a_cylinder():
    """Vertices on a 0.1 m cylinder around a bone give radius 0.1 at both ends."""
    v, _ = cylinder(16, 9, 0.1, 0.0, 0.5)
    rest = np.stack([np.eye(4), trs((0, 0.5, 0))])
    idx = np.zeros((len(v), 1), np.int32)
    w = np.ones((len(v), 1), np.float32)
    rig = humanoid_capsules(v, idx, w, rest, {"leftUpperLeg": 0, "leftLowerLeg": 1})
    assert len(rig) == 1
    np.testing.assert_allclose(rig.p0[0], [0, 0, 0], atol=1e-12)
    np.testing.assert_allclose(rig.p1[0], [0, 0.5, 0], atol=1e-12)
    np.testing.assert_allclose([rig.r0[0], rig.r1[0]], [0.1, 0.1], atol=1e-6)


def test_humanoid_capsules_on_builtin_avatar(avatar):
    hum = guess_humanoid(avatar.skeleton.names)
    b = avatar.body
    rig = humanoid_capsules(b.mesh.vertices, b.skin.indices, b.skin.weights, avatar.skeleton.rest, hum)
    assert len(rig) >= 12
    thigh = list(rig.bone).index(avatar.skeleton.index["thigh_l"])
    assert 0.04 < rig.r0[thigh] < 0.11 and 0.03 < rig.r1[thigh] < 0.08  # metres, tapering toward the knee
