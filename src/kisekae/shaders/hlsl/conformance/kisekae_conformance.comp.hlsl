// Conformance kernel: runs one core function per thread on arrays, so CI can compare the core with the
// Python reference (kisekae.shaders.execute). Not for engines. The per-vertex textures (posed body, wound
// targets) always come from kisekae_source_vertex_textures.hlsl. Select the data source with
// KISEKAE_HARNESS_SOURCE: 0 = constant arrays (cbuffer), 1 = texture, 2 = structured buffers.
// KISEKAE_HARNESS_MODE = n compiles only mode n (a small program, quick for llvmpipe to JIT); -1 = all modes.
#ifndef KISEKAE_HARNESS_MODE
#define KISEKAE_HARNESS_MODE -1
#endif
#define KISEKAE_HARNESS_HAS(m) (KISEKAE_HARNESS_MODE < 0 || KISEKAE_HARNESS_MODE == (m))
#ifndef KISEKAE_HARNESS_SOURCE
#define KISEKAE_HARNESS_SOURCE 0
#endif
#if KISEKAE_HARNESS_SOURCE == 0
#define KISEKAE_CONSTANTS_CBUFFER
#include "../kisekae_source_constants.hlsl"
#elif KISEKAE_HARNESS_SOURCE == 1
#include "../kisekae_source_texture.hlsl"
#else
#include "../kisekae_source_structured.hlsl"
#endif
#include "../kisekae_source_vertex_textures.hlsl"

StructuredBuffer<float4> gIn0;
StructuredBuffer<float4> gIn1;
StructuredBuffer<float4> gIn2;
StructuredBuffer<float4> gIn3;
StructuredBuffer<float4> gIn4;
StructuredBuffer<float4> gIn5;
RWStructuredBuffer<float4> gOut0;
RWStructuredBuffer<float4> gOut1;

// Mode 15 reads the body contact's joint table from gIn4 (posed centre + reach, posed normal + radius) and gIn5
// (rest centre + flesh, rest direction), two rows per joint (instead of the data source's table, if it has one).
#undef KISEKAE_LOAD_JOINT_PLANE
#define KISEKAE_LOAD_JOINT_PLANE(j, J) \
    { \
        float4 ja_ = gIn4[2u * (j)]; \
        float4 jb_ = gIn4[2u * (j) + 1u]; \
        J.centre = ja_.xyz; \
        J.reach = ja_.w; \
        J.normal = jb_.xyz; \
        J.radius = jb_.w; \
        J.restCentre = gIn5[2u * (j)].xyz; \
        J.flesh = gIn5[2u * (j)].w; \
        J.restDir = gIn5[2u * (j) + 1u].xyz; \
    }
// Mode 16 reads the candidate triangles from gIn2: row KISEKAE_SURFACE_CANDIDATES * v + k = body vertex ids of
// garment vertex v's candidate k (as floats), the body curvature and depth bound from gIn3 (row i = body vertex i,
// x = kv, y = the depth bound in metres, 1e30 for none).
// Mode 17 reads the displacements from gIn0 (xyz), each vertex's one-ring range from gIn1 (x = start, y = count)
// and the neighbour list from gIn2 (x = vertex id). Mode 18 reads each body vertex's triangle range from gIn1
// (x = start, y = count) and the triangle list from gIn2 (xyz = body vertex ids).
#define KISEKAE_LOAD_SURFACE_TRIANGLE(v, k) ((uint3)gIn2[(uint)KISEKAE_SURFACE_CANDIDATES * (v) + (k)].xyz)
#define KISEKAE_LOAD_BODY_CURVATURE(i) (gIn3[(i)].x)
#define KISEKAE_LOAD_BODY_DEPTH_BOUND(i) (gIn3[(i)].y)
#define KISEKAE_LOAD_BODY_FACE_RANGE(i) ((uint2)gIn1[(i)].xy)
#define KISEKAE_LOAD_BODY_FACE(e) ((uint3)gIn2[(e)].xyz)
#define KISEKAE_LOAD_RING_RANGE(v) ((uint2)gIn1[(v)].xy)
#define KISEKAE_LOAD_RING(e) ((uint)gIn2[(e)].x)
#define KISEKAE_LOAD_DISPLACEMENT(j) (gIn0[(j)].xyz)
// Mode 19 reads displacements and the ring as mode 17, the skinned garment from gIn3 (xyz) and the stretch limit's
// floor from gIn3 (w; 0 where a mode leaves it so).
#define KISEKAE_LOAD_GARMENT_SKINNED(j) (gIn3[(j)].xyz)
#define KISEKAE_LOAD_SHORTEST(j) (gIn3[(j)].w)
// Mode 21 (sample point) reads displacements from gIn0, the skinned garment from gIn3, each sample's corners from
// gIn1 (xyz) and its weights from gIn5 (xyz). Mode 22 (sample push) reads the samples' candidates from gIn2 as mode
// 16. Mode 23 (edge lift gather) reads each vertex's sample range from gIn1 (x = start, y = count), the list from gIn2
// (x = 3 s + c), each sample's lift from gIn4 (xyz) and its weights from gIn5 (xyz). Mode 24 (unflip) reads displacements from gIn0,
// the skinned garment from gIn3, each vertex's face range from gIn1 and the faces from gIn2 (xyz = vertex ids).
#define KISEKAE_LOAD_SAMPLE_TRIANGLE(s, k) ((uint3)gIn2[(uint)KISEKAE_SURFACE_CANDIDATES * (s) + (k)].xyz)
#define KISEKAE_LOAD_SAMPLE_ENDS(s) ((uint3)gIn1[(s)].xyz)
#define KISEKAE_LOAD_SAMPLE_WEIGHTS(s) (gIn5[(s)].xyz)
#define KISEKAE_LOAD_SAMPLE_LIFT(s) (gIn4[(s)].xyz)
#define KISEKAE_LOAD_VERTEX_SAMPLE_RANGE(v) ((uint2)gIn1[(v)].xy)
#define KISEKAE_LOAD_VERTEX_SAMPLE(e) ((uint)gIn2[(e)].x)
#define KISEKAE_LOAD_GARMENT_FACE_RANGE(v) ((uint2)gIn1[(v)].xy)
#define KISEKAE_LOAD_GARMENT_FACE(e) ((uint3)gIn2[(e)].xyz)
// Mode 25 (corrective offset) reads each body vertex's entry range from gIn1 (x = start, y = count), each entry's
// joint slot from gIn2 (x), the coefficients from gIn3 (row KISEKAE_CORRECTIVE_CENTRES * e + k, xyz) and this
// frame's features from gIn4 (row KISEKAE_CORRECTIVE_CENTRES * j + k, x).
#define KISEKAE_LOAD_CORRECTIVE_RANGE(v) ((uint2)gIn1[(v)].xy)
#define KISEKAE_LOAD_CORRECTIVE_JOINT(e) ((uint)gIn2[(e)].x)
#define KISEKAE_LOAD_CORRECTIVE_COEF(e, k) (gIn3[(uint)KISEKAE_CORRECTIVE_CENTRES * (e) + (k)].xyz)
#define KISEKAE_LOAD_CORRECTIVE_FEATURE(j, k) (gIn4[(uint)KISEKAE_CORRECTIVE_CENTRES * (j) + (k)].x)
// Mode 28 (skinned offset) reads the rest offset from gIn0 (xyz), the vertex's 8 bone ids from gIn1 (rows 2 v and
// 2 v + 1, xyzw), its weights from gIn2 the same way and the skinning matrices' rows from gIn5 (row 3 b + r).
#define KISEKAE_LOAD_SKIN_BONE(v, i) ((uint)gIn1[2u * (v) + (i) / 4u][(i) % 4u])
#define KISEKAE_LOAD_SKIN_WEIGHT(v, i) (gIn2[2u * (v) + (i) / 4u][(i) % 4u])
#define KISEKAE_LOAD_SKIN_ROW(b, r) (gIn5[3u * (b) + (r)])
// Modes 31 (part contact step) and 32 (part depth) read the part grids' samples from gIn3 (row = sample: value, gradient), each part's
// header from gIn4 (row 3 s = (lo, start), 3 s + 1 = (dims, cell), 3 s + 2 = (reach, -)) and the rows of the inverse
// of its bone's skinning matrix from gIn5 (row 3 s + r).
#define KISEKAE_LOAD_PART_SAMPLE(row) (gIn3[(row)])
#define KISEKAE_LOAD_PART_GRID(s, G) \
    { \
        float4 pa_ = gIn4[3u * (s)]; \
        float4 pb_ = gIn4[3u * (s) + 1u]; \
        G.lo = pa_.xyz; \
        G.start = (uint)pa_.w; \
        G.dims = (uint3)pb_.xyz; \
        G.cell = pb_.w; \
        G.reach = gIn4[3u * (s) + 2u].x; \
    }
#define KISEKAE_LOAD_PART_INVERSE(s, r) (gIn5[3u * (s) + (r)])
// ... and each pair's fade from gIn4 past the headers: row 192 + 64 a + s (x).
#define KISEKAE_LOAD_PART_FADE(a, s) (gIn4[192u + 64u * (a) + (s)].x)
// Mode 33 (the part contact's flip guard): the moves in gIn0, the faces around each vertex as mode 24's (gIn1 ranges,
// gIn2 corner ids per entry), the start body in gIn3.
#define KISEKAE_LOAD_PART_MOVE(i) (gIn0[(i)].xyz)
#define KISEKAE_LOAD_PART_START(i) (gIn3[(i)].xyz)
#define KISEKAE_LOAD_PART_FACE_RANGE(v) ((uint2)gIn1[(v)].xy)
#define KISEKAE_LOAD_PART_FACE(e) ((uint3)gIn2[(e)].xyz)
// Mode 34 (self layers): displacements in gIn0, the skinned garment in gIn3, each vertex's candidates in gIn1 (row
// KISEKAE_SELF_CANDIDATES * v + k: corner ids, side) and its gap in gIn4 (x).
#define KISEKAE_LOAD_SELF_TRIANGLE(v, k) (gIn1[(uint)KISEKAE_SELF_CANDIDATES * (v) + (k)])
#define KISEKAE_LOAD_SELF_GAP(v) (gIn4[(v)].x)
#include "../kisekae_core.hlsl"


cbuffer KisekaeHarness
{
    uint gMode;          // which function to run
    uint gCount;         // number of items
    uint gPad0;
    uint gPad1;
    float4 gParams[8];   // function parameters, meaning depends on gMode
};


KisekaePushParams HarnessPushParams()
{
    KisekaePushParams P;
    P.margin = gParams[0].x;
    P.stiffness = gParams[0].y;
    P.maxPush = gParams[0].z;
    P.skirtBias = gParams[0].w;
    P.smoothK = gParams[1].x;
    P.up = gParams[1].yzw;
    return P;
}

// Body contact parameters of modes 14 and 15: gParams[0] = (gap, band, ringFactor, restSlack).
KisekaeContactParams HarnessContactParams()
{
    KisekaeContactParams C;
    C.gap = gParams[0].x;
    C.band = gParams[0].y;
    C.ringFactor = gParams[0].z;
    C.restSlack = gParams[0].w;
    return C;
}

KisekaeWrinkleParams HarnessWrinkleParams(uint row)
{
    KisekaeWrinkleParams W;
    W.useStretch = gParams[row];
    W.threshold = gParams[row + 1u];
    W.gain = gParams[row + 2u];
    return W;
}

[numthreads(64, 1, 1)]
void main(uint3 id : SV_DispatchThreadID)
{
    uint i = id.x;
    if (i >= gCount)
    {
        return;
    }
    float4 x0 = gIn0[i];
    float4 x1 = gIn1[i];
    float4 x2 = gIn2[i];
    float4 x3 = gIn3[i];
    float4 x4 = gIn4[i];
    float4 x5 = gIn5[i];
    float4 y0 = float4(0.0, 0.0, 0.0, 0.0);
    float4 y1 = float4(0.0, 0.0, 0.0, 0.0);
#if KISEKAE_HARNESS_HAS(0)
    if (gMode == 0u)
    {
        // capsule field: x0.xyz = point; gParams[0].x = smooth-union width k
        float3 g;
        uint nearest;
        float d = KisekaeCapsuleField(x0.xyz, gParams[0].x, g, nearest);
        y0 = float4(g, d);
        y1 = float4((float)nearest, 0.0, 0.0, 0.0);
    }
#endif
#if KISEKAE_HARNESS_HAS(1)
    if (gMode == 1u)
    {
        // one capsule: x0.xyz = point, x0.w = capsule index
        float3 g;
        float d = KisekaeCapsuleDistance(x0.xyz, KISEKAE_LOAD_CAPSULE((uint)x0.w), g);
        y0 = float4(g, d);
    }
#endif
#if KISEKAE_HARNESS_HAS(2)
    if (gMode == 2u)
    {
        // tension mapping: x0.x = ratio T; gParams[0] = (falloff, stretchArea, compressArea, weightLimit)
        KisekaeTensionParams P;
        P.falloff = gParams[0].x;
        P.stretchArea = gParams[0].y;
        P.compressArea = gParams[0].z;
        P.weightLimit = gParams[0].w;
        KisekaeTension t = KisekaeTensionFromRatio(x0.x, P);
        y0 = float4(t.compress, t.stretch, 0.0, 0.0);
    }
#endif
#if KISEKAE_HARNESS_HAS(3)
    if (gMode == 3u)
    {
        // push-out: x0.xyz = vertex, x1.x = tightness, x1.y = softness;
        // gParams[0] = (margin, stiffness, maxPush, skirtBias), gParams[1] = (smoothK, up)
        KisekaePushParams P;
        P.margin = gParams[0].x;
        P.stiffness = gParams[0].y;
        P.maxPush = gParams[0].z;
        P.skirtBias = gParams[0].w;
        P.smoothK = gParams[1].x;
        P.up = gParams[1].yzw;
        float push;
        float d;
        float3 q = KisekaePushOut(x0.xyz, x1.x, x1.y, P, push, d);
        y0 = float4(q, push);
        y1 = float4(d, KisekaePushAmount(x1.z, x1.x, x1.y, P), 0.0, 0.0);
    }
#endif
#if KISEKAE_HARNESS_HAS(4)
    if (gMode == 4u)
    {
        // tight look: x0 = (normal, ao), x1 = (dentDir, sss), x2.x = tightness, x2.y = pressure;
        // gParams[0] = (normalStrength, aoStrength, sssStrength, -)
        KisekaeTightParams P;
        P.normalStrength = gParams[0].x;
        P.aoStrength = gParams[0].y;
        P.sssStrength = gParams[0].z;
        float3 n = x0.xyz;
        float ao = x0.w;
        float sss = x1.w;
        KisekaeTightLook(n, ao, sss, x1.xyz, x2.x, x2.y, P);
        y0 = float4(n, ao);
        y1 = float4(sss, 0.0, 0.0, 0.0);
    }
#endif
#if KISEKAE_HARNESS_HAS(6)
    if (gMode == 6u)
    {
        // wound loop: x0 = (position, part), x1.x = reach, x1.y = gain; gParams[0] = (holeSize, holeIntensity)
        KisekaeWoundParams W;
        W.holeSize = gParams[0].x;
        W.holeIntensity = gParams[0].y;
        y0 = float4(KisekaeWoundP(x0.xyz, (uint)x0.w, x1.x, x1.y, W), 0.0, 0.0, 0.0);
    }
#endif
#if KISEKAE_HARNESS_HAS(7)
    if (gMode == 7u)
    {
        // flat-cost accumulation of one hit gParams[1] into mask x1.z: x0 = (bind position, part)
        KisekaeWoundParams W;
        W.holeSize = gParams[0].x;
        W.holeIntensity = gParams[0].y;
        y0 = float4(KisekaeAccumulateHit(x1.z, x0.xyz, (uint)x0.w, x1.x, x1.y, gParams[1], W), 0.0, 0.0, 0.0);
    }
#endif
#if KISEKAE_HARNESS_HAS(8)
    if (gMode == 8u)
    {
        // morph: x0 = (position, p), x1 = normal, x2 = target position, x3 = target normal
        float3 pos = x0.xyz;
        float3 n = x1.xyz;
        KisekaeWoundMorph(pos, n, x2.xyz, x3.xyz, x0.w);
        y0 = float4(pos, 0.0);
        y1 = float4(n, 0.0);
    }
#endif
#if KISEKAE_HARNESS_HAS(5)
    if (gMode == 5u)
    {
        // tight look with a preset: x0 = (normal, ao), x1 = (dentDir, sss), x2 = (tightness, pressure, preset)
        float3 n = x0.xyz;
        float ao = x0.w;
        float sss = x1.w;
        KisekaeTightLook(n, ao, sss, x1.xyz, x2.x, x2.y, KisekaeTightPreset((uint)x2.z));
        y0 = float4(n, ao);
        y1 = float4(sss, 0.0, 0.0, 0.0);
    }
#endif
#if KISEKAE_HARNESS_HAS(9)
    if (gMode == 9u)
    {
        // skin-bound push-out: x0.xyz = vertex, x1 = (barycentrics, tightness), x2 = (corner ids, softness);
        // push parameters as mode 3; the posed body comes from the vertex textures
        float push;
        float s;
        float3 q = KisekaeBoundPushOutLoad(x0.xyz, (uint3)x2.xyz, x1.xyz, x1.w, x2.w, HarnessPushParams(), push, s);
        y0 = float4(q, push);
        y1 = float4(s, 0.0, 0.0, 0.0);
    }
#endif
#if KISEKAE_HARNESS_HAS(10)
    if (gMode == 10u)
    {
        // capsule field, then the skin binding: inputs as mode 9
        float3 push;
        float d;
        float s;
        float3 q = KisekaeSkinPushOut(x0.xyz, (uint3)x2.xyz, x1.xyz, x1.w, x2.w, HarnessPushParams(), push, d, s);
        y0 = float4(q, push.x);
        y1 = float4(d, s, push.y, push.z);
    }
#endif
#if KISEKAE_HARNESS_HAS(11)
    if (gMode == 11u)
    {
        // wrinkle weights: x0 = (compress, stretch), x1 / x2 = masks of set 0 / 1; gParams[0..2] / [3..5] = the
        // sets' (useStretch, threshold, gain); gParams[6] = (sets 1 or 2, normalise 0 or 1)
        float4 w0 = KisekaeWrinkleWeights(x0.x, x0.y, x1, HarnessWrinkleParams(0u));
        float4 w1 = KisekaeWrinkleWeights(x0.x, x0.y, x2, HarnessWrinkleParams(3u));
        if (gParams[6].x < 1.5)
        {
            w1 = float4(0.0, 0.0, 0.0, 0.0);
            if (gParams[6].y > 0.5)
            {
                w0 = KisekaeWrinkleNormalize(w0);
            }
        }
        else if (gParams[6].y > 0.5)
        {
            KisekaeWrinkleNormalize2(w0, w1);
        }
        y0 = w0;
        y1 = w1;
    }
#endif
#if KISEKAE_HARNESS_HAS(12)
    if (gMode == 12u)
    {
        // wrinkle normal blend: x0.xyz = base normal, x1 = weights, x2..x5 = wrinkle normals (tangent space)
        y0 = float4(KisekaeBlendWrinkleNormals(x0.xyz, x1, x2.xyz, x3.xyz, x4.xyz, x5.xyz), 0.0);
    }
#endif
#if KISEKAE_HARNESS_HAS(13)
    if (gMode == 13u)
    {
        // wound target decoding: x0 = (start position, vertex id), x1 = vertex colour (unorm as the GPU reads it);
        // gParams[0] = (boundsMin, kind), gParams[1].xyz = boundsMax
        KisekaeWoundEncoding E;
        E.kind = (uint)gParams[0].w;
        E.boundsMin = gParams[0].xyz;
        E.boundsMax = gParams[1].xyz;
        float3 tp;
        float3 tn;
        uint part;
        KisekaeWoundTarget((uint)x0.w, x0.xyz, x1, E, tp, tn, part);
        y0 = float4(tp, (float)part);
        y1 = float4(tn, 0.0);
    }
#endif
#if KISEKAE_HARNESS_HAS(14)
    if (gMode == 14u)
    {
        // body contact, one joint: x0 = (point, side), x1 = (rest point, ring radius), x2 = (posed centre, reach),
        // x3.xyz = posed normal, x4 = (rest centre, flesh), x5.xyz = rest direction;
        // gParams[0] = (gap, band, ringFactor, restSlack)
        KisekaeJointPlane J;
        J.centre = x2.xyz;
        J.reach = x2.w;
        J.normal = x3.xyz;
        J.radius = x1.w;
        J.restCentre = x4.xyz;
        J.flesh = x4.w;
        J.restDir = x5.xyz;
        y0 = float4(KisekaeContactPlane(x0.xyz, x1.xyz, x0.w, J, HarnessContactParams()), 0.0);
    }
#endif
#if KISEKAE_HARNESS_HAS(15)
    if (gMode == 15u)
    {
        // body contact, all of a vertex's joints: x0.xyz = point, x1.xyz = rest point, x2 = joint ids,
        // x3 = sides (0 = unused slot); the joint table in gIn4/gIn5 (HarnessJointPlane); gParams[0] as mode 14
        y0 = float4(KisekaeContactPlanes(x0.xyz, x1.xyz, uint4(x2), x3, HarnessContactParams()), 0.0);
    }
#endif
#if KISEKAE_HARNESS_HAS(16)
    if (gMode == 16u)
    {
        // surface push: x0 = (vertex, tightness), x1 = (softness, chord (m)), candidate triangles in gIn2 (vertex
        // id = i), body curvature in gIn3; push parameters as mode 3, gParams[2].x = reach (m); the posed body comes
        // from the vertex textures
        float push;
        float s;
        float3 q = KisekaeSurfacePush(x0.xyz, i, x0.w, x1.x, HarnessPushParams(), gParams[2].x, x1.y, push, s);
        y0 = float4(q, push);
        y1 = float4(s, 0.0, 0.0, 0.0);
    }
#endif
#if KISEKAE_HARNESS_HAS(17)
    if (gMode == 17u)
    {
        // one pass of the one-ring smoothing: displacements in gIn0, ring ranges in gIn1, neighbours in gIn2
        y0 = float4(KisekaeSmoothPush(i), 0.0);
    }
#endif
#if KISEKAE_HARNESS_HAS(19)
    if (gMode == 19u)
    {
        // one pass of the stretch limit: displacements in gIn0, ring as mode 17, skinned garment in gIn3,
        // gParams[0].x = stretch, the floor in gIn3 (w); y0 = (new displacement, 1 if moved else 0)
        bool moved;
        float3 d = KisekaeStretchLimit(i, gParams[0].x, moved);
        y0 = float4(d, moved ? 1.0 : 0.0);
    }
#endif
#if KISEKAE_HARNESS_HAS(20)
    if (gMode == 20u)
    {
        // carried correction: x0.xyz = skinned vertex, x1.xyz = previous correction, gParams[0].x = keep
        y0 = float4(KisekaeCarryStart(x0.xyz, x1.xyz, gParams[0].x), 0.0);
    }
#endif
#if KISEKAE_HARNESS_HAS(21)
    if (gMode == 21u)
    {
        // edge sample point i: ends in gIn5, t in gIn4.w, displacements in gIn0, skinned garment in gIn3
        y0 = float4(KisekaeSamplePoint(i), 0.0);
    }
#endif
#if KISEKAE_HARNESS_HAS(22)
    if (gMode == 22u)
    {
        // edge sample push: x0 = (sample point, tightness), x1 = (softness, chord (m)), the sample's candidates in gIn2,
        // body curvature in gIn3; parameters as mode 16
        float push;
        float s;
        float3 q = KisekaeSamplePush(x0.xyz, i, x0.w, x1.x, HarnessPushParams(), gParams[2].x, x1.y, push, s);
        y0 = float4(q, push);
        y1 = float4(s, 0.0, 0.0, 0.0);
    }
#endif
#if KISEKAE_HARNESS_HAS(23)
    if (gMode == 23u)
    {
        // edge lift of vertex i: its samples through gIn1 / gIn2, the samples' lifts and t in gIn4
        y0 = float4(KisekaeEdgeLift(i), 0.0);
    }
#endif
#if KISEKAE_HARNESS_HAS(24)
    if (gMode == 24u)
    {
        // one unflip pass for vertex i: faces through gIn1 / gIn2, displacements in gIn0, skinned garment in gIn3,
        // gParams[0].x = turn start; y0 = (new displacement, 1 if moved else 0)
        bool moved;
        float3 d = KisekaeUnflip(i, gParams[0].x, moved);
        y0 = float4(d, moved ? 1.0 : 0.0);
    }
#endif
#if KISEKAE_HARNESS_HAS(25)
    if (gMode == 25u)
    {
        // rest-space corrective offset of body vertex i: entries through gIn1 / gIn2 / gIn3, features in gIn4
        y0 = float4(KisekaeCorrectiveOffset(i), 0.0);
    }
#endif
#if KISEKAE_HARNESS_HAS(26)
    if (gMode == 26u)
    {
        // feature of the joint rotation gIn0[i] for the centre gIn1[i], width gIn2[i].x (rad)
        y0 = float4(KisekaeCorrectiveFeature(gIn0[i], gIn1[i], gIn2[i].x), 0.0, 0.0, 0.0);
    }
#endif
#if KISEKAE_HARNESS_HAS(28)
    if (gMode == 28u)
    {
        // garment vertex i's rest offset gIn0[i] carried by its blended skinning rotation (bones gIn1, weights gIn2)
        y0 = float4(KisekaeSkinnedOffset(i, x0.xyz), 0.0);
    }
#endif
#if KISEKAE_HARNESS_HAS(27)
    if (gMode == 27u)
    {
        // the finish cap: x0.xyz = step (m), x0.w = budget (m); y0 = (capped step, budget left)
        float left;
        float3 d = KisekaeClampStep(x0.xyz, x0.w, left);
        y0 = float4(d, left);
    }
#endif
#if KISEKAE_HARNESS_HAS(29)
    if (gMode == 29u)
    {
        // body follow: corners' displacements (posed minus plain skinned) in gIn0..gIn2 (w: barycentrics), their
        // normals in gIn3..gIn5 (gIn3.w: the vertex's share)
        y0 = float4(KisekaeBodyFollow(gIn0[i].xyz, gIn1[i].xyz, gIn2[i].xyz, gIn3[i].xyz, gIn4[i].xyz, gIn5[i].xyz,
                                      float3(gIn0[i].w, gIn1[i].w, gIn2[i].w), gIn3[i].w), 0.0);
    }
#endif
#if KISEKAE_HARNESS_HAS(30)
    if (gMode == 30u)
    {
        // guarded share of triangle i in its corners' normals: corners gIn0..gIn2, their reference normals gIn3..gIn5
        y0 = float4(KisekaeGuardedFace(gIn0[i].xyz, gIn1[i].xyz, gIn2[i].xyz, gIn3[i].xyz, gIn4[i].xyz, gIn5[i].xyz),
                    0.0);
    }
#endif
#if KISEKAE_HARNESS_HAS(31)
    if (gMode == 31u)
    {
        // part contact step: x0 = (point, own part or -1), x1.xyz = rest point, x2 = the skip mask in four 16-bit
        // pieces (low first); gParams[0] = (gap, band, deep, -), gParams[1] = (minSpread, restSlack, parts, -)
        uint2 skip = uint2((uint)x2.x | ((uint)x2.y << 16u), (uint)x2.z | ((uint)x2.w << 16u));
        y0 = float4(KisekaePartStep(x0.xyz, x1.xyz, (int)x0.w, skip, (uint)gParams[1].z,
                                    KisekaeMakePartParams(gParams[0], gParams[1])), 0.0);
    }
#endif
#if KISEKAE_HARNESS_HAS(32)
    if (gMode == 32u)
    {
        // part depth: x0, x2 as mode 31, x1.w = the part s; y0.y = KisekaePairFade(x1.x, x1.y, gParams[0].z)
        uint2 skip = uint2((uint)x2.x | ((uint)x2.y << 16u), (uint)x2.z | ((uint)x2.w << 16u));
        y0 = float4(KisekaePartDepth(x0.xyz, (int)x0.w, skip, (uint)x1.w), KisekaePairFade(x1.x, x1.y, gParams[0].z),
                    0.0, 0.0);
    }
#endif
#if KISEKAE_HARNESS_HAS(33)
    if (gMode == 33u)
    {
        // the part contact's flip guard, one pass: gParams[0] = (cosMin, scale, -, -)
        y0 = float4(KisekaePartGuard(i, gParams[0].x, gParams[0].y), 0.0);
    }
#endif
#if KISEKAE_HARNESS_HAS(34)
    if (gMode == 34u)
    {
        // one self-layer pass for garment vertex i; y0 = (new displacement, 1 if moved else 0)
        bool moved;
        float3 d = KisekaeSelfLayerPush(i, moved);
        y0 = float4(d, moved ? 1.0 : 0.0);
    }
#endif
#if KISEKAE_HARNESS_HAS(18)
    if (gMode == 18u)
    {
        // body curvature of body vertex i: its triangles through gIn1 / gIn2, the posed body from the vertex textures
        y0 = float4(KisekaeBodyCurvature(i), 0.0, 0.0, 0.0);
    }
#endif
    gOut0[i] = y0;
    gOut1[i] = y1;
}
