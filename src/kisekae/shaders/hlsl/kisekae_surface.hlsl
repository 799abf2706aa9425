// kisekae_surface.hlsl - surface push: keep each garment vertex outside the nearest of its candidate body triangles.
//
// Part of the kisekae shader core (include kisekae_core.hlsl); port of kisekae.fit.surface.surface_push_numpy
// (the per-vertex step) and smooth_push_numpy (one Jacobi pass of the one-ring smoothing).
// Offline (kisekae.fit.surface.bake_surface_candidates), every garment vertex v gets K body triangles it may
// meet in any pose (KISEKAE_SURFACE_CANDIDATES, default 32; a vertex with fewer repeats its first, and the loop
// stops at the first repeat, so most vertices test 1-3 triangles). Per frame,
// from the posed body vertices x and their posed unit normals n:
//   q_k   = closest point of p on candidate triangle k (Ericson 5.1.5, barycentrics (u, v, w))
//   k*    = argmin_k |p - q_k|^2                   (strictly smaller wins: ties keep the earlier candidate)
//   |p - q_k*| > reach: no push (s = 1e30, standing for +infinity); reach defaults to maxPush
//   (p - q_k*) . n_q < 0 and |p - q_k*| > B_q, B_q = u B_i + v B_j + w B_k the body's depth bound blended at q_k*:
//           no push either (s = 1e30): a point inside a body lies at most half the body's thickness below its nearest
//           skin, so a candidate that puts it deeper is not its nearest skin (the list misses the skin that is;
//           kisekae.fit.depth_bound, KISEKAE_LOAD_BODY_DEPTH_BOUND; 1e30 or undefined: no bound)
//   n_q   = normalize(u n_i + v n_j + w n_k)       (the normal blended at q_k*)
//   kappa = u kv_i + v kv_j + w kv_k               (the body's curvature blended at q_k*, 1/m)
//   s     = (p - q_k*) . n_q - min(kappa L^2 / 8, KISEKAE_CHORD_CAP)
//           (signed clearance, m, less the chord allowance: a flat cloth triangle between vertices on a curved
//           body dips under it by the sagitta kappa L^2 / 8, L = `chord`, the vertex's longest rest edge (m,
//           kisekae.fit.surface.garment_chords); chord 0 or kv 0: no allowance)
//   the push law of kisekae_pushout.hlsl with d = s, along n_q (skirt bias included): KisekaeBoundPushOut with
//   the bound point replaced by q_k*.
// Body curvature (KisekaeBodyCurvature, kisekae.fit.surface.body_curvature), per frame after the body normals:
//   kv_v  = max over the triangle edges (v, c) at v of |n_v - n_c| / |x_v - x_c|   (0 on zero-length edges)
// one thread per body vertex looping over the triangles around it (the CSR list an engine's body normals pass
// already loops over), rather than one thread per triangle with an atomic max on uint-encoded floats: no atomics,
// no clearing pass, and each edge is seen from both of its ends, so the result does not depend on the order.
// Smoothing (KisekaeSmoothPush, one pass; an engine ping-pongs two displacement buffers): with d the vertex's
// displacement (corrected minus skinned, m) and a the mean displacement of its one-ring,
//   d' = (d + a) / 2 if |a|^2 > |d|^2, else d      (a push spreads to the neighbours and never shrinks).
// Stretch limit (KisekaeStretchLimit, one pass; kisekae.fit.surface.stretch_limit_numpy), after the second push:
// with p = x + d (x skinned), for every one-ring edge (v, j) with l = |p_j - p_v| > (1 + stretch) |x_j - x_v|,
//   c_j = (l - (1 + stretch) |x_j - x_v|) / (2 l) (p_j - p_v);   d' = d + mean of the c_j (d' = d if there are none)
// and, with the floor s_j = min(shortest_v, shortest_j) (KISEKAE_LOAD_SHORTEST, the compression limit of cloth that
// clings to the body), for every edge with 0 < l < (1 - KISEKAE_LIMIT_TIE) s_j |x_j - x_v| the same c_j with s_j in
// place of 1 + stretch; over the limit means l > (1 + KISEKAE_LIMIT_TIE) (1 + stretch) |x_j - x_v| (the tie,
// kisekae.fit.surface.LIMIT_TIE: an edge a pass left at a bound is not decided again by float32 rounding)
// and each vertex it moved is pushed again (KisekaeSurfacePush of x + d').
// Units are metres; positions in the body's (posed) space.
// Data macros (optional; the functions that need them are compiled only when they are defined):
//   KISEKAE_LOAD_SURFACE_TRIANGLE(v, k)  uint3, body vertex ids of garment vertex v's candidate k (an expression)
//   KISEKAE_LOAD_BODY_POSITION(i), KISEKAE_LOAD_BODY_NORMAL(i)   as kisekae_vertexdata.hlsl
//   KISEKAE_LOAD_RING_RANGE(v)           uint2, (start, count) of vertex v's one-ring in the neighbour list
//   KISEKAE_LOAD_RING(e)                 uint, neighbour id at entry e of that list (kisekae.fit.surface.one_ring)
//   KISEKAE_LOAD_DISPLACEMENT(j)         float3, displacement of garment vertex j from the previous pass (m)
//   KISEKAE_LOAD_GARMENT_SKINNED(j)      float3, skinned position of garment vertex j (m; KisekaeStretchLimit,
//                                        compiled when it and the ring macros are defined)
//   KISEKAE_LOAD_SHORTEST(j)             float in [0, 1), the stretch limit's floor at garment vertex j (the bake's
//                                        `shortest`); undefined, it reads 0.0 (edges shrink freely)
//   KISEKAE_LOAD_BODY_CURVATURE(i)       float, kv of body vertex i this frame (1/m; KisekaeBodyCurvature's output).
//                                        Define it with the candidates; undefined, it reads 0.0 (no allowance)
//   KISEKAE_LOAD_BODY_DEPTH_BOUND(i)     float, the depth bound of body vertex i (m; baked once per body at rest,
//                                        kisekae.fit.depth_bound.body_depth_bound: half the body's thickness along
//                                        the inward normal plus 5 mm, 1e30 where the ray leaves the body);
//                                        undefined, it reads 1e30 (every candidate is trusted)
//   KISEKAE_LOAD_BODY_FACE_RANGE(i)      uint2, (start, count) of body vertex i's triangles in the list below
//   KISEKAE_LOAD_BODY_FACE(e)            uint3, body vertex ids of the triangle at entry e of that list
//                                        (the last two: KisekaeBodyCurvature, compiled when both are defined)
//   KISEKAE_LOAD_SAMPLE_TRIANGLE(s, k)   uint3, body vertex ids of sample s's candidate k (KisekaeSamplePush)
//   KISEKAE_LOAD_SAMPLE_ENDS(s)          uint3, garment vertex ids of sample s's corners (KisekaeSamplePoint)
//   KISEKAE_LOAD_SAMPLE_WEIGHTS(s)       float3, its barycentric weights (>= 0, sum 1; an edge sample at t along
//                                        the edge: (1 - t, t, 0), a face sample: all > 0)
//   KISEKAE_LOAD_SAMPLE_LIFT(s)          float3, its lift this round (m; pushed minus sample point)
//   KISEKAE_LOAD_VERTEX_SAMPLE_RANGE(v)  uint2, (start, count) of the samples on vertex v's edges in the list below
//   KISEKAE_LOAD_VERTEX_SAMPLE(e)        uint, 3 s + c (v is corner c of sample s, with a weight > 0)
//                                        (kisekae.fit.edge_lift.vertex_samples; KisekaeEdgeLift)
//   KISEKAE_LOAD_GARMENT_FACE_RANGE(v)   uint2, (start, count) of the garment faces around vertex v
//   KISEKAE_LOAD_GARMENT_FACE(e)         uint3, garment vertex ids of the face at entry e (kisekae.fit.unflip
//                                        .vertex_faces; KisekaeUnflip)
// Edge lift (kisekae.fit.edge_lift), after the stretch limit, LIFT_PASSES = 3 rounds: one thread per sample s computes
// p_s = KisekaeSamplePoint(s) and lift_s = KisekaeSamplePush(p_s, ...) - p_s; one thread per vertex gathers
// KisekaeEdgeLift(v); one KisekaeSmoothPush pass over those lifts; the lifted vertices are pushed again; then one
// KisekaeUnflip pass and the push of what it moved. Two more unflip passes (UNFLIP_PASSES) end the frame.
// KISEKAE_CHORD_CAP (m, default 0.003 = kisekae.fit.surface.CHORD_CAP) caps the chord allowance; KISEKAE_LIFT_REACH
// (m, default 0.004 = kisekae.fit.edge_lift.LIFT_REACH) fades the edge lift of deep samples.
#ifndef KISEKAE_SURFACE_HLSL
#define KISEKAE_SURFACE_HLSL

#ifndef KISEKAE_SURFACE_CANDIDATES
#define KISEKAE_SURFACE_CANDIDATES 32
#endif
#ifndef KISEKAE_CHORD_CAP
#define KISEKAE_CHORD_CAP 0.003
#endif
#ifndef KISEKAE_LIFT_REACH
#define KISEKAE_LIFT_REACH 0.004
#endif

// Parameter num / den of the closest point along an edge; 0 on a zero-length edge (den = |edge|^2 there).
float KisekaeEdgeT(float num, float den)
{
    return den > 0.0 ? num / den : 0.0; // kisekae:guard
}

// Barycentrics (u, v, w) in (a, b, c) of the point of triangle abc closest to p (kisekae.geom.closest.
// closest_barycentric: Ericson, Real-Time Collision Detection, 5.1.5). Ties go to the first region of the walk:
// vertex a, b, edge ab, vertex c, edge ac, edge bc, then the interior. A degenerate triangle (zero-length edge,
// zero area) falls back to its nearest valid feature and never divides by 0.
float3 KisekaeClosestBarycentric(float3 p, float3 a, float3 b, float3 c)
{
    float3 ab = b - a;
    float3 ac = c - a;
    float3 ap = p - a;
    float d1 = dot(ab, ap);
    float d2 = dot(ac, ap);
    if (d1 <= 0.0 && d2 <= 0.0)
    {
        return float3(1.0, 0.0, 0.0);
    }
    float3 bp = p - b;
    float d3 = dot(ab, bp);
    float d4 = dot(ac, bp);
    if (d3 >= 0.0 && d4 <= d3)
    {
        return float3(0.0, 1.0, 0.0);
    }
    float vc = d1 * d4 - d3 * d2;
    if (vc <= 0.0 && d1 >= 0.0 && d3 <= 0.0)
    {
        float t = KisekaeEdgeT(d1, d1 - d3);
        return float3(1.0 - t, t, 0.0);
    }
    float3 cp = p - c;
    float d5 = dot(ab, cp);
    float d6 = dot(ac, cp);
    if (d6 >= 0.0 && d5 <= d6)
    {
        return float3(0.0, 0.0, 1.0);
    }
    float vb = d5 * d2 - d1 * d6;
    if (vb <= 0.0 && d2 >= 0.0 && d6 <= 0.0)
    {
        float t = KisekaeEdgeT(d2, d2 - d6);
        return float3(1.0 - t, 0.0, t);
    }
    float va = d3 * d6 - d5 * d4;
    if (va <= 0.0 && (d4 - d3) >= 0.0 && (d5 - d6) >= 0.0)
    {
        float t = KisekaeEdgeT(d4 - d3, (d4 - d3) + (d5 - d6));
        return float3(0.0, 1.0 - t, t);
    }
    float den = va + vb + vc;
    if (!(den > 0.0)) // degenerate triangle: vertex a; kisekae:guard
    {
        return float3(1.0, 0.0, 0.0); // kisekae:guard
    }
    float v = vb / den;
    float w = vc / den;
    return float3(1.0 - v - w, v, w);
}

#ifdef KISEKAE_LOAD_SURFACE_TRIANGLE
#ifndef KISEKAE_LOAD_BODY_POSITION
#error "kisekae: KISEKAE_LOAD_SURFACE_TRIANGLE needs the posed body (KISEKAE_LOAD_BODY_POSITION / _NORMAL)"
#endif

// Squared distance (m^2) from p to the posed body triangle with vertex ids `corners`; bary gets the barycentrics
// of its closest point.
float KisekaeSurfaceDistance2(float3 p, uint3 corners, out float3 bary)
{
    float3 a = KISEKAE_LOAD_BODY_POSITION(corners.x);
    float3 b = KISEKAE_LOAD_BODY_POSITION(corners.y);
    float3 c = KISEKAE_LOAD_BODY_POSITION(corners.z);
    bary = KisekaeClosestBarycentric(p, a, b, c);
    float3 d = p - (bary.x * a + bary.y * b + bary.z * c);
    return dot(d, d);
}

#ifndef KISEKAE_LOAD_BODY_CURVATURE
#define KISEKAE_LOAD_BODY_CURVATURE(i) 0.0
#endif
#ifndef KISEKAE_LOAD_BODY_DEPTH_BOUND
#define KISEKAE_LOAD_BODY_DEPTH_BOUND(i) 1e30
#endif

// The body normals pass's share of triangle abc (posed corners, m) in its corners' vertex normals, guarded against
// a fold (kisekae.geom.guarded_normals): its area vector (b - a) x (c - a) weighted by how far it agrees with the sum
// of its corners' reference normals ra + rb + rc (the skinned normals: rest normals carried by the blended skinning
// rotations, as a skinned mesh writes them; any length). With c = the cosine between the two,
//   w = saturate((c - off) / (full - off)),  off = -0.3, full = 0 (GUARD_OFF, GUARD_FULL there)
// = saturate(c / 0.3 + 1): a triangle turned up to 90 degrees from the reference counts fully, one past ~107.5 degrees
// (inside out: a fold's far side) not at all. A zero-area triangle or a zero reference sum gives 0. Sum this over a
// vertex's triangles and normalise; a zero sum takes the vertex's own reference normal, normalised.
float3 KisekaeGuardedFace(float3 a, float3 b, float3 c, float3 ra, float3 rb, float3 rc)
{
    float3 n = cross(b - a, c - a);
    float3 r = ra + rb + rc;
    float len = sqrt(dot(n, n) * dot(r, r));
    if (!(len > 0.0)) // kisekae:guard
    {
        return float3(0.0, 0.0, 0.0); // no area or no reference: no share; kisekae:guard
    }
    return n * saturate(dot(n, r) / len / 0.3 + 1.0);
}

// True when the closest point (barycentrics bary) of body triangle `corners`, at squared distance d2 (m^2) from p, has
// p behind the skin there (against the normal blended at it) farther than the body's depth bound blended at it: that
// triangle is not p's nearest skin (kisekae.fit.surface.surface_push_numpy's depth_bound).
bool KisekaeBeyondDepthBound(float3 p, uint3 corners, float3 bary, float d2)
{
    float bound = bary.x * KISEKAE_LOAD_BODY_DEPTH_BOUND(corners.x) + bary.y * KISEKAE_LOAD_BODY_DEPTH_BOUND(corners.y)
                + bary.z * KISEKAE_LOAD_BODY_DEPTH_BOUND(corners.z);
    float3 q = bary.x * KISEKAE_LOAD_BODY_POSITION(corners.x) + bary.y * KISEKAE_LOAD_BODY_POSITION(corners.y)
             + bary.z * KISEKAE_LOAD_BODY_POSITION(corners.z);
    float3 n = bary.x * KISEKAE_LOAD_BODY_NORMAL(corners.x) + bary.y * KISEKAE_LOAD_BODY_NORMAL(corners.y)
             + bary.z * KISEKAE_LOAD_BODY_NORMAL(corners.z);
    return dot(p - q, n) < 0.0 && sqrt(d2) > bound;
}

// Chord allowance (m) of a vertex whose longest rest edge is `chord` (m) over body curvature `kappa` (1/m): the
// sagitta kappa chord^2 / 8 of kisekae.fit.surface.chord_allowance, capped at KISEKAE_CHORD_CAP.
float KisekaeChordAllowance(float chord, float kappa)
{
    return min(kappa * chord * chord / 8.0, (float)KISEKAE_CHORD_CAP);
}

// The push at the closest point (barycentrics bary) of body triangle `corners`: KisekaeBoundPushOut's law with the
// clearance less `allowance` (m).
float3 KisekaeSurfacePushAt(float3 p, uint3 corners, float3 bary, float allowance, float tightness, float softness,
                            KisekaePushParams P, out float push, out float s)
{
    float3 b = bary.x * KISEKAE_LOAD_BODY_POSITION(corners.x) + bary.y * KISEKAE_LOAD_BODY_POSITION(corners.y)
             + bary.z * KISEKAE_LOAD_BODY_POSITION(corners.z);
    float3 nb = bary.x * KISEKAE_LOAD_BODY_NORMAL(corners.x) + bary.y * KISEKAE_LOAD_BODY_NORMAL(corners.y)
              + bary.z * KISEKAE_LOAD_BODY_NORMAL(corners.z);
    float3 n = KisekaeDirectionOr(nb, nb); // zero stays zero; kisekae:guard
    s = dot(p - b, n) - allowance;
    push = KisekaePushAmount(s, tightness, softness, P);
    if (push <= 0.0 || dot(n, n) <= 0.0) // kisekae:guard
    {
        push = 0.0;
        return p;
    }
    return p + push * KisekaePushDirection(n, P);
}

// Candidate k of garment vertex `id` (sample = false) or of edge sample `id` (sample = true, when
// KISEKAE_LOAD_SAMPLE_TRIANGLE is defined): its three body vertex ids.
uint3 KisekaeCandidate(uint id, uint k, bool sample)
{
#ifdef KISEKAE_LOAD_SAMPLE_TRIANGLE
    if (sample)
    {
        return KISEKAE_LOAD_SAMPLE_TRIANGLE(id, k);
    }
#endif
    return KISEKAE_LOAD_SURFACE_TRIANGLE(id, k);
}

// The surface push of point p against the candidates of vertex or sample `id` (KisekaeCandidate); see
// KisekaeSurfacePush.
float3 KisekaeCandidatePush(float3 p, uint id, bool sample, float tightness, float softness, KisekaePushParams P,
                            float reach, float chord, out float push, out float s)
{
    uint3 corners = KisekaeCandidate(id, 0u, sample);
    float3 bary;
    float best = KisekaeSurfaceDistance2(p, corners, bary);
    uint3 first = corners;
    for (uint k = 1u; k < (uint)KISEKAE_SURFACE_CANDIDATES; k++)
    {
        uint3 ck = KisekaeCandidate(id, k, sample);
        if (all(ck == first))
            break; // the bake pads a short list with its first candidate: the rest are repeats
        float3 bk;
        float dk = KisekaeSurfaceDistance2(p, ck, bk);
        if (dk < best)
        {
            best = dk;
            corners = ck;
            bary = bk;
        }
    }
    if (best > reach * reach || KisekaeBeyondDepthBound(p, corners, bary, best))
    {
        push = 0.0;
        s = 1e30; // +infinity: no candidate within reach, or the nearest one beyond the depth bound; kisekae:guard
        return p;
    }
    float kappa = bary.x * KISEKAE_LOAD_BODY_CURVATURE(corners.x) + bary.y * KISEKAE_LOAD_BODY_CURVATURE(corners.y)
                + bary.z * KISEKAE_LOAD_BODY_CURVATURE(corners.z);
    return KisekaeSurfacePushAt(p, corners, bary, KisekaeChordAllowance(chord, kappa), tightness, softness, P, push,
                                s);
}

// Pushed position of garment vertex p (id v, m) from the nearest of its KISEKAE_SURFACE_CANDIDATES candidate
// triangles within `reach` (m; kisekae.fit.surface passes maxPush), with the chord allowance of its longest rest
// edge `chord` (m; 0: none) over the body curvature (KISEKAE_LOAD_BODY_CURVATURE) blended at the closest point.
// Outputs the push length (m) and the signed clearance s (m, less the allowance) before the push; s = 1e30 when
// no candidate is within reach, and then nothing moves.
float3 KisekaeSurfacePush(float3 p, uint v, float tightness, float softness, KisekaePushParams P, float reach,
                          float chord, out float push, out float s)
{
    return KisekaeCandidatePush(p, v, false, tightness, softness, P, reach, chord, push, s);
}

#ifdef KISEKAE_LOAD_SAMPLE_TRIANGLE
// The push of sample s at p (KisekaeSamplePoint; kisekae.fit.edge_lift): KisekaeSurfacePush against the sample's
// own candidates (KISEKAE_LOAD_SAMPLE_TRIANGLE), `chord` its sub-segment's rest length (m), the masks blended from its
// edge's ends. The engine stores pushed - p as the sample's lift (KISEKAE_LOAD_SAMPLE_LIFT of KisekaeEdgeLift).
float3 KisekaeSamplePush(float3 p, uint s, float tightness, float softness, KisekaePushParams P, float reach,
                         float chord, out float push, out float clearance)
{
    return KisekaeCandidatePush(p, s, true, tightness, softness, P, reach, chord, push, clearance);
}
#endif
#endif

#ifdef KISEKAE_LOAD_BODY_POSITION
// Curvature of the posed body along the edge from (xa, na) to (xb, nb), 1/m: |na - nb| / |xa - xb|, 0 on a
// zero-length edge (|xa - xb| <= 1e-9 m).
float KisekaeEdgeCurvature(float3 xa, float3 na, float3 xb, float3 nb)
{
    float dx = length(xa - xb);
    return dx > 1e-9 ? length(na - nb) / dx : 0.0; // zero-length edge; kisekae:guard
}
#endif

#if defined(KISEKAE_LOAD_BODY_FACE_RANGE) && defined(KISEKAE_LOAD_BODY_FACE)
#ifndef KISEKAE_LOAD_BODY_POSITION
#error "kisekae: KISEKAE_LOAD_BODY_FACE needs the posed body (KISEKAE_LOAD_BODY_POSITION / _NORMAL)"
#endif

// kv of body vertex i (1/m): the largest KisekaeEdgeCurvature over the edges of the triangles around it
// (KISEKAE_LOAD_BODY_FACE_RANGE / KISEKAE_LOAD_BODY_FACE); its own corner adds a zero-length edge, 0.
float KisekaeBodyCurvature(uint i)
{
    float3 x = KISEKAE_LOAD_BODY_POSITION(i);
    float3 n = KISEKAE_LOAD_BODY_NORMAL(i);
    uint2 range = KISEKAE_LOAD_BODY_FACE_RANGE(i);
    float kv = 0.0;
    for (uint e = range.x; e < range.x + range.y; e++)
    {
        uint3 t = KISEKAE_LOAD_BODY_FACE(e);
        kv = max(kv, KisekaeEdgeCurvature(x, n, KISEKAE_LOAD_BODY_POSITION(t.x), KISEKAE_LOAD_BODY_NORMAL(t.x)));
        kv = max(kv, KisekaeEdgeCurvature(x, n, KISEKAE_LOAD_BODY_POSITION(t.y), KISEKAE_LOAD_BODY_NORMAL(t.y)));
        kv = max(kv, KisekaeEdgeCurvature(x, n, KISEKAE_LOAD_BODY_POSITION(t.z), KISEKAE_LOAD_BODY_NORMAL(t.z)));
    }
    return kv;
}
#endif

// Carried correction (kisekae.fit.carry.carry_start): where this frame's first KisekaeSurfacePush starts. `skinned` is
// the garment vertex skinned this frame, `previousCorrection` the corrected minus skinned position (m) that the engine
// stored for it after the last pass of the previous frame (a per-vertex float3 buffer, zeros at the first frame or
// after a cut), `keep` in [0, 1] the share of it kept (kisekae: 0.9; 0 gives the stateless push). Starting next to
// the surface it was outside of last frame, the push keeps each vertex on its side of a fold.
float3 KisekaeCarryStart(float3 skinned, float3 previousCorrection, float keep)
{
    return skinned + keep * previousCorrection;
}

// Cap on the frame's finish (kisekae.fit.surface.clamp_step, surface_runtime's finish_step): `step` (m) is what an edge
// lift round or unflip pass asks of a vertex, `budget` (m) what is left of the vertex's finishStep this frame (the
// engine sets it to finishStep before the first lift round). Returns s * step with s = min(1, budget / |step|) and
// `left` = max(budget - |s * step|, 0), the budget for the next round; the pushes after the round are not capped.
float3 KisekaeClampStep(float3 step, float budget, out float left)
{
    float len = length(step);
    float s = 1.0;
    if (len > budget)
    {
        s = budget / max(len, 1e-30); // len > budget >= 0, so len > 0: the max only guards; kisekae:guard
    }
    left = max(budget - len * s, 0.0);
    return step * s;
}

#ifdef KISEKAE_LOAD_RING
#if !defined(KISEKAE_LOAD_RING_RANGE) || !defined(KISEKAE_LOAD_DISPLACEMENT)
#error "kisekae: KISEKAE_LOAD_RING needs KISEKAE_LOAD_RING_RANGE and KISEKAE_LOAD_DISPLACEMENT"
#endif

// One Jacobi pass of the one-ring smoothing for garment vertex v: its new displacement (m) from the previous
// pass's displacements (KISEKAE_LOAD_DISPLACEMENT). A vertex without neighbours keeps its displacement.
float3 KisekaeSmoothPush(uint v)
{
    float3 d = KISEKAE_LOAD_DISPLACEMENT(v);
    uint2 range = KISEKAE_LOAD_RING_RANGE(v);
    if (range.y == 0u) // no neighbours; kisekae:guard
    {
        return d;
    }
    float3 sum = float3(0.0, 0.0, 0.0);
    for (uint e = range.x; e < range.x + range.y; e++)
    {
        sum += KISEKAE_LOAD_DISPLACEMENT(KISEKAE_LOAD_RING(e));
    }
    float3 avg = sum / (float)range.y;
    return dot(avg, avg) > dot(d, d) ? 0.5 * (d + avg) : d;
}

#ifdef KISEKAE_LOAD_GARMENT_SKINNED
// kisekae.fit.surface.LIMIT_TIE: an edge is over its limit when longer than 1 + this times it, under its floor when
// shorter than 1 - this times it.
#define KISEKAE_LIMIT_TIE 1e-5

// The stretch limit's floor at garment vertex j: without the macro, none (edges shrink freely).
#ifndef KISEKAE_LOAD_SHORTEST
#define KISEKAE_LOAD_SHORTEST(j) 0.0
#endif

// One Jacobi pass of the stretch limit (kisekae.fit.surface.stretch_limit_numpy, Provot 1995) for garment vertex v:
// its new displacement (m) from the previous pass's displacements (KISEKAE_LOAD_DISPLACEMENT) and the skinned
// garment (KISEKAE_LOAD_GARMENT_SKINNED, m). Each one-ring edge longer than (1 + stretch) times its skinned length
// pulls v towards the neighbour by half the excess, and each edge shorter than its floor (KISEKAE_LOAD_SHORTEST of
// both ends, the smaller, times its skinned length) pushes v away by half the deficit; v moves by the mean of those
// corrections. `moved` tells whether any edge was out of its range (the engine then pushes v again:
// KisekaeSurfacePush has the last word).
float3 KisekaeStretchLimit(uint v, float stretch, out bool moved)
{
    float3 x = KISEKAE_LOAD_GARMENT_SKINNED(v);
    float3 d = KISEKAE_LOAD_DISPLACEMENT(v);
    float3 p = x + d;
    uint2 range = KISEKAE_LOAD_RING_RANGE(v);
    float3 sum = float3(0.0, 0.0, 0.0);
    uint count = 0u;
    for (uint e = range.x; e < range.x + range.y; e++)
    {
        uint j = KISEKAE_LOAD_RING(e);
        float3 xj = KISEKAE_LOAD_GARMENT_SKINNED(j);
        float3 dp = xj + KISEKAE_LOAD_DISPLACEMENT(j) - p;
        float len = length(dp);
        float skinned = length(xj - x);
        float rest = (1.0 + stretch) * skinned;
        float shortest = min(KISEKAE_LOAD_SHORTEST(v), KISEKAE_LOAD_SHORTEST(j)) * skinned;
        bool over = len > rest * (1.0 + KISEKAE_LIMIT_TIE);
        if (over || (len < shortest * (1.0 - KISEKAE_LIMIT_TIE) && len > 1e-12)) // len > 0: kisekae:guard
        {
            sum += (0.5 * (len - (over ? rest : shortest)) / len) * dp;
            count++;
        }
    }
    moved = count > 0u;
    return moved ? d + sum / (float)count : d;
}
#endif
#endif

#if defined(KISEKAE_LOAD_SAMPLE_ENDS) && defined(KISEKAE_LOAD_SAMPLE_WEIGHTS) \
    && defined(KISEKAE_LOAD_GARMENT_SKINNED) && defined(KISEKAE_LOAD_DISPLACEMENT)
// Sample s on the corrected garment (kisekae.fit.edge_lift.EdgeSamples.points): w.x p_a + w.y p_b + w.z p_c, the
// corners' positions being skinned plus displacement (m).
float3 KisekaeSamplePoint(uint s)
{
    uint3 ends = KISEKAE_LOAD_SAMPLE_ENDS(s);
    float3 w = KISEKAE_LOAD_SAMPLE_WEIGHTS(s);
    float3 pa = KISEKAE_LOAD_GARMENT_SKINNED(ends.x) + KISEKAE_LOAD_DISPLACEMENT(ends.x);
    float3 pb = KISEKAE_LOAD_GARMENT_SKINNED(ends.y) + KISEKAE_LOAD_DISPLACEMENT(ends.y);
    float3 pc = KISEKAE_LOAD_GARMENT_SKINNED(ends.z) + KISEKAE_LOAD_DISPLACEMENT(ends.z);
    return w.x * pa + w.y * pb + w.z * pc;
}
#endif

#if defined(KISEKAE_LOAD_VERTEX_SAMPLE_RANGE) && defined(KISEKAE_LOAD_VERTEX_SAMPLE) \
    && defined(KISEKAE_LOAD_SAMPLE_LIFT) && defined(KISEKAE_LOAD_SAMPLE_WEIGHTS)
// Least-motion share of a sample's lift at its corner c (kisekae.fit.edge_lift.EdgeSamples.shares): w_c / |w|^2,
// w the sample's barycentric weights (|w|^2 >= 1/3, no zero division); for an edge sample (1 - t) / ((1 - t)^2 + t^2)
// at end a and t / (...) at end b.
float KisekaeLiftShare(float3 w, uint c)
{
    float wc = c == 0u ? w.x : (c == 1u ? w.y : w.z);
    return wc / dot(w, w);
}

// The lift of garment vertex v (m; kisekae.fit.edge_lift._choose_numpy): the asks of the samples on its edges
// (KISEKAE_LOAD_VERTEX_SAMPLE(e) = 3 s + c over KISEKAE_LOAD_VERTEX_SAMPLE_RANGE(v); ask = share * fade * lift of
// s, fade = saturate(2 - |lift| / KISEKAE_LIFT_REACH), kisekae.fit.edge_lift.lift_fade: a sample deep in another
// part asks nothing) blended with weights |ask|^2; zero when none asks. The engine then runs one KisekaeSmoothPush
// pass over the lifts (kisekae.fit.edge_lift.LIFT_SMOOTH), adds them to the displacements and pushes again every vertex lifted
// by more than 1e-9 m (LIFT_EPS).
float3 KisekaeEdgeLift(uint v)
{
    uint2 range = KISEKAE_LOAD_VERTEX_SAMPLE_RANGE(v);
    float3 acc = float3(0.0, 0.0, 0.0);
    float total = 0.0;
    for (uint e = range.x; e < range.x + range.y; e++)
    {
        uint code = KISEKAE_LOAD_VERTEX_SAMPLE(e);
        uint s = code / 3u;
        float3 lift = KISEKAE_LOAD_SAMPLE_LIFT(s);
        float fade = saturate(2.0 - length(lift) / KISEKAE_LIFT_REACH);
        float3 ask = KisekaeLiftShare(KISEKAE_LOAD_SAMPLE_WEIGHTS(s), code % 3u) * fade * lift;
        float size = dot(ask, ask);
        acc += size * ask;
        total += size;
    }
    return total > 0.0 ? acc / total : float3(0.0, 0.0, 0.0); // nothing asked; kisekae:guard
}
#endif

#if defined(KISEKAE_LOAD_GARMENT_FACE_RANGE) && defined(KISEKAE_LOAD_GARMENT_FACE) \
    && defined(KISEKAE_LOAD_GARMENT_SKINNED) && defined(KISEKAE_LOAD_DISPLACEMENT)
// Share of a face's way back to its rigid target (kisekae.fit.unflip.turn_weights) from the cosine c between its
// corrected and skinned normals: saturate((turnStart - c) / turnStart); with turnStart 0, 1 where c <= 0.
float KisekaeTurnWeight(float c, float turnStart)
{
    if (turnStart <= 0.0)
    {
        return (float)(c <= 0.0);
    }
    return saturate((turnStart - c) / turnStart);
}

// One unflip pass for garment vertex v (kisekae.fit.unflip.unflip_numpy): its new displacement (m). Every face
// around it (KISEKAE_LOAD_GARMENT_FACE over KISEKAE_LOAD_GARMENT_FACE_RANGE(v), garment vertex ids) turned
// towards or past 90 degrees from its skinned normal pulls v towards the face's mean displacement, with the face's
// KisekaeTurnWeight; the pulls are summed and divided by the sum of weights where that exceeds 1. Faces of zero
// skinned area are left out; `moved` tells whether any face pulled (kisekae.fit.unflip.TURN_START = 0.05).
float3 KisekaeUnflip(uint v, float turnStart, out bool moved)
{
    float3 dv = KISEKAE_LOAD_DISPLACEMENT(v);
    uint2 range = KISEKAE_LOAD_GARMENT_FACE_RANGE(v);
    float3 acc = float3(0.0, 0.0, 0.0);
    float total = 0.0;
    for (uint e = range.x; e < range.x + range.y; e++)
    {
        uint3 f = KISEKAE_LOAD_GARMENT_FACE(e);
        float3 xi = KISEKAE_LOAD_GARMENT_SKINNED(f.x);
        float3 xj = KISEKAE_LOAD_GARMENT_SKINNED(f.y);
        float3 xk = KISEKAE_LOAD_GARMENT_SKINNED(f.z);
        float3 di = KISEKAE_LOAD_DISPLACEMENT(f.x);
        float3 dj = KISEKAE_LOAD_DISPLACEMENT(f.y);
        float3 dk = KISEKAE_LOAD_DISPLACEMENT(f.z);
        float3 ns = cross(xj - xi, xk - xi);
        float3 na = cross((xj + dj) - (xi + di), (xk + dk) - (xi + di));
        float ls = length(ns);
        float la = length(na);
        if (ls <= 0.0) // degenerate when skinned: left alone; kisekae:guard
        {
            continue;
        }
        float c = la > 0.0 ? dot(ns, na) / (ls * la) : 0.0; // collapsed face: c = 0; kisekae:guard
        float w = KisekaeTurnWeight(c, turnStart);
        acc += w * ((di + dj + dk) / 3.0 - dv);
        total += w;
    }
    moved = total > 0.0;
    return dv + acc / max(total, 1.0);
}
#endif

#endif // KISEKAE_SURFACE_HLSL
