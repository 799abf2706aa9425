// kisekae_part_contact.hlsl - contact between body parts that share no joint (a hand on the hip, an arm on the
// chest, the thighs), a per-vertex step after the joint planes (kisekae_contact.hlsl), in the body's vertex stage or
// a compute pass.
//
// Part of the kisekae shader core (include kisekae_core.hlsl); port of kisekae.avatar.part_contact.part_step.
// Each part s (the body vertices whose heaviest bone is one bone) has a grid of float4 samples in its bone's rest
// frame: the signed distance to the part's own triangles (m, negative inside) and its gradient, interpolated
// trilinearly (all four, so the gradient is continuous). A vertex of part a (its heaviest bone's part) is tested
// against every part s whose bit is clear in its 64-bit skip mask (the mask sets the parts of the bones that skin
// it and of their parents and children: the joints' own folds). Against part s, with the vertex read in s's rest
// frame (y = inverse skinning matrix of s's bone times p) and in a's:
//   g      = f_s(y_s) - f_a(y_a)                     (f_a = 0, grad 0 where y_a is off a's grid)
//   target = min(gap, f_s(pRest) - f_a(pRest) - band - restSlack)   (gap where pRest is off s's grid)
//   if f_s(y_s) <= gap + band and g < target + band:
//     t    = max(band - |g - target|, 0) / band
//     step = (max(g, target) + t^2 band / 4 - g) * fade[a][s]
//     d    = G_s - max(-cos(G_s, G_a), 0) G_a       (G: the gradients carried to the posed frame, G = M^-T g)
//     move = min(step / max(|d|, minSpread), reach_a) / |d| * d    (reach_a: part a's largest move, its header)
// and the moves against all parts, each from the input p, are added. fade[a][s] (KISEKAE_LOAD_PART_FADE(a, s)) is
// made once a frame, before the first step, from how deep each part lies in each other
// (kisekae.avatar.part_contact.pair_fade): KisekaePartDepth per vertex and part, the largest per (part, part) with
// InterlockedMax on the float's bits (depths are >= 0), then KisekaePairFade per pair and, per part, the least of
// its row, and each pair's factor the least of its own and its two parts'. The engine then spreads the moves over
// the one-ring (KisekaeSmoothPush passes, kisekae_surface.hlsl) and takes the step again from there with the same
// fades (kisekae.avatar.part_contact.part_contact), and ends with the flip guard (kisekae.avatar.flip_guard):
// KisekaePartGuard passes over the moves (the second step's result less the body it started from), three that halve
// the move of a vertex with a triangle around it turned by more than 90 degrees from the start body, then six that
// undo it (scale 0.5, then 0). The rest pose is unchanged. Units are metres.
#ifndef KISEKAE_PART_CONTACT_HLSL
#define KISEKAE_PART_CONTACT_HLSL

struct KisekaePartGrid
{
    float3 lo;          // rest-frame position of the grid's first sample (m)
    uint start;         // first sample's row in the sample table
    uint3 dims;         // samples per axis (>= 2), x-major rows: start + (ix * ny + iy) * nz + iz
    float cell;         // sample spacing (m)
    float reach;        // the largest move of one of its vertices against another part (m)
};

struct KisekaePartParams
{
    float gap;          // room left between two parts in contact (m)
    float band;         // width of the smooth maximum (m), > 0
    float deep;         // depth moved fully (m), > 0 (read by KisekaePairFade; the pair fades to none at twice it)
    float minSpread;    // floor of |d| before normalising
    float restSlack;    // metres kept between the rest value and the target
};

// The parameters from two float4: (gap, band, deep, -) and (minSpread, restSlack, -, -).
KisekaePartParams KisekaeMakePartParams(float4 a, float4 b)
{
    KisekaePartParams P;
    P.gap = a.x;
    P.band = a.y;
    P.deep = a.z;
    P.minSpread = b.x;
    P.restSlack = b.y;
    return P;
}

// One part's pair move: fb, fa = the values at the vertex of the other part s and of its own part a; gb, ga their
// gradients in the posed frame; fbRest, faRest the rest values (hasRest: the rest point is on s's grid); fade the
// pair's factor, reach the largest move (the vertex's part's). Returns the move (m).
float3 KisekaePartMove(float fb, float3 gb, float fa, float3 ga, float fbRest, float faRest, bool hasRest,
                       float fade, float reach, KisekaePartParams P)
{
    float target = P.gap;
    if (hasRest)
    {
        target = min(P.gap, fbRest - faRest - P.band - P.restSlack);
    }
    float g = fb - fa;
    if (g >= target + P.band)
    {
        return float3(0.0, 0.0, 0.0);
    }
    float t = max(P.band - abs(g - target), 0.0) / P.band;
    float step = (max(g, target) + t * t * P.band / 4.0 - g) * fade;
    float nb = length(gb);
    float na = length(ga);
    float c = (nb > 1e-6 && na > 1e-6) ? dot(gb, ga) / (nb * na) : 0.0; // kisekae:guard
    float3 d = gb - max(-c, 0.0) * ga;
    float dn = length(d);
    if (dn <= 1e-6 || step == 0.0) // kisekae:guard
    {
        return float3(0.0, 0.0, 0.0); // kisekae:guard (no direction, or a pair faded out)
    }
    return (min(step / max(dn, P.minSpread), reach) / dn) * d;
}

// A pair's factor from the deepest vertex of each part inside the other (m, >= 0): 1 up to `deep`, 0 from twice it.
float KisekaePairFade(float depthAS, float depthSA, float deep)
{
    return saturate(2.0 - max(depthAS, depthSA) / deep);
}

#ifdef KISEKAE_LOAD_PART_GRID
// Part s's sample at rest-frame point y: (value, gradient); false off the grid. The grid header comes from the
// statement macro KISEKAE_LOAD_PART_GRID(s, G), the samples from KISEKAE_LOAD_PART_SAMPLE(row) (float4).
bool KisekaePartSample(KisekaePartGrid G, float3 y, out float4 f)
{
    f = float4(0.0, 0.0, 0.0, 0.0);
    float3 q = (y - G.lo) / G.cell;
    float3 top = float3(G.dims) - 1.0;
    if (any(q < 0.0) || any(q > top))
    {
        return false;
    }
    uint3 i = min(uint3(floor(q)), G.dims - 2u);
    float3 t = q - float3(i);
    for (uint a = 0u; a < 2u; ++a)
    {
        for (uint b = 0u; b < 2u; ++b)
        {
            for (uint k = 0u; k < 2u; ++k)
            {
                float w = (a == 1u ? t.x : 1.0 - t.x) * (b == 1u ? t.y : 1.0 - t.y) * (k == 1u ? t.z : 1.0 - t.z);
                f += w * KISEKAE_LOAD_PART_SAMPLE(G.start + ((i.x + a) * G.dims.y + i.y + b) * G.dims.z + i.z + k);
            }
        }
    }
    return true;
}

// Point p in part s's rest frame, and a rest-frame gradient g carried to the posed frame, through the rows of the
// inverse of s's bone skinning matrix this frame, KISEKAE_LOAD_PART_INVERSE(s, r) (r = 0, 1, 2; float4).
float3 KisekaePartToRest(uint s, float3 p)
{
    float4 h = float4(p, 1.0);
    return float3(dot(KISEKAE_LOAD_PART_INVERSE(s, 0u), h), dot(KISEKAE_LOAD_PART_INVERSE(s, 1u), h),
                  dot(KISEKAE_LOAD_PART_INVERSE(s, 2u), h));
}

float3 KisekaePartGradientToPosed(uint s, float3 g)
{
    return g.x * KISEKAE_LOAD_PART_INVERSE(s, 0u).xyz + g.y * KISEKAE_LOAD_PART_INVERSE(s, 1u).xyz
           + g.z * KISEKAE_LOAD_PART_INVERSE(s, 2u).xyz;
}

// The step for body vertex p (rest position pRest) of part `own` (-1: it does not move), its skip mask (x: parts
// 0-31, y: 32-63) and `parts` parts.
float3 KisekaePartStep(float3 p, float3 pRest, int own, uint2 skip, uint parts, KisekaePartParams P)
{
    float3 moved = p;
    if (own < 0)
    {
        return p;
    }
    uint a = (uint)own;
    KisekaePartGrid A;
    KISEKAE_LOAD_PART_GRID(a, A);
    for (uint s = 0u; s < parts; ++s)
    {
        uint bits = s < 32u ? skip.x : skip.y;
        if (((bits >> (s & 31u)) & 1u) != 0u || s == a)
        {
            continue;
        }
        if (KISEKAE_LOAD_PART_FADE(a, s) <= 0.0)
        {
            continue;
        }
        KisekaePartGrid G;
        KISEKAE_LOAD_PART_GRID(s, G);
        float4 fb;
        if (!KisekaePartSample(G, KisekaePartToRest(s, p), fb) || fb.x > P.gap + P.band)
        {
            continue;
        }
        float4 fbRest;
        bool hasRest = KisekaePartSample(G, pRest, fbRest);
        float4 fa;
        bool onOwn = KisekaePartSample(A, KisekaePartToRest(a, p), fa);
        float4 faRest;
        bool restOwn = KisekaePartSample(A, pRest, faRest);
        moved += KisekaePartMove(fb.x, KisekaePartGradientToPosed(s, fb.yzw), onOwn ? fa.x : 0.0,
                                 KisekaePartGradientToPosed(a, fa.yzw), fbRest.x, restOwn ? faRest.x : 0.0, hasRest,
                                 KISEKAE_LOAD_PART_FADE(a, s), A.reach, P);
    }
    return moved;
}

// How deep (m, >= 0) body vertex p of part `own` lies inside part s: 0 where it is masked from s (skip), off s's
// grid, outside it, or has no part.
float KisekaePartDepth(float3 p, int own, uint2 skip, uint s)
{
    uint bits = s < 32u ? skip.x : skip.y;
    if (own < 0 || ((bits >> (s & 31u)) & 1u) != 0u)
    {
        return 0.0;
    }
    KisekaePartGrid G;
    KISEKAE_LOAD_PART_GRID(s, G);
    float4 f;
    if (!KisekaePartSample(G, KisekaePartToRest(s, p), f))
    {
        return 0.0;
    }
    return max(-f.x, 0.0);
}
#endif

#ifdef KISEKAE_LOAD_PART_FACE
// The flip guard's test of one triangle (three body vertex ids): its normal with this pass's moves
// (KISEKAE_LOAD_PART_MOVE(i), float3) turned from its normal in the start body (KISEKAE_LOAD_PART_START(i)) past
// acos(cosMin); never a triangle of zero area at the start (kisekae.avatar.flip_guard.turned_faces_numpy).
bool KisekaePartTurned(uint3 t, float cosMin)
{
    float3 a = KISEKAE_LOAD_PART_START(t.x);
    float3 b = KISEKAE_LOAD_PART_START(t.y);
    float3 c = KISEKAE_LOAD_PART_START(t.z);
    float3 n = cross(b - a, c - a);
    float3 pa = a + KISEKAE_LOAD_PART_MOVE(t.x);
    float3 m = cross(b + KISEKAE_LOAD_PART_MOVE(t.y) - pa, c + KISEKAE_LOAD_PART_MOVE(t.z) - pa);
    return dot(n, m) < cosMin * length(n) * length(m);
}

// One pass of the flip guard for body vertex v: its move times `scale` (0.5 halving, 0 undoing) when a triangle
// around it is turned (KISEKAE_LOAD_PART_FACE_RANGE(v): (first, count) of the faces around its welded vertex,
// KISEKAE_LOAD_PART_FACE(e): uint3 corner ids), else its move.
float3 KisekaePartGuard(uint v, float cosMin, float scale)
{
    float3 d = KISEKAE_LOAD_PART_MOVE(v);
    if (all(d == 0.0)) // kisekae:guard (a vertex that does not move stays; scaling it would give the same)
    {
        return d;
    }
    uint2 range = KISEKAE_LOAD_PART_FACE_RANGE(v);
    for (uint e = range.x; e < range.x + range.y; ++e)
    {
        if (KisekaePartTurned(KISEKAE_LOAD_PART_FACE(e), cosMin))
        {
            return scale * d;
        }
    }
    return d;
}
#endif

#endif // KISEKAE_PART_CONTACT_HLSL
