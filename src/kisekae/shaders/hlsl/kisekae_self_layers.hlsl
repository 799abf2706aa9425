// kisekae_self_layers.hlsl - self layers: a garment's outer sheets kept outside its own inner sheets.
//
// Part of the kisekae shader core (include kisekae_core.hlsl); port of kisekae.fit.self_layers.self_layer_push_numpy
// (one Jacobi pass). Offline (kisekae.fit.self_layers.bake_self_layers, once per garment at rest), every garment vertex
// v gets up to KISEKAE_SELF_CANDIDATES triangles of the same garment that lie beneath it (nearer the body) on another
// sheet (no corner within 3 mesh rings of v), each with the side s_k = +1 or -1 of that triangle's winding plane v was
// on at rest, and a gap g_v (m): its rest clearance above them, at most 2 mm. Per frame, between the stretch limit and
// the edge lift (kisekae.fit.surface.surface_runtime's self_layers), with p = skinned + displacement for every vertex:
//   n_k   = s_k normalize(cross(b - a, c - a))       (triangles of zero area are skipped)
//   d_k   = (p_v - a) . n_k                          (signed clearance on v's rest side)
//   (u, w) = barycentrics of p_v - d_k n_k in (a, b, c); the candidate counts only where u, w >= -KISEKAE_SELF_OVERHANG
//           and u + w <= 1 + KISEKAE_SELF_OVERHANG, and d_k > -KISEKAE_SELF_REACH
//   v moves by m = max_k (g_v - d_k) along that n_k, where m exceeds KISEKAE_SELF_TOL (rounding), times
//   saturate(2 - m / KISEKAE_SELF_FADE) (a move past the fade is taken in part, none from twice it: a fold).
// An engine runs KISEKAE_SELF_PASSES = 2 passes, each followed by 2 KisekaeSmoothPush passes over the moves (a vertex
// that moved keeps its own move), ping-ponging displacement buffers as for the smoothing.
// Data macros (the function is compiled only when all are defined):
//   KISEKAE_LOAD_SELF_TRIANGLE(v, k)   float4, (corner ids of candidate k of vertex v as floats, side s_k); side 0
//                                      after the last candidate
//   KISEKAE_LOAD_SELF_GAP(v)           float, g_v (m)
//   KISEKAE_LOAD_DISPLACEMENT(j), KISEKAE_LOAD_GARMENT_SKINNED(j)   as kisekae_surface.hlsl
#ifndef KISEKAE_SELF_LAYERS_HLSL
#define KISEKAE_SELF_LAYERS_HLSL

#ifndef KISEKAE_SELF_CANDIDATES
#define KISEKAE_SELF_CANDIDATES 4
#endif
#ifndef KISEKAE_SELF_REACH
#define KISEKAE_SELF_REACH 0.01
#endif
#ifndef KISEKAE_SELF_OVERHANG
#define KISEKAE_SELF_OVERHANG 0.1
#endif
#ifndef KISEKAE_SELF_TOL
#define KISEKAE_SELF_TOL 1e-9
#endif
#ifndef KISEKAE_SELF_FADE
#define KISEKAE_SELF_FADE 0.005
#endif

#if defined(KISEKAE_LOAD_SELF_TRIANGLE) && defined(KISEKAE_LOAD_SELF_GAP) && defined(KISEKAE_LOAD_DISPLACEMENT) && defined(KISEKAE_LOAD_GARMENT_SKINNED)
float3 KisekaeSelfCorner(uint j)
{
    return KISEKAE_LOAD_GARMENT_SKINNED(j) + KISEKAE_LOAD_DISPLACEMENT(j);
}

// One self-layer pass for garment vertex v: its new displacement (m); `moved` tells whether it moved.
float3 KisekaeSelfLayerPush(uint v, out bool moved)
{
    float3 dv = KISEKAE_LOAD_DISPLACEMENT(v);
    float3 p = KISEKAE_LOAD_GARMENT_SKINNED(v) + dv;
    float gap = KISEKAE_LOAD_SELF_GAP(v);
    float best = 0.0;
    float3 move = (float3)0;
    for (uint k = 0u; k < (uint)KISEKAE_SELF_CANDIDATES; k++)
    {
        float4 cand = KISEKAE_LOAD_SELF_TRIANGLE(v, k);
        if (cand.w * cand.w < 1.0)
        {
            break;
        }
        uint3 t = (uint3)cand.xyz;
        float3 a = KisekaeSelfCorner(t.x);
        float3 e0 = KisekaeSelfCorner(t.y) - a;
        float3 e1 = KisekaeSelfCorner(t.z) - a;
        float3 n = cross(e0, e1);
        float ln = length(n);
        if (ln <= 0.0)
        {
            continue;
        }
        n *= cand.w / ln;
        float3 r = p - a;
        float s = dot(r, n);
        float3 e2 = r - s * n;
        float d00 = dot(e0, e0);
        float d01 = dot(e0, e1);
        float d11 = dot(e1, e1);
        float den = d00 * d11 - d01 * d01;
        if (den <= 0.0)
        {
            continue;
        }
        float u = (d11 * dot(e2, e0) - d01 * dot(e2, e1)) / den;
        float w = (d00 * dot(e2, e1) - d01 * dot(e2, e0)) / den;
        if (u < -KISEKAE_SELF_OVERHANG || w < -KISEKAE_SELF_OVERHANG || u + w > 1.0 + KISEKAE_SELF_OVERHANG)
        {
            continue;
        }
        float need = gap - s;
        if (s > -KISEKAE_SELF_REACH && need > best && need > KISEKAE_SELF_TOL)
        {
            best = need;
            move = need * n;
        }
    }
    float take = saturate(2.0 - best / KISEKAE_SELF_FADE);
    moved = best * take > 0.0;
    return dv + take * move;
}
#endif

#endif // KISEKAE_SELF_LAYERS_HLSL
