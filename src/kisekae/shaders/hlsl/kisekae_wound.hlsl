// kisekae_wound.hlsl - wound morph: hit damage, the per-frame hit loop, the flat-cost mask, the morph.
//
// Part of the kisekae shader core (include kisekae_core.hlsl); port of kisekae.wound.runtime.
// A hit is a float4: xyz = point (m; posed world space for the loop, bind space for the flat-cost mask),
// w = body part id of the surface it hit. Each vertex knows its own part and that part's
// reach (hole-size multiplier for hits on the same part: an arm breaks off with one hit) and gain
// (damage multiplier, 0 = immune).
//   damage(dist, size) = saturate(1 - (dist - size) * holeIntensity)
//   p = saturate(p + gain * damage(|x - hit|, holeSize * (hitPart == part ? reach : 1)))   per hit
// Loop mode runs all hits every frame (cost grows with hits, as the article). Flat-cost mode adds each
// hit once into a damage mask (per vertex or UV texel) when it lands; the frame then only reads p.
#ifndef KISEKAE_WOUND_HLSL
#define KISEKAE_WOUND_HLSL

struct KisekaeWoundParams
{
    float holeSize;       // fully damaged radius (m)
    float holeIntensity;  // 1 / fall-off width (1/m)
};

// Damage of one hit at distance dist (m) with radius size (m), 0..1.
float KisekaeHitDamage(float dist, float size, float holeIntensity)
{
    return saturate(1.0 - (dist - size) * holeIntensity);
}

// One accumulation step: returns saturate(p + gain * damage) for hit (xyz point, w part id).
float KisekaeAccumulateHit(float p, float3 position, uint part, float reach, float gain, float4 hit,
                           KisekaeWoundParams W)
{
    float size = W.holeSize * ((uint)hit.w == part ? reach : 1.0);
    return saturate(p + gain * KisekaeHitDamage(distance(position, hit.xyz), size, W.holeIntensity));
}

// Loop mode: morph parameter of a vertex from every hit (KISEKAE_HIT_COUNT, KISEKAE_LOAD_HIT).
float KisekaeWoundP(float3 position, uint part, float reach, float gain, KisekaeWoundParams W)
{
    float p = 0.0;
    uint count = KISEKAE_HIT_COUNT;
    [loop]
    for (uint i = 0u; i < count; ++i)
    {
        p = KisekaeAccumulateHit(p, position, part, reach, gain, KISEKAE_LOAD_HIT(i), W);
    }
    return p;
}

// Morph position and normal towards the damaged target by p; p == 0 returns the inputs untouched.
void KisekaeWoundMorph(inout float3 position, inout float3 normal, float3 targetPosition, float3 targetNormal, float p)
{
    if (p == 0.0)
    {
        return;
    }
    position = position + p * (targetPosition - position);
    float3 n = normal + p * (targetNormal - normal);
    float len = length(n);
    if (len > 0.0) // kisekae:guard
    {
        normal = n / len;
    }
}

#endif // KISEKAE_WOUND_HLSL
