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

// --- target decoding (kisekae.wound.encode) -----------------------------------------------------------------
// The bake stores, per start vertex, the damaged target position and normal. Encodings (kisekae.wound.ENCODINGS):
//   article8  positions absolute, 8-bit vertex colour RGB, unorm over [boundsMin, boundsMax]; normals RGB8 texture
//   delta8    positions target - start, 8-bit vertex colour RGB, unorm over the deltas' bounds; normals RGB8
//   delta16   positions target - start, RGB16 unorm texture over the deltas' bounds; normals RGB16 unorm
//   half      positions target - start, RGB16F texture; normals RGB16F
//   float     positions target - start, RGB32F texture; normals RGB32F
// Unorm normals decode as normalize(c * 2 - 1), float normals as normalize(c) (zero stays zero).
// The vertex colour's alpha holds the body part id (0..255) in every encoding.
#define KISEKAE_WOUND_ARTICLE8 0u
#define KISEKAE_WOUND_DELTA8 1u
#define KISEKAE_WOUND_DELTA16 2u
#define KISEKAE_WOUND_HALF 3u
#define KISEKAE_WOUND_FLOAT 4u

struct KisekaeWoundEncoding
{
    uint kind;           // KISEKAE_WOUND_* (the sidecar's "name")
    float3 boundsMin;    // sidecar bounds_min_m (m); unused by half and float
    float3 boundsMax;    // sidecar bounds_max_m (m)
};

// Target position (m) from the start position, the position data c (vertex colour RGB for the 8-bit
// encodings, else the position texel) as the GPU reads it (unorm already in 0..1).
float3 KisekaeWoundDecodePosition(float3 start, float3 c, KisekaeWoundEncoding E)
{
    bool isUnorm = E.kind <= KISEKAE_WOUND_DELTA16;
    float3 x = isUnorm ? E.boundsMin + c * (E.boundsMax - E.boundsMin) : c;
    return E.kind == KISEKAE_WOUND_ARTICLE8 ? x : start + x;
}

// Target unit normal from the normal texel c.
float3 KisekaeWoundDecodeNormal(float3 c, KisekaeWoundEncoding E)
{
    float3 n = E.kind <= KISEKAE_WOUND_DELTA16 ? c * 2.0 - 1.0 : c;
    return KisekaeDirectionOr(n, n); // zero stays zero; kisekae:guard
}

// Body part id from the vertex colour's alpha (unorm 8-bit).
uint KisekaeWoundPart(float alpha)
{
    return (uint)round(alpha * 255.0);
}

#ifdef KISEKAE_LOAD_WOUND_POSITION
// Decode vertex vertexId's target through KISEKAE_LOAD_WOUND_POSITION / _NORMAL; vertexColor is the start
// mesh's colour (RGB = 8-bit positions, A = body part id).
void KisekaeWoundTarget(uint vertexId, float3 start, float4 vertexColor, KisekaeWoundEncoding E,
                        out float3 targetPosition, out float3 targetNormal, out uint part)
{
    float3 c = E.kind <= KISEKAE_WOUND_DELTA8 ? vertexColor.rgb : KISEKAE_LOAD_WOUND_POSITION(vertexId);
    targetPosition = KisekaeWoundDecodePosition(start, c, E);
    targetNormal = KisekaeWoundDecodeNormal(KISEKAE_LOAD_WOUND_NORMAL(vertexId), E);
    part = KisekaeWoundPart(vertexColor.a);
}
#endif

#endif // KISEKAE_WOUND_HLSL
