// Skin vertex shader for the kisekae Python renderer: projects posed body vertices and passes the tight-look
// inputs (tightness, pressure, AO, SSS, dent direction) to kisekae_skin.frag.hlsl.
#define KISEKAE_NO_DATA
#include "../kisekae_core.hlsl"

cbuffer KisekaeSkinVertex
{
    float4x4 _ViewProj;      // world -> clip, column vectors
};

struct VertexIn
{
    float3 position : POSITION;   // posed world position (m)
    float3 normal : NORMAL;       // posed world normal
    float4 look : TEXCOORD0;      // tightness, pressure, AO visibility, SSS amount (0..1)
    float3 dent : TEXCOORD1;      // dent direction (world)
};

struct VertexOut
{
    float4 clip : SV_Position;
    float3 world : TEXCOORD0;
    float3 normal : TEXCOORD1;
    float4 look : TEXCOORD2;
    float3 dent : TEXCOORD3;
};

VertexOut main(VertexIn v)
{
    VertexOut o;
    o.world = v.position;
    o.normal = v.normal;
    o.look = v.look;
    o.dent = v.dent;
    o.clip = mul(_ViewProj, float4(v.position, 1.0));
    return o;
}
