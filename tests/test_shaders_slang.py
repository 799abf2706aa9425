"""The body contact stage (and the rest of the core that compiles without data) through Slang's CPU target."""

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


def test_contact_stage_compiles_with_slang_cpu():
    compile_with_slang(CONTACT_STAGE, "body_contact", name="kisekae_body_contact")


def test_slang_rejects_what_is_wrong():
    with pytest.raises(KisekaeError, match="not a member"):
        compile_with_slang(CONTACT_STAGE.replace("C.band = ", "C.bandwidth = "), "body_contact", name="kisekae_bad")
    with pytest.raises(KisekaeError, match="not a member"):  # the per-frame flag became the reach (bake version 2)
        compile_with_slang(CONTACT_STAGE.replace("J.reach = ", "J.active = "), "body_contact", name="kisekae_bad2")
