"""Loading strangers' files: URIs, size caps, malformed accessors, node cycles, and a fuzz test."""

from __future__ import annotations

import json
import os
import struct
import time

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_gltf_kit import Kit

from kisekae.errors import KisekaeError
from kisekae.io.gltf import load_gltf
from kisekae.io.gltf_write import save_avatar
from kisekae.io.gltf_read import Limits, load_document, resolve_uri


def tri_doc(k: Kit, **prim_extra):
    pos = k.add(np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0]], np.float32))
    prim = {"attributes": {"POSITION": pos}}
    prim.update(prim_extra)
    return {"scenes": [{"nodes": [0]}], "nodes": [{"name": "body", "mesh": 0}],
            "meshes": [{"primitives": [prim]}]}


def glb_parts(path):
    data = path.read_bytes()
    jl = struct.unpack_from("<I", data, 12)[0]
    return json.loads(data[20:20 + jl]), data[20 + jl + 8:]


def write_glb(path, doc, blob):
    js = json.dumps(doc).encode()
    js += b" " * (-len(js) % 4)
    blob = blob + b"\0" * (-len(blob) % 4)
    out = struct.pack("<4sII", b"glTF", 2, 28 + len(js) + len(blob))
    out += struct.pack("<II", len(js), 0x4E4F534A) + js + struct.pack("<II", len(blob), 0x004E4942) + blob
    path.write_bytes(out)
    return path


def test_minimal_file_loads(tmp_path):
    k = Kit()
    asset = load_gltf(k.write_glb(tmp_path / "t.glb", tri_doc(k)))
    assert asset.avatar.body.mesh.n_vertices == 3 and asset.avatar.skeleton.names == ["root"]


@pytest.mark.parametrize("uri, msg", [
    ("../secret.bin", "leaves the asset folder"),
    ("sub/../../secret.bin", "leaves the asset folder"),
    ("%2e%2e/secret.bin", "leaves the asset folder"),
    ("/etc/passwd", "only relative file paths|absolute"),
    ("file:///etc/passwd", "only relative file paths"),
    ("http://example.com/x.bin", "only relative file paths"),
    ("C:/Windows/x.bin", "only relative file paths"),
    ("\\\\server\\share\\x.bin", "absolute"),
])
def test_uris_outside_the_folder_are_refused(tmp_path, uri, msg):
    (tmp_path / "secret.bin").write_bytes(b"\0" * 64)
    asset_dir = tmp_path / "asset"
    asset_dir.mkdir()
    k = Kit()
    doc = k.document(tri_doc(k))
    doc["buffers"] = [{"byteLength": len(k.blob), "uri": uri}]
    (asset_dir / "a.gltf").write_text(json.dumps(doc))
    with pytest.raises(KisekaeError, match=msg):
        load_gltf(asset_dir / "a.gltf")


def test_symlink_escaping_the_folder_is_refused(tmp_path):
    (tmp_path / "outside.bin").write_bytes(b"\0" * 64)
    d = tmp_path / "asset"
    d.mkdir()
    os.symlink(tmp_path / "outside.bin", d / "inside.bin")
    with pytest.raises(KisekaeError, match="outside the asset folder"):
        resolve_uri("inside.bin", d, "a.gltf", "buffers[0]")
    assert resolve_uri("ok%20name.bin", d, "a.gltf", "buffers[0]") == (d / "ok name.bin").resolve()


def test_external_buffer_inside_folder_and_size_checks(tmp_path):
    k = Kit()
    path = k.write_gltf(tmp_path / "a.gltf", tri_doc(k), uri="a.bin")
    assert load_gltf(path).avatar.body.mesh.n_vertices == 3
    doc = json.loads(path.read_text())
    doc["buffers"][0]["byteLength"] = 10_000
    path.write_text(json.dumps(doc))
    with pytest.raises(KisekaeError, match=r"declares 10000 bytes but 'a.bin' has only 36"):
        load_gltf(path)


def test_caps_apply_before_allocation(tmp_path):
    k = Kit()
    path = k.write_gltf(tmp_path / "a.gltf", tri_doc(k))
    with pytest.raises(KisekaeError, match="larger than the cap"):
        load_document(path, Limits(max_data_uri_bytes=8))
    with pytest.raises(KisekaeError, match="more than the cap"):
        load_document(path, Limits(max_buffer_bytes=8))
    with pytest.raises(KisekaeError, match="more than the cap"):
        load_document(path, Limits(max_file_bytes=100))
    doc = json.loads(path.read_text())
    doc["accessors"].append({"componentType": 5126, "type": "MAT4", "count": 10 ** 9})  # zeros, no bufferView
    doc["meshes"][0]["primitives"][0]["attributes"]["_BIG"] = 1
    path.write_text(json.dumps(doc))
    t = time.perf_counter()
    with pytest.raises(KisekaeError, match=r"accessors\[1\] declares 1000000000 x 16 values, more than the cap"):
        load_gltf(path)
    assert time.perf_counter() - t < 1.0


def test_glb_header_and_chunks(tmp_path):
    k = Kit()
    path = k.write_glb(tmp_path / "a.glb", tri_doc(k))
    data = path.read_bytes()
    for bad, msg in [(data[:15], "truncated"),
                     (data[:4] + struct.pack("<I", 1) + data[8:], "container version 1"),
                     (data[:8] + struct.pack("<I", len(data) + 100) + data[12:], "declares"),
                     (data[:12] + struct.pack("<I", 10 ** 6) + data[16:], "chunk at byte 12 declares"),
                     (data[:16] + struct.pack("<I", 0x004E4942) + data[20:], "does not start with a JSON chunk")]:
        path.write_bytes(bad)
        with pytest.raises(KisekaeError, match=msg):
            load_gltf(path)


@pytest.mark.parametrize("mutate, msg", [
    (lambda d: d["accessors"][0].update(count=4), r"need 48 bytes, the bufferView has 36"),
    (lambda d: d["accessors"][0].update(byteOffset=8), r"need 44 bytes"),
    (lambda d: d["accessors"][0].update(byteOffset=2), "not a multiple of the component size"),
    (lambda d: d["bufferViews"][0].update(byteStride=8), "smaller than one element"),
    (lambda d: d["bufferViews"][0].update(byteStride=6), "out of range|not a multiple of 4"),
    (lambda d: d["bufferViews"][0].update(byteLength=400), r"spans bytes 0..400"),
    (lambda d: d["accessors"][0].update(componentType=5124), "not a glTF component type"),
    (lambda d: d["accessors"][0].update(type="VEC7"), "not a glTF accessor type"),
    (lambda d: d["accessors"][0].update(count=-1), "out of range"),
    (lambda d: d["accessors"][0].update(count="3"), "must be an integer"),
    (lambda d: d["meshes"][0]["primitives"][0]["attributes"].update(POSITION=7), r"accessors has 1 entries"),
    (lambda d: d["accessors"][0].update(type="VEC2"), "has type VEC2, expected VEC3"),
    (lambda d: d["nodes"][0].update(children=[0]), "lists itself as a child"),
    (lambda d: d["nodes"].extend([{"children": [2]}, {"children": [1]}]), "cycle"),
    (lambda d: d["nodes"].extend([{"children": [0]}, {"children": [0]}]), "two parents"),
    (lambda d: d["nodes"][0].update(rotation=[0, 0, 0, 2]), "not a unit quaternion"),
    (lambda d: d["nodes"][0].update(matrix=[1] * 16), "not affine"),
    (lambda d: d.update(extensionsRequired=["KHR_draco_mesh_compression"]), "cannot read: KHR_draco"),
    (lambda d: d["asset"].update(version="1.0"), "version '1.0' is not supported"),
])
def test_malformed_documents_give_clear_errors(tmp_path, mutate, msg):
    k = Kit()
    doc = k.document(tri_doc(k))
    mutate(doc)
    doc["buffers"] = [{"byteLength": len(k.blob)}]
    with pytest.raises(KisekaeError, match=msg):
        load_gltf(write_glb(tmp_path / "m.glb", doc, bytes(k.blob)))


def test_bad_indices_and_sparse(tmp_path):
    k = Kit()
    doc = tri_doc(k, indices=k.add(np.array([0, 1, 5], np.uint16), 5123, "SCALAR"))
    with pytest.raises(KisekaeError, match=r"indices reach 5, the primitive has 3 vertices"):
        load_gltf(k.write_glb(tmp_path / "i.glb", doc))
    k = Kit()
    pos = k.add(np.zeros((3, 3), np.float32), sparse=([2, 1], np.ones((2, 3), np.float32)))
    doc = {"nodes": [{"mesh": 0}], "meshes": [{"primitives": [{"attributes": {"POSITION": pos}}]}]}
    with pytest.raises(KisekaeError, match="strictly increasing"):
        load_gltf(k.write_glb(tmp_path / "s.glb", doc))


# ----------------------------------------------------------------------------- fuzzing
@pytest.fixture(scope="module")
def real_glb(tmp_path_factory, avatar_cmu):
    """A real exported asset, small enough to fuzz: the skirt as body, two frames, capsules."""
    from kisekae.avatar.avatar import Avatar
    from kisekae.avatar.poses import named_pose

    sk = avatar_cmu.skeleton
    small = Avatar(sk, avatar_cmu.garments["skirt"], {}, name="skirt", rig="cmu_mb")
    path = tmp_path_factory.mktemp("fuzz") / "skirt.glb"
    save_avatar(path, small, poses=[named_pose(sk, "stand"), named_pose(sk, "crouch")])
    return path.read_bytes()


FUZZ_LIMITS = Limits(max_accessor_elements=1 << 20, max_buffer_bytes=8 << 20, max_frames=2000)


def _mutate_json(doc, path_choice, value):
    """Walk ``path_choice`` (list of ints) into the JSON tree and replace the value reached at its
    end (or the first leaf on the way)."""
    node = doc
    for depth, step in enumerate(path_choice):
        if not isinstance(node, (dict, list)) or not node:
            return doc
        key = sorted(node)[step % len(node)] if isinstance(node, dict) else step % len(node)
        if depth == len(path_choice) - 1 or not isinstance(node[key], (dict, list)):
            node[key] = value
            return doc
        node = node[key]
    return doc


json_values = st.one_of(st.integers(-2, 5), st.integers(-(2 ** 40), 2 ** 40), st.floats(allow_nan=False),
                        st.text(max_size=6), st.none(), st.booleans(), st.lists(st.integers(-1, 40), max_size=17),
                        st.just({}))


@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(data=st.data())
def test_fuzz_real_glb(tmp_path_factory, real_glb, data):
    doc, blob = glb_parts_bytes(real_glb)
    kind = data.draw(st.sampled_from(["json", "json", "bytes", "truncate", "bin"]))
    if kind == "json":
        for _ in range(data.draw(st.integers(1, 3))):
            doc = _mutate_json(doc, data.draw(st.lists(st.integers(0, 10 ** 6), min_size=2, max_size=7)),
                               data.draw(json_values))
        raw = build_glb_bytes(doc, blob)
    else:
        raw = bytearray(real_glb)
        if kind == "truncate":
            raw = raw[: data.draw(st.integers(0, len(raw) - 1))]
        else:
            lo = 0 if kind == "bytes" else 20 + struct.unpack_from("<I", real_glb, 12)[0]
            for _ in range(data.draw(st.integers(1, 8))):
                raw[data.draw(st.integers(lo, len(raw) - 1))] = data.draw(st.integers(0, 255))
    path = tmp_path_factory.mktemp("f") / "m.glb"
    path.write_bytes(bytes(raw))
    t = time.perf_counter()
    try:
        asset = load_gltf(path, limits=FUZZ_LIMITS)
        for a in asset.animations:
            assert all(np.all(np.isfinite(p.rotations)) for p in a.poses)
    except KisekaeError as exc:
        assert str(exc)  # a clear, non-empty message
    assert time.perf_counter() - t < 5.0


def glb_parts_bytes(raw: bytes):
    jl = struct.unpack_from("<I", raw, 12)[0]
    return json.loads(raw[20:20 + jl]), raw[20 + jl + 8:]


def build_glb_bytes(doc, blob) -> bytes:
    js = json.dumps(doc).encode()
    js += b" " * (-len(js) % 4)
    out = struct.pack("<4sII", b"glTF", 2, 28 + len(js) + len(blob))
    return out + struct.pack("<II", len(js), 0x4E4F534A) + js + struct.pack("<II", len(blob), 0x004E4942) + blob
