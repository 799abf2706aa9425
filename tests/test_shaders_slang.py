"""The body contact and surface push stages (and the rest of the core that compiles without data) through Slang's CPU
target; the surface push stage also through glslang, as an engine's compute pass."""

import shutil

import pytest

from kisekae.errors import KisekaeError

pytest.importorskip("slangpy")
if shutil.which("g++") is None:  # pragma: no cover
    pytest.skip("Slang's CPU target needs g++", allow_module_level=True)

from kisekae.shaders.toolchain import compile_with_slang  # noqa: E402

#: A body vertex stage as an engine writes it: the joint table in a structured buffer, four slots per vertex.
CONTACT_STAGE = """
#define KISEKAE_NO_DATA
StructuredBuffer<float4> gJoints;
#define KISEKAE_LOAD_JOINT_PLANE(j, J) { \\
    J.centre = gJoints[4u * (j)].xyz; J.reach = gJoints[4u * (j)].w; \\
    J.normal = gJoints[4u * (j) + 1u].xyz; J.radius = gJoints[4u * (j) + 1u].w; \\
    J.restCentre = gJoints[4u * (j) + 2u].xyz; J.flesh = gJoints[4u * (j) + 2u].w; \\
    J.restDir = gJoints[4u * (j) + 3u].xyz; }
#include "kisekae_core.hlsl"
StructuredBuffer<float4> gPoints;
StructuredBuffer<float4> gRest;
StructuredBuffer<uint4> gSlots;
StructuredBuffer<float4> gSides;
StructuredBuffer<float4> gParams;
RWStructuredBuffer<float4> gOut;
[shader("compute")]
[numthreads(64, 1, 1)]
void body_contact(uint3 id : SV_DispatchThreadID)
{
    KisekaeContactParams C;
    C.gap = gParams[0].x;
    C.band = gParams[0].y;
    C.ringFactor = gParams[0].z;
    C.restSlack = gParams[0].w;
    uint i = id.x;
    gOut[i] = float4(KisekaeContactPlanes(gPoints[i].xyz, gRest[i].xyz, gSlots[i], gSides[i], C), 0.0);
}
"""


#: The garment's surface push (with the chord allowance), its smoothing pass and the body curvature pass as an engine
#: writes them: compute passes over structured buffers (candidate triangles, posed body, one-ring, chords, the
#: triangles around each body vertex, the body curvature), no capsule data.
SURFACE_STAGE = """
#define KISEKAE_NO_DATA
StructuredBuffer<float4> gBodyPositions;
StructuredBuffer<float4> gBodyNormals;
StructuredBuffer<uint4> gCandidates;
StructuredBuffer<uint2> gRingRange;
StructuredBuffer<uint> gRing;
StructuredBuffer<float4> gDisplacement;
StructuredBuffer<float> gBodyCurvature;
StructuredBuffer<uint2> gBodyFaceRange;
StructuredBuffer<uint4> gBodyFaces;
StructuredBuffer<float> gChord;
StructuredBuffer<float4> gSkinned;
#define KISEKAE_LOAD_BODY_POSITION(i) gBodyPositions[(i)].xyz
#define KISEKAE_LOAD_BODY_NORMAL(i) gBodyNormals[(i)].xyz
#define KISEKAE_LOAD_SURFACE_TRIANGLE(v, k) gCandidates[(uint)KISEKAE_SURFACE_CANDIDATES * (v) + (k)].xyz
#define KISEKAE_LOAD_RING_RANGE(v) gRingRange[(v)]
#define KISEKAE_LOAD_RING(e) gRing[(e)]
#define KISEKAE_LOAD_DISPLACEMENT(j) gDisplacement[(j)].xyz
#define KISEKAE_LOAD_GARMENT_SKINNED(j) gSkinned[(j)].xyz
#define KISEKAE_LOAD_BODY_CURVATURE(i) gBodyCurvature[(i)]
#define KISEKAE_LOAD_BODY_FACE_RANGE(i) gBodyFaceRange[(i)]
#define KISEKAE_LOAD_BODY_FACE(e) gBodyFaces[(e)].xyz
#include "kisekae_core.hlsl"
StructuredBuffer<float4> gPoints;
StructuredBuffer<float4> gParams;
RWStructuredBuffer<float4> gOut;
[shader("compute")]
[numthreads(64, 1, 1)]
void surface_push(uint3 id : SV_DispatchThreadID)
{
    KisekaePushParams P;
    P.margin = gParams[0].x;
    P.stiffness = gParams[0].y;
    P.maxPush = gParams[0].z;
    P.skirtBias = gParams[0].w;
    P.smoothK = 0.0;
    P.up = gParams[1].xyz;
    uint i = id.x;
    float push;
    float s;
    float3 q = KisekaeSurfacePush(gPoints[i].xyz, i, gPoints[i].w, 0.0, P, P.maxPush, gChord[i], push, s);
    gOut[i] = float4(q, s);
}
[shader("compute")]
[numthreads(64, 1, 1)]
void body_curvature(uint3 id : SV_DispatchThreadID)
{
    gOut[id.x] = float4(KisekaeBodyCurvature(id.x), 0.0, 0.0, 0.0);
}
[shader("compute")]
[numthreads(64, 1, 1)]
void smooth_push(uint3 id : SV_DispatchThreadID)
{
    gOut[id.x] = float4(KisekaeSmoothPush(id.x), 0.0);
}
[shader("compute")]
[numthreads(64, 1, 1)]
void stretch_limit(uint3 id : SV_DispatchThreadID)
{
    bool moved;
    float3 d = KisekaeStretchLimit(id.x, gParams[2].x, moved);
    gOut[id.x] = float4(d, moved ? 1.0 : 0.0);
}
"""


def test_surface_stage_compiles_with_slang_cpu():
    for entry in ("surface_push", "smooth_push", "body_curvature", "stretch_limit"):
        compile_with_slang(SURFACE_STAGE, entry, name=f"kisekae_{entry}")


def test_surface_stage_compiles_with_glslang():
    from kisekae.shaders import compile_hlsl

    stage = SURFACE_STAGE.replace('[shader("compute")]\n', "")  # a Slang attribute glslang warns about
    for entry in ("surface_push", "smooth_push", "body_curvature", "stretch_limit"):
        c = compile_hlsl(stage, "comp", entry=entry, use_cache=False)
        assert c.spirv[:4] == b"\x03\x02\x23\x07" and "WARNING" not in c.log.upper()
    with pytest.raises(KisekaeError, match="glslang failed"):  # the candidates need the posed body
        compile_hlsl(stage.replace("#define KISEKAE_LOAD_BODY_POSITION", "#define KISEKAE_UNUSED"), "comp",
                     entry="surface_push", use_cache=False)


def test_contact_stage_compiles_with_slang_cpu():
    compile_with_slang(CONTACT_STAGE, "body_contact", name="kisekae_body_contact")


#: The part contact as an engine writes it: a compute pass over the posed body (after the joint planes), the part grids'
#: samples and headers and the inverse bone matrices of this frame in structured buffers, each vertex's part and skip
#: mask in another.
PART_STAGE = """
#define KISEKAE_NO_DATA
StructuredBuffer<float4> gPartSamples;
StructuredBuffer<float4> gPartHeaders;
StructuredBuffer<float4> gPartInverse;
#define KISEKAE_LOAD_PART_SAMPLE(row) (gPartSamples[(row)])
#define KISEKAE_LOAD_PART_GRID(s, G) { G.lo = gPartHeaders[3u * (s)].xyz; G.start = asuint(gPartHeaders[3u * (s)].w); \\
    G.dims = asuint(gPartHeaders[3u * (s) + 1u].xyz); G.cell = gPartHeaders[3u * (s) + 1u].w; \\
    G.reach = gPartHeaders[3u * (s) + 2u].x; }
#define KISEKAE_LOAD_PART_INVERSE(s, r) (gPartInverse[3u * (s) + (r)])
StructuredBuffer<float> gPartFade;
#define KISEKAE_LOAD_PART_FADE(a, s) (gPartFade[64u * (a) + (s)])
StructuredBuffer<float4> gStart;
StructuredBuffer<float4> gMove;
StructuredBuffer<uint2> gFaceRange;
StructuredBuffer<uint4> gFaces;
#define KISEKAE_LOAD_PART_START(i) (gStart[(i)].xyz)
#define KISEKAE_LOAD_PART_MOVE(i) (gMove[(i)].xyz)
#define KISEKAE_LOAD_PART_FACE_RANGE(v) (gFaceRange[(v)])
#define KISEKAE_LOAD_PART_FACE(e) (gFaces[(e)].xyz)
#include "kisekae_core.hlsl"
StructuredBuffer<float4> gPoints;
StructuredBuffer<float4> gRest;
StructuredBuffer<int> gOwnPart;
StructuredBuffer<uint2> gSkip;
StructuredBuffer<float4> gParams;
RWStructuredBuffer<float4> gOut;
[shader("compute")]
[numthreads(64, 1, 1)]
void part_contact(uint3 id : SV_DispatchThreadID)
{
    uint i = id.x;
    gOut[i] = float4(KisekaePartStep(gPoints[i].xyz, gRest[i].xyz, gOwnPart[i], gSkip[i], asuint(gParams[1].z),
                                     KisekaeMakePartParams(gParams[0], gParams[1])), 0.0);
}
RWStructuredBuffer<float> gDepth;
[shader("compute")]
[numthreads(64, 1, 1)]
void part_depth(uint3 id : SV_DispatchThreadID)
{
    // one depth per vertex and part; an engine reduces them per (part, part) with InterlockedMax on the bits
    // (Slang's CPU target has no atomics on buffers)
    uint i = id.x;
    uint parts = asuint(gParams[1].z);
    for (uint s = 0u; s < parts; ++s)
    {
        gDepth[64u * i + s] = KisekaePartDepth(gPoints[i].xyz, gOwnPart[i], gSkip[i], s);
    }
}
[shader("compute")]
[numthreads(64, 1, 1)]
void part_guard(uint3 id : SV_DispatchThreadID)
{
    // one pass of the flip guard over the moves (ping-pong gMove -> gOut)
    gOut[id.x] = float4(KisekaePartGuard(id.x, gParams[2].x, gParams[2].y), 0.0);
}
"""


def test_part_contact_stage_compiles_with_slang_cpu_and_glslang():
    from kisekae.shaders import compile_hlsl

    for entry in ("part_contact", "part_depth", "part_guard"):
        compile_with_slang(PART_STAGE, entry, name=f"kisekae_{entry}")
        c = compile_hlsl(PART_STAGE.replace('[shader("compute")]\n', ""), "comp", entry=entry, use_cache=False)
        assert c.spirv[:4] == b"\x03\x02\x23\x07" and "WARNING" not in c.log.upper()
    with pytest.raises(KisekaeError, match="glslang failed"):  # the step needs the grids
        compile_hlsl(PART_STAGE.replace('[shader("compute")]\n', "").replace("#define KISEKAE_LOAD_PART_GRID",
                                                                            "#define KISEKAE_UNUSED"),
                     "comp", entry="part_contact", use_cache=False)


#: The body's pose-space correctives as an engine writes them: one pass of features per (joint, centre), then the body
#: vertex stage adds the offset to the rest position before skinning.
CORRECTIVE_STAGE = """
#define KISEKAE_NO_DATA
StructuredBuffer<uint2> gRange;
StructuredBuffer<uint> gEntryJoint;
StructuredBuffer<float4> gCoef;
RWStructuredBuffer<float> gFeatures;
#define KISEKAE_LOAD_CORRECTIVE_RANGE(v) gRange[(v)]
#define KISEKAE_LOAD_CORRECTIVE_JOINT(e) gEntryJoint[(e)]
#define KISEKAE_LOAD_CORRECTIVE_COEF(e, k) gCoef[(uint)KISEKAE_CORRECTIVE_CENTRES * (e) + (k)].xyz
#define KISEKAE_LOAD_CORRECTIVE_FEATURE(j, k) gFeatures[(uint)KISEKAE_CORRECTIVE_CENTRES * (j) + (k)]
StructuredBuffer<uint> gBones;
StructuredBuffer<float> gWeights;
StructuredBuffer<float4> gSkinRows;
#define KISEKAE_LOAD_SKIN_BONE(v, i) gBones[8u * (v) + (i)]
#define KISEKAE_LOAD_SKIN_WEIGHT(v, i) gWeights[8u * (v) + (i)]
#define KISEKAE_LOAD_SKIN_ROW(b, r) gSkinRows[3u * (b) + (r)]
#include "kisekae_core.hlsl"
StructuredBuffer<float4> gJointRotation;
StructuredBuffer<float4> gCentre;
StructuredBuffer<float> gSigma;
StructuredBuffer<float4> gRestPosition;
RWStructuredBuffer<float4> gOut;
[shader("compute")]
[numthreads(64, 1, 1)]
void corrective_features(uint3 id : SV_DispatchThreadID)
{
    uint j = id.x / (uint)KISEKAE_CORRECTIVE_CENTRES;
    gFeatures[id.x] = KisekaeCorrectiveFeature(gJointRotation[j], gCentre[id.x], gSigma[j]);
}
[shader("compute")]
[numthreads(64, 1, 1)]
void corrective_rest(uint3 id : SV_DispatchThreadID)
{
    gOut[id.x] = float4(gRestPosition[id.x].xyz + KisekaeCorrectiveOffset(id.x), 1.0);
}
[shader("compute")]
[numthreads(64, 1, 1)]
void corrective_start(uint3 id : SV_DispatchThreadID)
{
    // a garment's: the offset carried by the vertex's blended skinning rotation, added after skinning
    gOut[id.x] = float4(KisekaeSkinnedOffset(id.x, KisekaeCorrectiveOffset(id.x)), 0.0);
}
"""


def test_corrective_stage_compiles_with_slang_cpu_and_glslang():
    from kisekae.shaders import compile_hlsl

    for entry in ("corrective_features", "corrective_rest", "corrective_start"):
        compile_with_slang(CORRECTIVE_STAGE, entry, name=f"kisekae_{entry}")
        c = compile_hlsl(CORRECTIVE_STAGE.replace('[shader("compute")]\n', ""), "comp", entry=entry, use_cache=False)
        assert c.spirv[:4] == b"\x03\x02\x23\x07"
    with pytest.raises(KisekaeError):  # the offset needs its data macros
        compile_with_slang(CORRECTIVE_STAGE.replace("#define KISEKAE_LOAD_CORRECTIVE_RANGE", "#define KISEKAE_UNUSED"),
                           "corrective_rest", name="kisekae_bad3")
    with pytest.raises(KisekaeError):  # and the skinned offset its skin macros
        compile_with_slang(CORRECTIVE_STAGE.replace("#define KISEKAE_LOAD_SKIN_ROW", "#define KISEKAE_UNUSED"),
                           "corrective_start", name="kisekae_bad4")


def test_slang_rejects_what_is_wrong():
    with pytest.raises(KisekaeError, match="not a member"):
        compile_with_slang(CONTACT_STAGE.replace("C.band = ", "C.bandwidth = "), "body_contact", name="kisekae_bad")
    with pytest.raises(KisekaeError, match="not a member"):  # the per-frame flag became the reach (bake version 2)
        compile_with_slang(CONTACT_STAGE.replace("J.reach = ", "J.active = "), "body_contact", name="kisekae_bad2")
