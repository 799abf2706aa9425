// Garment vertex shader for the kisekae Python renderer: pushes posed garment vertices out of the capsule
// field with the core's KisekaePushOut, then projects them. Positions arrive already posed (world space,
// m). Compiled HLSL -> SPIR-V -> GLSL at run time by kisekae.shaders.program_glsl("garment").
#include "../kisekae_source_constants.hlsl"
#include "../kisekae_core.hlsl"

cbuffer KisekaeGarment
{
    float4x4 _ViewProj;      // world -> clip, column vectors (as kisekae.render cameras)
    float4 _Push0;           // margin (m), stiffness, maxPush (m), skirtBias
    float4 _Push1;           // smoothK (m), up.xyz
};

struct VertexIn
{
    float3 position : POSITION;   // posed world position (m)
    float3 normal : NORMAL;       // posed world normal
    float2 masks : TEXCOORD0;     // x = tightness, y = softness (0..1)
};

struct VertexOut
{
    float4 clip : SV_Position;
    float3 world : TEXCOORD0;     // pushed world position (m)
    float3 normal : TEXCOORD1;
    float push : TEXCOORD2;       // push length (m)
};

VertexOut main(VertexIn v)
{
    KisekaePushParams P;
    P.margin = _Push0.x;
    P.stiffness = _Push0.y;
    P.maxPush = _Push0.z;
    P.skirtBias = _Push0.w;
    P.smoothK = _Push1.x;
    P.up = _Push1.yzw;
    float push;
    float d;
    VertexOut o;
    o.world = KisekaePushOut(v.position, v.masks.x, v.masks.y, P, push, d);
    o.push = push;
    o.normal = v.normal;
    o.clip = mul(_ViewProj, float4(o.world, 1.0));
    return o;
}
