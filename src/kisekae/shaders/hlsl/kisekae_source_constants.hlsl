// kisekae_source_constants.hlsl - capsule rig, wound hits and the body's joint planes from constant arrays
// (float4 uniforms).
// Works everywhere, including mobile GPUs without compute buffers. Unity: Material.SetVectorArray /
// Shader.SetGlobalVectorArray and SetFloat for the counts. Include this, then kisekae_core.hlsl.
// The garment arrays take 2 * KISEKAE_MAX_CAPSULES + KISEKAE_MAX_HITS + 1 float4 (289 at the defaults, 4.6 KB),
// the body's joint table 4 * KISEKAE_MAX_JOINTS + 1 (257, 4.1 KB); a shader keeps only the arrays it reads. A shader
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
#ifndef KISEKAE_MAX_JOINTS
#define KISEKAE_MAX_JOINTS 64
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
    // The body's joint-plane contact (kisekae_contact.hlsl), written per frame by KisekaeBodyContact.cs:
    float4 _KisekaeJointCentre[KISEKAE_MAX_JOINTS];  // xyz = posed joint centre (m), w = reach (ring radii, 0 inactive)
    float4 _KisekaeJointNormal[KISEKAE_MAX_JOINTS];  // xyz = posed unit plane normal, w = ring radius (m)
    float4 _KisekaeJointRest[KISEKAE_MAX_JOINTS];    // xyz = rest joint centre (m), w = flesh: radial reach (m)
    float4 _KisekaeJointRestDir[KISEKAE_MAX_JOINTS]; // xyz = unit rest normal of the joint (contact.rest_normal), w unused
    float4 _KisekaeContact;                          // gap (m), band (m), ringFactor, restSlack (m)
#ifdef KISEKAE_CONSTANTS_CBUFFER
};
#endif

#define KISEKAE_CAPSULE_COUNT min((uint)_KisekaeCapsuleCount, (uint)KISEKAE_MAX_CAPSULES)
#define KISEKAE_LOAD_CAPSULE(i) KisekaeMakeCapsule(_KisekaeCapsuleA[(i)], _KisekaeCapsuleB[(i)])
#define KISEKAE_HIT_COUNT min((uint)_KisekaeHitCount, (uint)KISEKAE_MAX_HITS)
#define KISEKAE_LOAD_HIT(i) _KisekaeHits[(i)]
// Statement macro filling the KisekaeJointPlane J of joint id (clamped to the table).
#define KISEKAE_LOAD_JOINT_PLANE(id, J) \
    { \
        uint kj_ = min((uint)(id), (uint)KISEKAE_MAX_JOINTS - 1u); \
        J.centre = _KisekaeJointCentre[kj_].xyz; \
        J.reach = _KisekaeJointCentre[kj_].w; \
        J.normal = _KisekaeJointNormal[kj_].xyz; \
        J.radius = _KisekaeJointNormal[kj_].w; \
        J.restCentre = _KisekaeJointRest[kj_].xyz; \
        J.flesh = _KisekaeJointRest[kj_].w; \
        J.restDir = _KisekaeJointRestDir[kj_].xyz; \
    }
#define KISEKAE_CONTACT_PARAMS KisekaeMakeContactParams(_KisekaeContact)

#endif // KISEKAE_SOURCE_CONSTANTS_HLSL
