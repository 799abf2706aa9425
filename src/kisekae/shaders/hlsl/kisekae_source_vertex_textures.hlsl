// kisekae_source_vertex_textures.hlsl - per-vertex textures for the skin-bound push-out and the wound targets.
// Works on mobile (Texture2D.Load only; no compute buffers). Include it with any capsule data source,
// before kisekae_core.hlsl. Vertex i lives in texel (i % W, i / W), W = the texture's width (read with
// GetDimensions), row 0 first in memory:
//   _KisekaeBodyPositionTex   RGBA32F, xyz = posed body vertex position (m, the garment's space), w unused
//   _KisekaeBodyNormalTex     RGBA32F or RGBA16F, xyz = posed body vertex normal (unit, outward)
//   _KisekaeWoundPositionTex  wound target positions as kisekae.wound encodes them: RGB16 unorm (delta16),
//                             RGB16F (half), RGB32F (float); unused by the 8-bit encodings
//   _KisekaeWoundNormalTex    wound target normals: RGB8 unorm (article8, delta8), RGB16 unorm (delta16),
//                             RGB16F (half), RGB32F (float)
// Unorm textures must be bound as normalised formats (UNORM, not UINT) without sRGB decoding.
#ifndef KISEKAE_SOURCE_VERTEX_TEXTURES_HLSL
#define KISEKAE_SOURCE_VERTEX_TEXTURES_HLSL

Texture2D<float4> _KisekaeBodyPositionTex;
Texture2D<float4> _KisekaeBodyNormalTex;
Texture2D<float4> _KisekaeWoundPositionTex;
Texture2D<float4> _KisekaeWoundNormalTex;

#define KISEKAE_LOAD_BODY_POSITION(i) KisekaeLoadVertexTexel(_KisekaeBodyPositionTex, (i)).xyz
#define KISEKAE_LOAD_BODY_NORMAL(i) KisekaeLoadVertexTexel(_KisekaeBodyNormalTex, (i)).xyz
#define KISEKAE_LOAD_WOUND_POSITION(i) KisekaeLoadVertexTexel(_KisekaeWoundPositionTex, (i)).xyz
#define KISEKAE_LOAD_WOUND_NORMAL(i) KisekaeLoadVertexTexel(_KisekaeWoundNormalTex, (i)).xyz

#endif // KISEKAE_SOURCE_VERTEX_TEXTURES_HLSL
