// kisekae_wrinkle.hlsl - wrinkle-map weights from the Tension Map channels, and blending of wrinkle normals.
//
// Part of the kisekae shader core (include kisekae_core.hlsl). Weights port kisekae.tension.wrinkle
// (wrinkle_weights); the normal blend's reference is kisekae.shaders.reference.blend_wrinkle_normals.
// Up to four wrinkle maps per set (one float4 lane each, the RGBA packing of kisekae.tension.pack_rgba):
//   x   = the map's source channel (compress or stretch, 0..1)
//   w_m = saturate(gain * saturate((x - threshold) / (1 - threshold))) * saturate(mask)
//   normalised: if sum(w) > 1 then w /= sum(w) (over all sets of a vertex).
// Normal blend (tangent space, +Z out of the surface): heights add, so slopes add. With the slope of a
// unit normal n being n.xy / max(n.z, 1/64) (the floor keeps grazing texels finite),
//   N = normalize(float3(slope(base) + sum_m w_m slope(n_m), 1)).
#ifndef KISEKAE_WRINKLE_HLSL
#define KISEKAE_WRINKLE_HLSL

struct KisekaeWrinkleParams
{
    float4 useStretch;  // per map: 0 = driven by compress, 1 = driven by stretch
    float4 threshold;   // per map: channel value where the ramp starts, 0 <= threshold < 1 (default 0)
    float4 gain;        // per map: multiplier after the ramp, >= 0 (default 1)
};

// Weights of up to four wrinkle maps (not normalised); mask = the maps' region masks (0..1).
float4 KisekaeWrinkleWeights(float compress, float stretch, float4 mask, KisekaeWrinkleParams P)
{
    float4 x = lerp(float4(compress, compress, compress, compress), float4(stretch, stretch, stretch, stretch),
                    P.useStretch);
    float4 ramp = saturate((x - P.threshold) / (1.0 - P.threshold));
    return saturate(P.gain * ramp) * saturate(mask);
}

// Scale one set of weights down to sum 1 where it sums above 1.
float4 KisekaeWrinkleNormalize(float4 w)
{
    float total = w.x + w.y + w.z + w.w;
    return total > 1.0 ? w / total : w;
}

// The same over two sets (five to eight maps).
void KisekaeWrinkleNormalize2(inout float4 w0, inout float4 w1)
{
    float total = (w0.x + w0.y + w0.z + w0.w) + (w1.x + w1.y + w1.z + w1.w);
    if (total > 1.0)
    {
        w0 /= total;
        w1 /= total;
    }
}

// Slope (the negated height gradient) of a tangent-space normal.
float2 KisekaeNormalSlope(float3 n)
{
    return n.xy / max(n.z, 0.015625);
}

// Blend up to four decoded tangent-space wrinkle normals n0..n3 onto the base normal by the weights w.
float3 KisekaeBlendWrinkleNormals(float3 base, float4 w, float3 n0, float3 n1, float3 n2, float3 n3)
{
    float2 slope = KisekaeNormalSlope(base) + w.x * KisekaeNormalSlope(n0) + w.y * KisekaeNormalSlope(n1)
                 + w.z * KisekaeNormalSlope(n2) + w.w * KisekaeNormalSlope(n3);
    return normalize(float3(slope, 1.0));
}

#endif // KISEKAE_WRINKLE_HLSL
