// kisekae_core.hlsl - the kisekae shader core: one include for Unity (URP/HDRP), O3DE (AZSL) and the
// kisekae Python renderer (HLSL -> SPIR-V -> GLSL). Units are metres; see docs/engine-integration.md.
//
// Before including, provide the data access macros, usually by including one data source:
//   kisekae_source_constants.hlsl   float4 constant arrays (any GPU, mobile included)
//   kisekae_source_texture.hlsl     a small float texture read with Load (mobile included)
//   kisekae_source_structured.hlsl  structured buffers (desktop, optional)
// or by defining KISEKAE_CAPSULE_COUNT, KISEKAE_LOAD_CAPSULE(i), KISEKAE_HIT_COUNT, KISEKAE_LOAD_HIT(i)
// yourself (O3DE does this from its SRG, see o3de/KisekaeSrg.azsli), or define KISEKAE_NO_DATA when the
// stage uses neither capsules nor hits. The skin-bound push-out and the wound target decoding also need the
// per-vertex texture macros (KISEKAE_LOAD_BODY_*, KISEKAE_LOAD_WOUND_*; include
// kisekae_source_vertex_textures.hlsl); without them only their array-free forms are compiled. The surface push
// also needs its candidate triangles (KISEKAE_LOAD_SURFACE_TRIANGLE) and the body curvature for its chord
// allowance (KISEKAE_LOAD_BODY_CURVATURE, from KisekaeBodyCurvature over KISEKAE_LOAD_BODY_FACE_RANGE / _FACE), and
// its smoothing pass the garment's one-ring (KISEKAE_LOAD_RING, _RING_RANGE, _DISPLACEMENT); see
// kisekae_surface.hlsl. The body follow's gather (KisekaeBodyFollowLoad, kisekae_bound.hlsl) needs the garment
// vertex's binding (KISEKAE_LOAD_FOLLOW_CORNERS, _FOLLOW_WEIGHTS) and the body's displacement beyond plain skinning
// (KISEKAE_LOAD_BODY_BEYOND). The self layers (KisekaeSelfLayerPush, kisekae_self_layers.hlsl) need each garment
// vertex's candidates on its inner sheets and its gap (KISEKAE_LOAD_SELF_TRIANGLE, KISEKAE_LOAD_SELF_GAP).
#ifndef KISEKAE_CORE_HLSL
#define KISEKAE_CORE_HLSL

#ifdef KISEKAE_NO_DATA
// Stages that use no capsule or hit data (e.g. a skin fragment shader with the tight look only).
#define KISEKAE_CAPSULE_COUNT 0u
#define KISEKAE_LOAD_CAPSULE(i) KisekaeMakeCapsule(float4(0.0, 0.0, 0.0, 0.0), float4(0.0, 0.0, 0.0, 0.0))
#define KISEKAE_HIT_COUNT 0u
#define KISEKAE_LOAD_HIT(i) float4(0.0, 0.0, 0.0, 0.0)
#endif
#if !defined(KISEKAE_CAPSULE_COUNT) || !defined(KISEKAE_LOAD_CAPSULE) || !defined(KISEKAE_HIT_COUNT) || !defined(KISEKAE_LOAD_HIT)
#error "kisekae: include a kisekae_source_*.hlsl, define the KISEKAE_* data macros, or define KISEKAE_NO_DATA"
#endif

#include "kisekae_vertexdata.hlsl"
#include "kisekae_capsule.hlsl"
#include "kisekae_pushout.hlsl"
#include "kisekae_bound.hlsl"
#include "kisekae_surface.hlsl"
#include "kisekae_self_layers.hlsl"
#include "kisekae_tightlook.hlsl"
#include "kisekae_tension.hlsl"
#include "kisekae_wrinkle.hlsl"
#include "kisekae_wound.hlsl"
#include "kisekae_contact.hlsl"
#include "kisekae_part_contact.hlsl"
#include "kisekae_corrective.hlsl"

#endif // KISEKAE_CORE_HLSL
