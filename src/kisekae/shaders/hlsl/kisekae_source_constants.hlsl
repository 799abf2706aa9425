// kisekae_source_constants.hlsl - capsule rig and wound hits from constant arrays (float4 uniforms).
// Works everywhere, including mobile GPUs without compute buffers. Unity: Material.SetVectorArray /
// Shader.SetGlobalVectorArray and SetFloat for the counts. Include this, then kisekae_core.hlsl.
// The arrays take 2 * KISEKAE_MAX_CAPSULES + KISEKAE_MAX_HITS + 1 float4 (289 at the defaults, 4.6 KB). A shader
// reads min(count, KISEKAE_MAX_CAPSULES) capsules: whatever uploads the rig must refuse a bigger one
// (KisekaeCapsuleRig.cs and kisekae.shaders.limits do). Define a smaller size for GPUs with only the GLES 3.0
// minimum of 256 vertex uniform vectors.
// Define KISEKAE_CONSTANTS_CBUFFER to put the arrays in an explicit cbuffer named KisekaeConstants
// (otherwise they are plain globals, which Unity needs for array properties).
#ifndef KISEKAE_SOURCE_CONSTANTS_HLSL
#define KISEKAE_SOURCE_CONSTANTS_HLSL

#ifndef KISEKAE_MAX_CAPSULES
#define KISEKAE_MAX_CAPSULES 128
#endif
#ifndef KISEKAE_MAX_HITS
#define KISEKAE_MAX_HITS 32
#endif

#ifdef KISEKAE_CONSTANTS_CBUFFER
cbuffer KisekaeConstants
{
#endif
    float4 _KisekaeCapsuleA[KISEKAE_MAX_CAPSULES];  // xyz = end a (m), w = radius r0 (m)
    float4 _KisekaeCapsuleB[KISEKAE_MAX_CAPSULES];  // xyz = end b (m), w = radius r1 (m)
    float4 _KisekaeHits[KISEKAE_MAX_HITS];          // xyz = hit point (m), w = body part id
    float _KisekaeCapsuleCount;                     // number of valid capsules (<= KISEKAE_MAX_CAPSULES)
    float _KisekaeHitCount;                         // number of valid hits (<= KISEKAE_MAX_HITS)
#ifdef KISEKAE_CONSTANTS_CBUFFER
};
#endif

#define KISEKAE_CAPSULE_COUNT min((uint)_KisekaeCapsuleCount, (uint)KISEKAE_MAX_CAPSULES)
#define KISEKAE_LOAD_CAPSULE(i) KisekaeMakeCapsule(_KisekaeCapsuleA[(i)], _KisekaeCapsuleB[(i)])
#define KISEKAE_HIT_COUNT min((uint)_KisekaeHitCount, (uint)KISEKAE_MAX_HITS)
#define KISEKAE_LOAD_HIT(i) _KisekaeHits[(i)]

#endif // KISEKAE_SOURCE_CONSTANTS_HLSL
