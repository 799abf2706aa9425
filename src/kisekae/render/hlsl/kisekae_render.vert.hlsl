// kisekae_render.vert.hlsl - vertex stage of the kisekae Python renderer (kisekae.render).
//
// Runs the shader core's wound functions on every vertex: the target is given directly or decoded from
// the baked encoding (KisekaeWoundDecodePosition/Normal); the morph parameter p is the vertex's own
// p (a baked or CPU-computed value) combined with the core's hit loop (KisekaeWoundP over up to
// KISEKAE_RENDER_MAX_HITS hits), then KisekaeWoundMorph moves the position and normal towards the
// damaged target. Positions arrive posed (world space, metres); targets are posed the same way.
// Cross-compiled at run time (HLSL -> SPIR-V -> GLSL) by kisekae.render.shading, cached by the hash
// of this file and every core file, so the renderer always runs the current core.

#ifndef KISEKAE_RENDER_MAX_HITS
#define KISEKAE_RENDER_MAX_HITS 32
#endif

cbuffer KisekaeRenderVertex : register(b0)
{
    float4x4 _ViewProj;                       // world -> clip, column vectors
    float4 _Wound;                            // holeSize (m), holeIntensity (1/m), hit count, tint distance (m)
    float4 _WoundCode;                        // x = KISEKAE_WOUND_* encoding, y = 1: targets are encoded data
    float4 _WoundBoundsMin;                   // xyz = the encoding's bounds_min (m)
    float4 _WoundBoundsMax;                   // xyz = the encoding's bounds_max (m)
    float4 _Hits[KISEKAE_RENDER_MAX_HITS];    // xyz = posed hit point (m), w = body part id
};

// The core's data macros, fed from the block above (no capsules in the render pass).
#define KISEKAE_CAPSULE_COUNT 0u
#define KISEKAE_LOAD_CAPSULE(i) KisekaeMakeCapsule(float4(0.0, 0.0, 0.0, 0.0), float4(0.0, 0.0, 0.0, 0.0))
#define KISEKAE_HIT_COUNT min((uint)_Wound.z, (uint)KISEKAE_RENDER_MAX_HITS)
#define KISEKAE_LOAD_HIT(i) _Hits[(i)]
#include "kisekae_core.hlsl"

struct VertexIn
{
    float3 position : POSITION;        // posed world position (m)
    float3 normal : NORMAL;            // posed unit normal
    float4 look : TEXCOORD0;           // tightness, pressure, compress, stretch (0..1)
    float4 extra : TEXCOORD1;          // tension ratio T (0 = none), heat scalar, wound p, body part id
    float3 woundPosition : TEXCOORD2;  // damaged target position (m), posed; or the encoded position data c
    float3 woundNormal : TEXCOORD3;    // damaged target normal, posed; or the encoded normal texel
    float2 woundPart : TEXCOORD4;      // reach, gain of the vertex's body part
};

struct VertexOut
{
    float4 clip : SV_Position;
    float3 world : TEXCOORD0;          // morphed world position (m)
    float3 normal : TEXCOORD1;         // morphed normal
    float4 look : TEXCOORD2;           // passed through
    float4 extra : TEXCOORD3;          // ratio, heat, wound tint weight (0..1), -
};

VertexOut main(VertexIn v)
{
    KisekaeWoundParams W;
    W.holeSize = _Wound.x;
    W.holeIntensity = _Wound.y;
    float p = saturate(v.extra.z);
    if (_Wound.z > 0.5)
    {
        p = max(p, KisekaeWoundP(v.position, (uint)(v.extra.w + 0.5), v.woundPart.x, v.woundPart.y, W));
    }
    float3 targetPosition = v.woundPosition;
    float3 targetNormal = v.woundNormal;
    if (_WoundCode.y > 0.5)
    {
        // the baked data as a game reads it (vertex colour / texel values), decoded by the core
        KisekaeWoundEncoding E;
        E.kind = (uint)(_WoundCode.x + 0.5);
        E.boundsMin = _WoundBoundsMin.xyz;
        E.boundsMax = _WoundBoundsMax.xyz;
        targetPosition = KisekaeWoundDecodePosition(v.position, v.woundPosition, E);
        targetNormal = KisekaeWoundDecodeNormal(v.woundNormal, E);
    }
    float3 position = v.position;
    float3 normal = v.normal;
    KisekaeWoundMorph(position, normal, targetPosition, targetNormal, p);
    // tint: p itself, or (with a tint distance) p scaled by how far the damaged target lies from the surface
    float tint = _Wound.w > 0.0 ? p * saturate(distance(targetPosition, v.position) / _Wound.w) : p;
    VertexOut o;
    o.world = position;
    o.normal = normal;
    o.look = v.look;
    o.extra = float4(v.extra.x, v.extra.y, tint, 0.0);
    o.clip = mul(_ViewProj, float4(position, 1.0));
    return o;
}
