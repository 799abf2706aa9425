// Unity entry include for the kisekae core. Copy the whole hlsl/ folder next to this file as
// Kisekae/Shaders/hlsl/ (see docs/engine-integration.md); this file only picks the data source.
// The capsule rig and hits come as global float4 arrays written by KisekaeCapsuleRig.cs.
#ifndef KISEKAE_UNITY_CORE_HLSL
#define KISEKAE_UNITY_CORE_HLSL
#include "hlsl/kisekae_source_constants.hlsl"
// Define KISEKAE_VERTEX_TEXTURES before including this file to read the posed body (skin-bound push-out,
// KisekaeSkinPushOut) and the wound targets (KisekaeWoundTarget) from per-vertex textures.
#ifdef KISEKAE_VERTEX_TEXTURES
#include "hlsl/kisekae_source_vertex_textures.hlsl"
#endif
#include "hlsl/kisekae_core.hlsl"
#endif
