// kisekae_corrective.hlsl - the body's pose-space correctives (body vertex stage, before skinning).
//
// Part of the kisekae shader core (include kisekae_core.hlsl); port of kisekae.avatar.correctives. Corrective
// shapes learned from the offline contact solve: for every joint j with features, KISEKAE_CORRECTIVE_CENTRES
// radial basis functions of its local rotation q (unit quaternion, from the joint's rest orientation),
//   theta(a, b) = 2 acos|dot(a, b)|                     rotation angle between two unit quaternions (rad)
//   g(a)        = exp(-(a / sigma_j)^2)
//   f_jk        = g(theta(q, c_jk)) - g(theta(q, 1)) g(theta(c_jk, 1))       0 at rest, 0 far from every centre
// computed once per frame (KisekaeCorrectiveFeature, one thread or the CPU per (j, k)); then per body vertex
//   offset_v = sum over its entries e (joint j_e) of sum_k f_(j_e)k coef_(e, k)         metres, rest space
// added to the rest position before skinning, exactly like a blend shape.
// Data macros (define them to use KisekaeCorrectiveOffset):
//   KISEKAE_LOAD_CORRECTIVE_RANGE(v)    uint2, (start, count) of body vertex v's entries (vertex_ptr)
//   KISEKAE_LOAD_CORRECTIVE_JOINT(e)    uint, joint slot of entry e (entry_joint)
//   KISEKAE_LOAD_CORRECTIVE_COEF(e, k)  float3, coefficient k of entry e (coefficients, m)
//   KISEKAE_LOAD_CORRECTIVE_FEATURE(j, k)  float, this frame's feature k of joint slot j
// A garment's correctives (kisekae.fit.garment_correctives) are the same data over its vertices; the per-frame garment
// correction starts from the skinned garment plus the offset carried by the vertex's blended skinning rotation
// (kisekae.avatar.correctives.add_skinned_offsets), KisekaeSkinnedOffset, which reads
//   KISEKAE_SKIN_INFLUENCES             bone influences a vertex (default 8; unused ones have weight 0)
//   KISEKAE_LOAD_SKIN_BONE(v, i)        uint, bone of influence i of vertex v
//   KISEKAE_LOAD_SKIN_WEIGHT(v, i)      float, its weight
//   KISEKAE_LOAD_SKIN_ROW(b, r)         float4, row r (0..2) of bone b's skinning matrix (xyz: its rotation part)
#ifndef KISEKAE_CORRECTIVE_HLSL
#define KISEKAE_CORRECTIVE_HLSL

#ifndef KISEKAE_CORRECTIVE_CENTRES
#define KISEKAE_CORRECTIVE_CENTRES 16
#endif

// Rotation angle between unit quaternions a and b (radians): 2 acos|dot(a, b)|, computed as
// 4 atan2(|a - b'|, |a + b'|) with b' = +-b on a's side, which keeps float32 precision near 0.
float KisekaeQuatAngle(float4 a, float4 b)
{
    float4 c = dot(a, b) < 0.0 ? -b : b;
    return 4.0 * atan2(length(a - c), length(a + c));
}

// Feature of one joint rotation q for one centre c, basis width sigma (rad, > 0).
float KisekaeCorrectiveFeature(float4 q, float4 c, float sigma)
{
    const float4 one = float4(0.0, 0.0, 0.0, 1.0);
    float a = KisekaeQuatAngle(q, c) / sigma;
    float r = KisekaeQuatAngle(q, one) / sigma;
    float cr = KisekaeQuatAngle(c, one) / sigma;
    return exp(-a * a) - exp(-r * r) * exp(-cr * cr);
}

#ifdef KISEKAE_LOAD_CORRECTIVE_RANGE
// Rest-space offset of body vertex v (m) from this frame's features.
float3 KisekaeCorrectiveOffset(uint v)
{
    uint2 range = KISEKAE_LOAD_CORRECTIVE_RANGE(v);
    float3 offset = float3(0.0, 0.0, 0.0);
    for (uint e = range.x; e < range.x + range.y; e++)
    {
        uint j = KISEKAE_LOAD_CORRECTIVE_JOINT(e);
        for (uint k = 0u; k < (uint)KISEKAE_CORRECTIVE_CENTRES; k++)
        {
            offset += KISEKAE_LOAD_CORRECTIVE_FEATURE(j, k) * KISEKAE_LOAD_CORRECTIVE_COEF(e, k);
        }
    }
    return offset;
}
#endif

#ifdef KISEKAE_LOAD_SKIN_ROW
#ifndef KISEKAE_SKIN_INFLUENCES
#define KISEKAE_SKIN_INFLUENCES 8
#endif
// Vertex v's rest-space offset (m) carried to the posed space by the blend of its skinning rotations:
// sum_i w_i R(b_i) offset, R the upper-left 3 x 3 of the bone's skinning matrix (no translation).
float3 KisekaeSkinnedOffset(uint v, float3 offset)
{
    float3 r = float3(0.0, 0.0, 0.0);
    for (uint i = 0u; i < (uint)KISEKAE_SKIN_INFLUENCES; i++)
    {
        // an unused slot has weight 0 and a valid bone id (0): it adds nothing
        uint b = KISEKAE_LOAD_SKIN_BONE(v, i);
        r += KISEKAE_LOAD_SKIN_WEIGHT(v, i) * float3(dot(KISEKAE_LOAD_SKIN_ROW(b, 0u).xyz, offset), dot(KISEKAE_LOAD_SKIN_ROW(b, 1u).xyz, offset),
                        dot(KISEKAE_LOAD_SKIN_ROW(b, 2u).xyz, offset));
    }
    return r;
}
#endif

#endif // KISEKAE_CORRECTIVE_HLSL
