// kisekae_core.hlsl - the kisekae shader core: one include for Unity (URP/HDRP), O3DE (AZSL) and the
// kisekae Python renderer (HLSL -> SPIR-V -> GLSL). Units are metres; see docs/engine-integration.md.
//
// Before including, provide the data access macros, usually by including one data source:
//   kisekae_source_constants.hlsl   float4 constant arrays (any GPU, mobile included)
//   kisekae_source_texture.hlsl     a small float texture read with Load (mobile included)
//   kisekae_source_structured.hlsl  structured buffers (desktop, optional)
// or by defining KISEKAE_CAPSULE_COUNT, KISEKAE_LOAD_CAPSULE(i), KISEKAE_HIT_COUNT, KISEKAE_LOAD_HIT(i)
// yourself (O3DE does this from its SRG, see o3de/KisekaeSrg.azsli).
#ifndef KISEKAE_CORE_HLSL
#define KISEKAE_CORE_HLSL

#include "kisekae_capsule.hlsl"
#include "kisekae_pushout.hlsl"
#include "kisekae_tightlook.hlsl"
#include "kisekae_tension.hlsl"
#include "kisekae_wound.hlsl"

#endif // KISEKAE_CORE_HLSL
