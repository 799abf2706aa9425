"""The part contact in the engine glue: Unity's KisekaeBodyParts and its kernels' order, Kisekae/BodyURP's prepared
body, O3DE's SRG. (The kernels themselves run on llvmpipe in test_surface_engine.test_unity_kernels_run_the_part_contact.)"""

import json
import re

import pytest

from conftest import flat_srg

from kisekae.avatar import part_contact as pc
from kisekae.shaders import part_bake as pb
from kisekae.shaders.toolchain import HLSL_DIR, compile_hlsl

UNITY = HLSL_DIR.parent / "unity"
PARTS = UNITY / "Runtime" / "KisekaeBodyParts.cs"
PUSH = UNITY / "Runtime" / "KisekaeSurfacePush.cs"
COMPUTE = UNITY / "Shaders" / "KisekaeSurfacePush.compute"
BODY_SHADER = UNITY / "Shaders" / "KisekaeBodyURP.shader"
SRG = HLSL_DIR.parent / "o3de" / "KisekaeSrg.azsli"
KERNELS = ("KisekaePartDepths", "KisekaePairFades", "KisekaePartStepFirst", "KisekaeBodySmooth", "KisekaePartStepAgain",
           "KisekaePartGuards", "KisekaePartApply")


def test_unity_component_reads_what_the_bake_writes(avatar):
    """KisekaeBodyParts' constants are kisekae's, and its JsonUtility classes name every entry of part_bake's header
    (a field it misspelt would read as zero or null in Unity)."""
    cs = PARTS.read_text()
    assert f"public const int BakeVersion = {pb.BAKE_VERSION};" in cs
    assert f"public const int MaxParts = {pc.MAX_PARTS};" in cs
    assert re.search(r"const float MinDeterminant = ([0-9e.-]+)f;", cs).group(1) == f"{pc.MIN_DETERMINANT:g}"
    from kisekae.avatar import flip_guard as fg

    assert f"public const float GuardCos = {fg.GUARD_COS:g}f;" in cs
    assert f"public const int GuardHalvings = {fg.GUARD_HALVINGS};" in cs
    assert f"public const int GuardReverts = {fg.GUARD_REVERTS};" in cs
    doc, _ = pb.part_bake(avatar.with_part_contact().body.deform, avatar.skeleton.names)
    doc = json.loads(json.dumps(doc))

    def fields(cls):
        body = cs[cs.index(f"public class {cls}"):]
        body = body[:body.index("}")]
        return {name.strip() for decl in re.findall(r"public [\w\[\]]+ ([\w,\s]+);", body) for name in decl.split(",")}

    assert set(doc) == fields("KisekaePartBake")
    assert set(doc["parts"][0]) == fields("KisekaePartEntry")
    assert set(doc["settings"]) == fields("KisekaePartSettings")
    assert set(doc["layout"]) == fields("KisekaePartLayout") == {key for key, _ in pb.LAYOUT}
    assert set(doc["layout"]["samples"]) == {"offset", "count"}  # KisekaeCorrectiveRange
    # per vertex: the part as int, the mask as two uint words, the rest as three floats (as the blob stores them)
    assert dict(pb.LAYOUT) == {"samples": "<f4", "vertexPart": "<i4", "vertexSkip": "<u4", "vertexRest": "<f4",
                               "ringPtr": "<u4", "ring": "<u4", "triangles": "<u4", "facePtr": "<u4", "faces": "<u4"}
    assert "Ints(bytes, l.vertexPart)" in cs and "Uints(bytes, l.vertexSkip)" in cs and "Floats(bytes, l.samples)" in cs


def test_unity_component_refuses_what_does_not_fit():
    """Every check of part_from_bake has its counterpart in the component, which then disables itself."""
    cs = PARTS.read_text()
    for check in ("b.version != BakeVersion", "b.parts.Length > MaxParts", "b.vertexCount != body.sharedMesh.vertexCount",
                  "!index.TryGetValue(e.bone", "e.start != rows", "e.dims[0] < 2", "e.reach >= 0f", "e.cell > 0f",
                  'RangeProblem(l.samples, 4 * rows', 'RangeProblem(l.ringPtr, n + 1', "part[i] < -1 || part[i] >= parts",
                  "ptr[i + 1] < ptr[i]", "j >= limit", "!Finite(x)", "BitConverter.IsLittleEndian", "s.passes < 0",
                  "tris.Length % 3 != 0", "CsrProblem(facePtr, faces", "CsrProblem(ptr, ring, (uint)n",
                  'RangeProblem(l.facePtr, n + 1', "j >= (uint)n",
                  "(long)r.offset + 4L * r.count > bytes"):
        assert check in cs, check
    assert "enabled = false;" in cs and "Debug.LogError($\"KisekaeBodyParts on '{name}': {problem}\"" in cs


def test_unity_records_the_passes_in_the_references_order():
    """KisekaeBodyParts.Record: this frame's rows uploaded in the command buffer, then the depths, the fades (one
    group), the first step, the smoothing passes over the body's ring (bound to that kernel only), the second step
    (the zero moves without passes: kisekae keeps the first step), the flip guard's halving and undoing passes, the
    apply; KisekaeSurfacePush records it between the body's
    preparation and its normals, and draws the body from the prepared buffers with drawBody."""
    cs = PARTS.read_text()
    text = COMPUTE.read_text()
    for k in KERNELS:
        assert f'cs.FindKernel("{k}")' in cs and f"#pragma kernel {k}\n" in text, k
    record = cs[cs.index("public void Record("):]
    order = [record.index(s) for s in ("UpdateRows();", "cmd.SetBufferData(_inverse, _rows);",
                                       "cmd.DispatchCompute(cs, _kDepths, groups", "cmd.DispatchCompute(cs, _kFades, 1, 1, 1)",
                                       "cmd.DispatchCompute(cs, _kFirst, groups", "Pass(cmd, cs, _kSmooth, ref src",
                                       "cmd.DispatchCompute(cs, _kAgain, groups", "Pass(cmd, cs, _kGuard, ref src",
                                       "cmd.DispatchCompute(cs, _kApply, groups")]
    assert order == sorted(order)
    assert "pass < s.passes" in record and "s.passes > 0 ? src : _noMove" in record
    assert "pass < GuardHalvings + GuardReverts" in record and "pass < GuardHalvings ? 0.5f : 0f" in record
    assert 'cmd.SetComputeBufferParam(cs, _kSmooth, "_KisekaeRingPtr", _ringPtr);' in record
    for name in re.findall(r'"(_Kisekae\w+)"', record):
        assert name in text, name
    if_mirror = cs[cs.index("void UpdateRows()"):cs.index("void FindKernels(")]
    assert "if (mirrorX) _rows[4 * p] = -_rows[4 * p];" in if_mirror and "Mathf.Abs(det) > MinDeterminant" in if_mirror
    push = PUSH.read_text()
    rec = push[push.index("void Record(CommandBuffer cmd)"):]
    assert rec.index("cmd.DispatchCompute(cs, _kBodyPrepare, ") \
        < rec.index("parts.Record(cmd, cs, _nBody, _bodyPositions, _bodyBeyond);") \
        < rec.index("cmd.DispatchCompute(cs, _kBodyNormals, ")
    assert "public KisekaeBodyParts parts;" in push and "parts.body != body" in push
    assert "public bool drawBody = true;" in push and "_bodyBlock == null && drawBody && parts != null" in push
    shader = BODY_SHADER.read_text()
    for name in ("_KisekaeBodyPrepared", "_KisekaeBodyPreparedNormals"):
        assert f'Shader.PropertyToID("{name}")' in push and f"StructuredBuffer<float4> {name};" in shader
    assert 'BodyKeyword = "KISEKAE_PREPARED_BODY"' in push and "[Toggle(KISEKAE_PREPARED_BODY)]" in shader
    assert "#pragma target 4.5 KISEKAE_PREPARED_BODY" in shader and "uint vertexID : SV_VertexID;" in shader


def test_o3de_srg_drives_the_part_contact(tmp_path):
    """The SRG's part-contact macros and members, with the SRG flattened to globals (AZSLc is not here), drive the
    core's KisekaePartStep, KisekaePartDepth, the pairs' InterlockedMax and the flip guard's KisekaePartGuard through
    glslang."""
    srg = SRG.read_text()
    for macro in ("KISEKAE_LOAD_PART_SAMPLE", "KISEKAE_LOAD_PART_GRID", "KISEKAE_LOAD_PART_INVERSE",
                  "KISEKAE_LOAD_PART_FADE", "KISEKAE_LOAD_PART_START", "KISEKAE_LOAD_PART_MOVE",
                  "KISEKAE_LOAD_PART_FACE_RANGE", "KISEKAE_LOAD_PART_FACE"):
        assert f"#define {macro}(" in srg, macro
    flat_srg(tmp_path)
    (tmp_path / "probe.hlsl").write_text("""#include "srg.hlsl"
#include "kisekae_core.hlsl"
RWStructuredBuffer<float4> gOut;
[numthreads(64, 1, 1)]
void main(uint3 id : SV_DispatchThreadID)
{
    KisekaePartParams P = KisekaeMakePartParams(m_part0, m_part1);
    float3 p = gOut[id.x].xyz;
    float3 q = KisekaePartStep(p, m_vertexRest[id.x].xyz, m_vertexPart[id.x], m_vertexSkip[id.x], m_partCount, P);
    float d = KisekaePartDepth(p, m_vertexPart[id.x], m_vertexSkip[id.x], id.x % 64u);
    uint ignored;
    InterlockedMax(m_pairDepth[id.x % 4096u], asuint(d), ignored);
    gOut[id.x] = float4(q + KisekaePartGuard(id.x, m_partGuard.x, m_partGuard.y), d);
}
""")
    c = compile_hlsl(tmp_path / "probe.hlsl", "comp", use_cache=False)
    for name in ("m_partSamples", "m_partBox", "m_partIndex", "m_partInverse", "m_vertexPart", "m_vertexSkip",
                 "m_vertexRest", "m_pairFade", "m_pairDepth", "m_partCount", "m_part0", "m_part1", "m_partStart",
                 "m_partTriangles", "m_partFacePtr", "m_partFaces", "m_partGuard"):
        assert name in c.glsl, name
    assert "atomicMax" in c.glsl


@pytest.mark.parametrize("name", ["gap", "band", "deep", "minSpread", "restSlack", "passes"])
def test_unity_uploads_every_setting(name):
    """Each of the bake's settings reaches the kernels (_KisekaePart0 / _KisekaePart1) or the pass count."""
    record = PARTS.read_text()
    record = record[record.index("public void Record("):]
    assert f"s.{name}" in record, name
