"""The contact-aware body in the engine glue: bake data, per-frame table, Unity/O3DE files (issue 14, item 2)."""

import json
import re
import shutil

import numpy as np
import pytest

from kisekae.avatar.poses import named_pose
from kisekae.errors import KisekaeError
from kisekae.shaders import contact_bake as cb
from kisekae.shaders.limits import hlsl_default
from kisekae.shaders.toolchain import HLSL_DIR, compile_hlsl

UNITY = HLSL_DIR.parent / "unity"
SRG = HLSL_DIR.parent / "o3de" / "KisekaeSrg.azsli"


def planes_from_tables(tables, skin_matrices, skinned):
    """The body vertex stage from the bake arrays alone, written from kisekae_contact.hlsl's header formula."""
    centre, normal, reach = cb.posed_tables(tables, skin_matrices)
    p = np.array(skinned, dtype=np.float64)
    gap, band, rf, slack = tables["gap"], tables["band"], tables["ring_factor"], tables["rest_slack"]
    for k in range(4):
        j = tables["joints"][:, k]
        side = tables["sides"][:, k]
        s = np.einsum("ij,ij->i", p - centre[j], normal[j]) * side
        dr = tables["rest"] - tables["rest_centre"][j]
        along = np.einsum("ij,ij->i", dr, tables["rest_dir"][j])
        s_rest = along * side
        r = tables["radius"][j]
        flesh = tables["flesh"][j]
        dist2 = np.einsum("ij,ij->i", dr, dr)
        off = np.sqrt(np.maximum(dist2 - along * along, 0.0))
        fade = np.minimum(np.clip((reach[j] * r - np.sqrt(dist2)) / ((rf - 1.0) * r), 0.0, 1.0),
                          np.clip((1.25 * flesh - off) / (0.25 * flesh), 0.0, 1.0))
        t = np.minimum(0.5 * gap, s_rest - band - slack) - (1.0 - fade) * r
        hit = (side != 0) & (reach[j] != 0) & (fade > 0) & (s < t + band)
        mapped = t + band * np.exp(np.minimum((s - t - band) / band, 0.0))
        p[hit] += ((mapped - s) * side)[hit, None] * normal[j][hit]
    return p


@pytest.fixture(scope="module")
def baked(avatar):
    av = avatar.with_body_contact()
    doc = json.loads(json.dumps(cb.contact_bake(av.body.deform, av.skeleton.names)))
    return av, doc


@pytest.mark.parametrize("pose_name", ["crouch", "sit", "arms_forward"])
def test_bake_reproduces_the_contact_body(baked, pose_name):
    """Posing the baked table as the engine does and running the shader's formula gives avatar.body.posed."""
    av, doc = baked
    tables = cb.contact_from_bake(doc, av.skeleton.names)
    pose = named_pose(av.skeleton, pose_name)
    m = pose.skinning_matrices(av.skeleton)
    skinned = av.body.skinned(m).astype(np.float64)
    ours = planes_from_tables(tables, m, skinned)
    ref = av.body.posed(m).astype(np.float64)
    assert np.abs(ref - skinned).max() > 0.005  # the pose bends joints: the contact moves vertices (8 mm arms_forward)
    if pose_name == "crouch":  # deep bends: some joints reach past ringFactor this frame
        assert (cb.posed_tables(tables, m)[2] > tables["ring_factor"]).any()
    np.testing.assert_allclose(ours, ref, atol=1e-5)  # float32 storage of the posed body


def test_bake_document_shape(baked):
    av, doc = baked
    n = av.body.mesh.n_vertices
    assert doc["version"] == cb.BAKE_VERSION and 0 < len(doc["joints"]) <= cb.max_joints()
    assert doc["maxReach"] >= doc["ringFactor"] > 1.0
    assert all(0.0 < j["flesh"] < 1.0 for j in doc["joints"])  # metres: a limb's width
    assert len(doc["vertexJoints"]) == 4 * n and len(doc["vertexSides"]) == 4 * n and len(doc["vertexRest"]) == 3 * n
    sides = np.asarray(doc["vertexSides"]).reshape(-1, 4)
    joints = np.asarray(doc["vertexJoints"]).reshape(-1, 4)
    assert set(np.unique(sides)) <= {-1.0, 0.0, 1.0}
    assert np.all(joints[sides == 0] == 0)  # unused slots: id 0, side 0
    assert {j["child"] for j in doc["joints"]} <= set(av.skeleton.names)


def test_bad_bakes_are_refused(baked, monkeypatch):
    av, doc = baked
    names = av.skeleton.names
    with pytest.raises(KisekaeError, match="version"):
        cb.contact_from_bake({**doc, "version": 99}, names)
    with pytest.raises(KisekaeError, match="version-2"):  # a version-1 bake has no flesh and maxReach
        cb.contact_from_bake({**doc, "version": 1}, names)
    for flesh in (0.0, -0.01):
        bad = json.loads(json.dumps(doc))
        bad["joints"][1]["flesh"] = flesh
        with pytest.raises(KisekaeError, match="flesh"):
            cb.contact_from_bake(bad, names)
    bad = json.loads(json.dumps(doc))
    del bad["joints"][0]["flesh"]
    with pytest.raises(KisekaeError, match="missing"):
        cb.contact_from_bake(bad, names)
    with pytest.raises(KisekaeError, match="non-finite"):
        cb.contact_from_bake({**doc, "maxReach": float("inf")}, names)
    bad = json.loads(json.dumps(doc))
    bad["joints"][0]["child"] = "no_such_bone"
    with pytest.raises(KisekaeError, match="no_such_bone"):
        cb.contact_from_bake(bad, names)
    with pytest.raises(KisekaeError, match="joint ids"):
        cb.contact_from_bake({**doc, "vertexJoints": [len(doc["joints"])] * len(doc["vertexJoints"])}, names)
    with pytest.raises(KisekaeError, match="disagree"):
        cb.contact_from_bake({**doc, "vertexRest": doc["vertexRest"][:-3]}, names)
    with pytest.raises(KisekaeError, match="non-finite"):
        cb.contact_from_bake({**doc, "gap": float("nan")}, names)
    with pytest.raises(KisekaeError, match="missing"):
        cb.contact_from_bake({k: v for k, v in doc.items() if k != "band"}, names)
    monkeypatch.setattr(cb, "max_joints", lambda: 10)
    with pytest.raises(KisekaeError, match="KISEKAE_MAX_JOINTS"):
        cb.contact_bake(av.body.deform, names)


_BODY_PROBE = """#include "KisekaeCore.hlsl"
struct VIn { float3 p : POSITION; float4 joints : TEXCOORD4; float4 sides : TEXCOORD5; float3 rest : TEXCOORD6; };
float4 main(VIn v) : SV_Position
{
    return float4(KisekaeContactPlanes(v.p, v.rest, (uint4)(v.joints + 0.5), v.sides, KISEKAE_CONTACT_PARAMS), 1.0);
}
"""


def test_unity_body_stage_compiles_for_mobile(tmp_path):
    """The body vertex stage in the Unity include layout: constant arrays only, GLSL ES 3.00, no warnings."""
    shutil.copy(UNITY / "Shaders" / "KisekaeCore.hlsl", tmp_path / "KisekaeCore.hlsl")
    shutil.copytree(HLSL_DIR, tmp_path / "hlsl")
    (tmp_path / "probe.hlsl").write_text(_BODY_PROBE)
    c = compile_hlsl(tmp_path / "probe.hlsl", "vert", use_cache=False, core_dir=tmp_path / "hlsl", glsl_version=300,
                     es=True)
    n = hlsl_default("KISEKAE_MAX_JOINTS")
    assert "WARNING" not in c.log.upper()
    for name in ("_KisekaeJointCentre", "_KisekaeJointNormal", "_KisekaeJointRest", "_KisekaeJointRestDir"):
        assert f"{name}[{n}]" in c.glsl, name
    assert "_KisekaeContact" in c.glsl and "buffer" not in c.glsl.replace("Buffer", "")


def test_engine_glue_names_and_sizes_agree():
    cs = (UNITY / "Runtime" / "KisekaeBodyContact.cs").read_text()
    shader = (UNITY / "Shaders" / "KisekaeBodyURP.shader").read_text()
    source = (HLSL_DIR / "kisekae_source_constants.hlsl").read_text()
    srg = SRG.read_text()
    n = int(re.findall(r"public const int MaxJoints = (\d+);", cs)[0])
    assert int(re.findall(r"public const int BakeVersion = (\d+);", cs)[0]) == cb.BAKE_VERSION
    assert "public float flesh;" in cs and "public float maxReach;" in cs
    assert n == hlsl_default("KISEKAE_MAX_JOINTS") == hlsl_default("KISEKAE_MAX_JOINTS", SRG) == cb.max_joints()
    for name in ("_KisekaeJointCentre", "_KisekaeJointNormal", "_KisekaeJointRest", "_KisekaeJointRestDir",
                 "_KisekaeContact"):
        assert f'"{name}"' in cs and name in source, name
    for macro in ("KISEKAE_LOAD_JOINT_PLANE", "KISEKAE_CONTACT_PARAMS"):
        assert f"#define {macro}" in srg and f"#define {macro}" in source, macro
    # the body shader reads the channels the component writes
    for ch in (4, 5, 6):
        assert f"SetUVs({ch}," in cs and f"TEXCOORD{ch}" in shader
    assert "KisekaeContactPlanes(" in shader and '#include "KisekaeCore.hlsl"' in shader
    # the component refuses what does not fit instead of dropping joints
    assert "b.joints.Length > MaxJoints" in cs and "enabled = false" in cs
