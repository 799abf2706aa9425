// kisekae_vertexdata.hlsl - per-vertex data in float textures addressed by vertex id.
//
// Part of the kisekae shader core (include kisekae_core.hlsl). The posed body vertices (skin-bound
// push-out) and the wound targets are stored one texel per vertex: vertex i lives in texel
// (i % W, i / W) of a texture W texels wide, row 0 first in memory (the layout kisekae.wound writes).
// The optional data macros (defined by kisekae_source_vertex_textures.hlsl, or by the engine):
//   KISEKAE_LOAD_BODY_POSITION(i)    float3, posed body vertex i (m, same space as the garment)
//   KISEKAE_LOAD_BODY_NORMAL(i)      float3, posed body vertex normal i (unit, outward)
//   KISEKAE_LOAD_WOUND_POSITION(i)   float3, the encoded wound target position texel of vertex i
//   KISEKAE_LOAD_WOUND_NORMAL(i)     float3, the encoded wound target normal texel of vertex i
// Functions that need them are only compiled when they are defined.
#ifndef KISEKAE_VERTEXDATA_HLSL
#define KISEKAE_VERTEXDATA_HLSL

// Texel (x, y, mip 0) of vertex i in a texture `width` texels wide, for Texture2D.Load.
int3 KisekaeVertexTexel(uint i, uint width)
{
    return int3((int)(i % width), (int)(i / width), 0);
}

// Vertex i's texel of a per-vertex float texture (any width; Load, no sampler, no filtering).
float4 KisekaeLoadVertexTexel(Texture2D<float4> tex, uint i)
{
    uint width;
    uint height;
    tex.GetDimensions(width, height);
    return tex.Load(KisekaeVertexTexel(i, width));
}

#endif // KISEKAE_VERTEXDATA_HLSL
