"""Covered-skin culling in the engine glue: the bake and its loader, kisekae fit's files, Unity's component, preview."""

import json
import re

import numpy as np
import pytest

from kisekae.errors import KisekaeError
from kisekae.fit.runtime import covered_skin_triangles
from kisekae.shaders import covered_bake as cb
from kisekae.shaders.toolchain import HLSL_DIR

GLUE = HLSL_DIR.parent / "unity" / "Runtime" / "KisekaeCoveredSkin.cs"
SURFACE_GLUE = HLSL_DIR.parent / "unity" / "Runtime" / "KisekaeSurfacePush.cs"


@pytest.fixture(scope="module")
def contact_avatar():
    from kisekae.avatar.builtin import load_builtin_avatar

    from kisekae.avatar.contact import GAP, apply_contact

    return apply_contact(load_builtin_avatar(), GAP)


@pytest.fixture(scope="module")
def masks(contact_avatar):
    return {g: covered_skin_triangles(contact_avatar, g) for g in ("tights", "skirt")}


@pytest.mark.parametrize("garment", ["tights", "skirt"])
def test_bake_round_trips(contact_avatar, masks, tmp_path, garment):
    body = contact_avatar.body.mesh
    mask = masks[garment]
    doc = cb.covered_bake(mask, garment, body.n_vertices)
    path = cb.write_covered(doc, cb.covered_bake_path(tmp_path, garment))
    assert path.name == f"{garment}.covered.json"
    raw = json.loads(path.read_text())
    assert raw["format"] == cb.COVERED_BAKE_FORMAT and raw["version"] == cb.COVERED_BAKE_VERSION == 1
    assert raw["garment"] == garment and raw["bodyVertices"] == body.n_vertices == 13380
    assert raw["bodyTriangles"] == len(body.faces) == 26756
    assert raw["triangles"] == sorted(raw["triangles"]) and all(type(t) is int for t in raw["triangles"])
    for source in (path, str(path), doc):
        got = cb.load_covered(source, len(body.faces), body.n_vertices)
        np.testing.assert_array_equal(got["mask"], mask)
        np.testing.assert_array_equal(got["triangles"], np.flatnonzero(mask))
        assert got["garment"] == garment and got["n_body_triangles"] == 26756 and got["n_body_vertices"] == 13380
    # what the docs quote: tights 10,204 triangles in about 58 KB, the skirt's 623, all but 10 inside them
    if garment == "tights":
        assert mask.sum() == 10204 and 52_000 < path.stat().st_size < 66_000
    else:
        assert mask.sum() == 623 and (mask & ~masks["tights"]).sum() == 10


def _doc(**change):
    doc = {"format": "kisekae-covered-skin", "version": 1, "garment": "tights", "bodyVertices": 6, "bodyTriangles": 5,
           "triangles": [0, 2, 4]}
    doc.update(change)
    return {k: v for k, v in doc.items() if v is not _DROP}


_DROP = object()


@pytest.mark.parametrize("change, message", [
    ({"version": 2}, "not a version-1 kisekae covered-skin bake"),
    ({"format": "kisekae-surface-bake"}, "not a version-1 kisekae covered-skin bake"),
    ({"bodyTriangles": 6}, "baked for a body of 6 triangles, the body has 5"),
    ({"bodyVertices": 7}, "baked for a body of 7 vertices, the body has 6"),
    ({"bodyTriangles": _DROP}, "'bodyTriangles' must be a non-negative integer"),
    ({"bodyVertices": 6.0}, "'bodyVertices' must be a non-negative integer"),
    ({"garment": 3}, "'garment' must be the garment's name"),
    ({"triangles": _DROP}, "'triangles' must be a list"),
    ({"triangles": "0 2 4"}, "'triangles' must be a list"),
    ({"triangles": [0, 5]}, r"triangle id 5 \(entry 1\) is outside 0..4"),
    ({"triangles": [-1, 2]}, r"triangle id -1 \(entry 0\) is outside 0..4"),
    ({"triangles": [0, 10 ** 30]}, "triangle id a very large integer"),
    ({"triangles": [0, 1.5]}, r"not an integer \(entry 1"),
    ({"triangles": [0, 2.0]}, r"not an integer \(entry 1"),
    ({"triangles": [True, 2]}, r"not an integer \(entry 0"),
    ({"triangles": [0, "2"]}, r"not an integer \(entry 1"),
    ({"triangles": [0, 2, 2]}, "triangle id 2 is listed twice"),
    ({"triangles": [0, 3, 2]}, r"not ascending \(entry 2\)"),
])
def test_bad_bakes_are_refused_naming_the_file(tmp_path, change, message):
    path = tmp_path / "tights.covered.json"
    path.write_text(json.dumps(_doc(**change)))
    with pytest.raises(KisekaeError, match=message) as err:
        cb.load_covered(path, 5, 6)
    assert err.value.source == str(path)
    with pytest.raises(KisekaeError, match=message):  # a document is named as such
        cb.load_covered(_doc(**change), 5, 6)


def test_unreadable_files_are_refused(tmp_path):
    assert cb.load_covered(_doc(), 5)["triangles"].tolist() == [0, 2, 4]  # the vertex count is checked only if given
    assert cb.load_covered(_doc(triangles=[]), 5)["mask"].tolist() == [False] * 5
    with pytest.raises(KisekaeError, match="not found"):
        cb.load_covered(tmp_path / "none.covered.json", 5)
    for text, message in (("{", "not a JSON covered-skin bake"), ("[1, 2]", "not an object"),
                          ('{"triangles": [' + "9" * 5000 + "]}", "not a JSON covered-skin bake")):
        bad = tmp_path / "bad.covered.json"
        bad.write_text(text)
        with pytest.raises(KisekaeError, match=message) as err:
            cb.load_covered(bad, 5)
        assert "bad.covered.json" in str(err.value)
    with pytest.raises(KisekaeError, match="bool mask"):
        cb.covered_bake(np.zeros(5, int), "tights", 6)


def test_fit_writes_the_covered_lists_and_refuses_to_overwrite(contact_avatar, masks, tmp_path, capsys):
    from kisekae.cli import main

    assert main(["fit", "--pose", "stand", "--garment", "skirt", "-o", str(tmp_path)]) == 0
    path = tmp_path / "skirt.covered.json"
    body = contact_avatar.body.mesh
    got = cb.load_covered(path, len(body.faces), body.n_vertices)
    np.testing.assert_array_equal(got["mask"], masks["skirt"])  # the fit avatar is on the contact body by default
    assert not (tmp_path / "tights.covered.json").exists()
    assert "covered-skin culling lists" in capsys.readouterr().out
    # an existing list is refused before anything is written, and --force overwrites it
    out = tmp_path / "again"
    out.mkdir()
    (out / "skirt.covered.json").write_text("mine")
    assert main(["fit", "--pose", "stand", "--garment", "skirt", "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert "skirt.covered.json" in err and "--force" in err
    assert [p.name for p in out.iterdir()] == ["skirt.covered.json"]
    assert (out / "skirt.covered.json").read_text() == "mine"
    # (--force overwriting: the same check_outputs call as the surface bake's, run in test_surface_engine)


def _unity_lists(faces, mask, submesh_triangles):
    """What KisekaeCoveredSkin builds: the body split into submeshes in kisekae's triangle order, each culled by
    ``id - offset``, its kept triangles in their order."""
    lists, offset = [], 0
    for count in submesh_triangles:
        sub = faces[offset:offset + count]
        lists.append(sub[~mask[offset + np.arange(count)]])
        offset += count
    return lists


def test_submesh_mapping_keeps_kisekae_order(contact_avatar, masks):
    faces = contact_avatar.body.mesh.faces
    worn = masks["tights"] | masks["skirt"]
    for split in ([len(faces)], [100, 20000, len(faces) - 20100], [0, len(faces), 0]):
        lists = _unity_lists(faces, worn, split)
        np.testing.assert_array_equal(np.concatenate(lists), faces[~worn])
    assert len(faces) - worn.sum() == 16542  # the docs' count with the tights and the skirt on


def test_unity_component_agrees_with_the_bake():
    cs = GLUE.read_text()
    assert f"public const int BakeVersion = {cb.COVERED_BAKE_VERSION};" in cs
    assert f'public const string BakeFormat = "{cb.COVERED_BAKE_FORMAT}";' in cs
    for field in ("public string format;", "public int version;", "public string garment;", "public int bodyVertices;",
                  "public int bodyTriangles;", "public int[] triangles;"):
        assert field in cs, field
    # refuses another mesh naming the object, culls per submesh keeping its base vertex, and restores on disable
    assert "b.bodyTriangles != _nTriangles" in cs and "b.bodyVertices != mesh.vertexCount" in cs
    assert "KisekaeCoveredSkin on '{name}'" in cs and "enabled = false" in cs
    assert "SetIndices(lists[s], MeshTopology.Triangles, s, false, _baseVertex[s])" in cs
    assert re.search(r"void OnDisable\(\)[\s\S]*_body\.sharedMesh = _original;", cs)
    assert "activeInHierarchy" in cs
    # the surface push's body normals and triangle count ignore the culling
    assert cs.count("{") == cs.count("}")
    surface = SURFACE_GLUE.read_text()
    assert "body.sharedMesh.triangles" not in surface and surface.count("KisekaeCoveredSkin.FullTriangles(body)") == 2


def test_preview_culls_the_covered_skin(contact_avatar, masks):
    from kisekae.app.preview import PreviewModel
    from kisekae.cli import build_parser

    class Capture:
        def draw(self, items, camera, size):
            self.items = items
            return type("Frame", (), {"rgb": np.zeros((size[1], size[0], 3), np.uint8)})()

    model = PreviewModel(contact_avatar, pose="stand", view="front", size=(32, 24), renderer=Capture())
    assert model.cull
    model.frame()
    body = model.renderer.items[0]
    faces = contact_avatar.body.mesh.faces
    worn = masks["tights"] | masks["skirt"]
    assert body.role == "body"
    np.testing.assert_array_equal(body.faces, faces[~worn])
    # positions and normals are those of the whole body (the engine swaps only the index buffer)
    assert len(body.positions) == len(body.normals) == contact_avatar.body.mesh.n_vertices
    model.cull = False
    model.frame()
    np.testing.assert_array_equal(model.renderer.items[0].faces, faces)
    np.testing.assert_allclose(model.renderer.items[0].normals, body.normals)
    assert build_parser().parse_args(["preview", "--no-cull"]).cull is False
    assert build_parser().parse_args(["preview"]).cull is True
