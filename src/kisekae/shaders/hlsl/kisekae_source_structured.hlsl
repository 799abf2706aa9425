// kisekae_source_structured.hlsl - capsule rig and wound hits from structured buffers (desktop / compute).
// _KisekaeCapsuleBuffer holds two float4 per capsule: [2i] = end a (xyz, m) and r0 (w, m), [2i+1] = end b
// and r1. _KisekaeHitBuffer holds one float4 per hit: point (xyz, m) and body part id (w).
// Include this, then kisekae_core.hlsl.
#ifndef KISEKAE_SOURCE_STRUCTURED_HLSL
#define KISEKAE_SOURCE_STRUCTURED_HLSL

StructuredBuffer<float4> _KisekaeCapsuleBuffer;
StructuredBuffer<float4> _KisekaeHitBuffer;
float _KisekaeCapsuleCount;
float _KisekaeHitCount;

#define KISEKAE_CAPSULE_COUNT ((uint)_KisekaeCapsuleCount)
#define KISEKAE_LOAD_CAPSULE(i) KisekaeMakeCapsule(_KisekaeCapsuleBuffer[2u * (i)], _KisekaeCapsuleBuffer[2u * (i) + 1u])
#define KISEKAE_HIT_COUNT ((uint)_KisekaeHitCount)
#define KISEKAE_LOAD_HIT(i) _KisekaeHitBuffer[(i)]

#endif // KISEKAE_SOURCE_STRUCTURED_HLSL
