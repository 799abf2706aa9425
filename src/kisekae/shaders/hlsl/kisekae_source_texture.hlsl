// kisekae_source_texture.hlsl - capsule rig and wound hits from a small float texture (mobile friendly).
// _KisekaeDataTex is an RGBA32F (or RGBA16F for hits only) texture read with Load, no sampler:
//   texel (0, i) = capsule i end a (xyz, m) and r0 (w, m); texel (1, i) = end b and r1;
//   texel (2, j) = wound hit j: point (xyz, m) and body part id (w).
// Height = max(capsule count, hit count). Include this, then kisekae_core.hlsl.
#ifndef KISEKAE_SOURCE_TEXTURE_HLSL
#define KISEKAE_SOURCE_TEXTURE_HLSL

Texture2D<float4> _KisekaeDataTex;
float _KisekaeCapsuleCount;
float _KisekaeHitCount;

#define KISEKAE_CAPSULE_COUNT ((uint)_KisekaeCapsuleCount)
#define KISEKAE_LOAD_CAPSULE(i) KisekaeMakeCapsule(_KisekaeDataTex.Load(int3(0, (int)(i), 0)), _KisekaeDataTex.Load(int3(1, (int)(i), 0)))
#define KISEKAE_HIT_COUNT ((uint)_KisekaeHitCount)
#define KISEKAE_LOAD_HIT(i) _KisekaeDataTex.Load(int3(2, (int)(i), 0))

#endif // KISEKAE_SOURCE_TEXTURE_HLSL
