"""The Blender extension's parts that run without Blender: frames, PC2 caches, the array-level fix and
check, the extension builder's refusals and manifest, and the NumPy-version-independent BVH."""

from __future__ import annotations

import subprocess
import sys
import tomllib
import zipfile

import numpy as np
import pytest

from kisekae.blender import compute
from kisekae.blender.build import PLATFORMS, build_extension, manifest
from kisekae.blender.frames import matrices_to_blender, matrices_to_kisekae, to_blender, to_kisekae
from kisekae.blender.pc2 import read_pc2, write_pc2
from kisekae.errors import KisekaeError


def test_frames_round_trip_exactly_and_keep_handedness():
    rng = np.random.default_rng(0)
    p = rng.normal(size=(100, 3)).astype(np.float32)
    assert np.array_equal(to_blender(to_kisekae(p)), p)
    # Blender's +Z (up) is kisekae's +Y (up); Blender's -Y (front view looks along +Y) is kisekae's +Z
    assert np.array_equal(to_kisekae(np.array([[0.0, 0.0, 1.0], [0.0, -1.0, 0.0]])), [[0, 1, 0], [0, 0, 1]])
    m = rng.normal(size=(5, 3, 3))
    k = matrices_to_kisekae(m)
    assert np.allclose(k @ to_kisekae(p[:3].astype(np.float64)).T[None],
                       to_kisekae((m @ p[:3].astype(np.float64).T[None]).transpose(0, 2, 1).reshape(-1, 3))
                       .reshape(5, 3, 3).transpose(0, 2, 1))
    full = np.tile(np.eye(4), (5, 1, 1))
    full[:, :3, :3] = k
    assert np.allclose(matrices_to_blender(full)[:, :3, :3], m)


def test_pc2_round_trip_layout_and_refusals(tmp_path):
    frames = np.arange(2 * 4 * 3, dtype=np.float32).reshape(2, 4, 3)
    path = write_pc2(tmp_path / "a.pc2", frames, start=5.0)
    raw = path.read_bytes()
    assert raw[:12] == b"POINTCACHE2\0" and len(raw) == 32 + 2 * 4 * 12
    # the header fields at their documented offsets (int32 version, points; float start, rate; int samples)
    assert np.frombuffer(raw[12:20], "<i4").tolist() == [1, 4]
    assert np.frombuffer(raw[20:28], "<f4").tolist() == [5.0, 1.0]
    assert np.frombuffer(raw[28:32], "<i4").tolist() == [2]
    got, start, rate = read_pc2(path)
    assert np.array_equal(got, frames) and (start, rate) == (5.0, 1.0)
    with pytest.raises(KisekaeError, match="file exists"):
        write_pc2(path, frames, 0.0)
    assert path.read_bytes() == raw
    write_pc2(path, frames[:1], 0.0, force=True)
    assert read_pc2(path)[0].shape == (1, 4, 3)
    with pytest.raises(KisekaeError, match="non-finite"):
        write_pc2(tmp_path / "b.pc2", np.full((1, 2, 3), np.nan), 0.0)
    (tmp_path / "c.pc2").write_bytes(raw[:32])  # the header says 2 samples of 4 points; no positions follow
    with pytest.raises(KisekaeError, match="c.pc2: .*size"):
        read_pc2(tmp_path / "c.pc2")


def test_polygons_to_mesh_keeps_quads_and_fans_ngons():
    rest = np.random.default_rng(1).normal(size=(9, 3)).astype(np.float32)
    # a quad, a triangle, a pentagon, in Blender's loop layout
    cv = np.array([0, 1, 2, 3, 3, 2, 4, 4, 5, 6, 7, 8])
    ls, lt = np.array([0, 4, 7]), np.array([4, 3, 5])
    m = compute.polygons_to_mesh(rest, ls, lt, cv, name="g")
    assert m.quads.tolist() == [[0, 1, 2, 3]]
    assert m.faces.tolist() == [[0, 1, 2], [0, 2, 3], [3, 2, 4], [4, 5, 6], [4, 6, 7], [4, 7, 8]]
    with pytest.raises(KisekaeError, match="g: polygon corners out of range"):
        compute.polygons_to_mesh(rest, np.array([0]), np.array([5]), cv[:4], name="g")


def test_rest_offsets_invert_the_blend():
    rng = np.random.default_rng(2)
    blend = np.eye(3) + 0.3 * rng.normal(size=(50, 3, 3))
    delta = rng.normal(size=(50, 3))
    back = compute.rest_offsets(delta, blend)
    assert np.allclose(np.einsum("nij,nj->ni", blend, back), delta)
    assert np.array_equal(compute.rest_offsets(delta, None), delta)


def test_array_fix_and_check_equal_fix_pose_and_check_pose(avatar):
    """What the operators compute from Blender's arrays (the exact solver) equals kisekae check --fix
    --fix-method exact on the avatar."""
    from kisekae.avatar.poses import named_pose
    from kisekae.fit.fix import fix_pose
    from kisekae.qa.check import check_pose

    pose = named_pose(avatar.skeleton, "crouch")
    m = pose.skinning_matrices(avatar.skeleton)
    body = avatar.body.mesh
    query = compute.body_query(compute.polygons_to_mesh(body.vertices, *_loops(body.quads)), avatar.body.posed(m))
    want = fix_pose(avatar, pose, ["tights", "skirt"], method="exact")
    before = {r["garment"]: r for r in check_pose(avatar, pose, ["tights", "skirt"])}
    for g in ("tights", "skirt"):
        part = avatar.part(g)
        mesh = compute.polygons_to_mesh(part.mesh.vertices, *_loops(part.mesh.quads), name=g)
        blend = np.einsum("nk,nkij->nij", part.skin.weights.astype(np.float64), m[part.skin.indices][:, :, :3, :3])
        fixed, b, a = compute.fix_and_check(query, mesh, part.posed(m), compute.fix_params(g, True), blend)
        assert np.array_equal(fixed, want[g].positions)
        assert b["inside_count"] == before[g]["inside_count"] > 0 and a["inside_count"] == 0
        assert np.array_equal(compute.offending_vertices(b, mesh.edges)[b["inside"]], np.ones(b["inside_count"], bool))


def _loops(quads):
    return np.arange(len(quads)) * 4, np.full(len(quads), 4), quads.ravel()


def test_bvh_does_not_depend_on_numpy_partitioning():
    """Leaves hold their triangles in centroid order, ties by index (a stable sort), whatever the NumPy."""
    from kisekae.geom.bvh import build_bvh

    # a grid of equal-sized triangles: many equal centroid coordinates along the split axis (with
    # argpartition the leaves differed from this order on NumPy 2.4 and 1.26 alike, and differently)
    n = 100
    xs, ys = np.meshgrid(np.arange(n + 1.0), np.arange(3.0))
    v = np.stack([xs.ravel(), ys.ravel(), np.zeros(xs.size)], axis=1)
    idx = np.arange(xs.size).reshape(xs.shape)
    a, b, c, d = idx[:-1, :-1].ravel(), idx[:-1, 1:].ravel(), idx[1:, 1:].ravel(), idx[1:, :-1].ravel()
    faces = np.concatenate([np.stack([a, b, c], 1), np.stack([a, c, d], 1)])
    bvh = build_bvh(v, faces, leaf_size=4)
    cent = v[faces].mean(axis=1)
    # rebuild the expected order independently: recursive stable median splits
    def expect(ids):
        if len(ids) <= 4:
            return list(ids)
        c = cent[ids]
        axis = int(np.argmax(c.max(0) - c.min(0)))
        ids = ids[np.argsort(c[:, axis], kind="stable")]
        mid = len(ids) // 2
        return expect(ids[:mid]) + expect(ids[mid:])
    assert bvh.order.tolist() == expect(np.arange(len(faces)))


def test_manifest_is_valid_toml_with_the_wheels():
    text = manifest(["kisekae-0.1.0-py3-none-any.whl", "numba-1.whl"], ["linux-x64", "windows-x64"])
    data = tomllib.loads(text)
    assert data["schema_version"] == "1.0.0" and data["type"] == "add-on" and data["id"] == "kisekae"
    assert data["blender_version_min"] == "4.2.0"
    assert data["wheels"] == ["./wheels/kisekae-0.1.0-py3-none-any.whl", "./wheels/numba-1.whl"]
    assert data["platforms"] == ["linux-x64", "windows-x64"]
    assert len(data["tagline"]) <= 64 and not data["tagline"].endswith(".")
    assert set(PLATFORMS) == {"linux-x64", "windows-x64", "macos-arm64", "macos-x64"}


def test_blender_addon_refuses_before_building(tmp_path):
    """An existing zip, a file where the folder goes, an unknown platform, missing wheels: one line, nothing written."""
    out = tmp_path / "ext"
    out.mkdir()
    z = out / "kisekae-0.1.0.zip"
    z.write_bytes(b"mine")

    def cli(*args):
        return subprocess.run([sys.executable, "-m", "kisekae", "blender-addon", *args], capture_output=True,
                              text=True, timeout=300)

    r = cli("-o", str(out))
    assert r.returncode == 2 and r.stderr.strip().count("\n") == 0
    assert "kisekae-0.1.0.zip: file exists" in r.stderr and "--force" in r.stderr and z.read_bytes() == b"mine"
    (tmp_path / "afile").write_text("x")
    r = cli("-o", str(tmp_path / "afile"))
    assert r.returncode == 2 and "is a file, not a folder" in r.stderr
    r = cli("-o", str(out), "--platform", "amiga")
    assert r.returncode == 2 and "invalid choice" in r.stderr
    empty = tmp_path / "nowheels"
    empty.mkdir()
    with pytest.raises(KisekaeError, match="pip could not download numba"):
        build_extension(tmp_path / "ext2", wheels_from=empty)
    assert not (tmp_path / "ext2" / "kisekae-0.1.0.zip").exists()
    assert list((tmp_path / "ext2").glob("*")) == [] if (tmp_path / "ext2").exists() else True


def test_package_imports_without_bpy():
    code = ("import sys, kisekae, kisekae.blender, kisekae.blender.build, kisekae.blender.compute, "
            "kisekae.blender.pc2, kisekae.cli; kisekae.cli.build_parser(); assert 'bpy' not in sys.modules")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    r = subprocess.run([sys.executable, "-c", "import kisekae.blender.addon"], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode != 0 and "bpy" in r.stderr


def test_extension_zip_layout(tmp_path):
    """With the wheels given as a folder (no index), the zip holds the manifest, the entry and every wheel."""
    wheels = tmp_path / "w"
    wheels.mkdir()
    from importlib import metadata

    from kisekae.blender.build import BUNDLED

    for name in BUNDLED:  # empty stand-ins with the right names are enough for pip download --no-index --no-deps
        ver = metadata.version(name)
        (wheels / f"{name}-{ver}-cp311-cp311-manylinux_2_28_x86_64.whl").write_bytes(_tiny_wheel(name, ver))
    z = build_extension(tmp_path / "out", wheels_from=wheels, platforms=["linux-x64"])
    with zipfile.ZipFile(z) as zf:
        names = zf.namelist()
        data = tomllib.loads(zf.read("blender_manifest.toml").decode())
        init = zf.read("__init__.py").decode()
    assert "blender_manifest.toml" in names and "__init__.py" in names
    assert "from kisekae.blender.addon import register, unregister" in init
    assert sorted(n for n in names if n.startswith("wheels/")) == sorted(w[2:] for w in data["wheels"])
    assert any(n.startswith("wheels/kisekae-0.1.0-") for n in names) and len(data["wheels"]) == 4
    with pytest.raises(KisekaeError, match="file exists"):
        build_extension(tmp_path / "out", wheels_from=wheels, platforms=["linux-x64"])


def _tiny_wheel(name, ver):
    import io

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        di = f"{name}-{ver}.dist-info"
        zf.writestr(f"{di}/METADATA", f"Metadata-Version: 2.1\nName: {name}\nVersion: {ver}\n")
        zf.writestr(f"{di}/WHEEL", "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: false\n"
                                   "Tag: cp311-cp311-manylinux_2_28_x86_64\n")
        zf.writestr(f"{di}/RECORD", "")
    return buf.getvalue()
