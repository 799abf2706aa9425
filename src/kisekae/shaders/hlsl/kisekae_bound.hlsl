// kisekae_bound.hlsl - skin-bound push-out: keep each garment vertex's clearance from its own skin point.
//
// Part of the kisekae shader core (include kisekae_core.hlsl); port of kisekae.fit.bound.push_out_bound.
// Offline (kisekae.fit.bound.bind_to_skin), every garment vertex is bound to its closest rest-pose body
// point: a body triangle (corners i, j, k) and barycentrics (u, v, w), stored as vertex attributes.
// Per frame, from the posed body vertices x and their posed normals n:
//   b   = u x_i + v x_j + w x_k                      (the bound skin point, m)
//   n_b = normalize(u n_i + v n_j + w n_k)           (its outward normal)
//   s   = (p - b) . n_b                              (signed clearance, m)
//   the push law of kisekae_pushout.hlsl with d = s, along n_b (skirt bias included).
// KisekaeSkinPushOut is the runtime mode (kisekae.fit.bound.push_out_runtime): capsule push first (contacts
// between different body parts, such as thigh against belly, which the binding cannot see), then the bound
// clearance of the capsule-pushed position, the total displacement capped at maxPush. Units are metres;
// positions in the body's (posed) space.
#ifndef KISEKAE_BOUND_HLSL
#define KISEKAE_BOUND_HLSL

// Pushed position of garment vertex p from its bound triangle's posed corners x0..x2 (m) and posed unit
// normals n0..n2, with barycentrics bary (sum 1). Outputs the push length (m) and the clearance s (m)
// before the push. Vertices with s >= margin are returned unchanged.
float3 KisekaeBoundPushOut(float3 p, float3 x0, float3 x1, float3 x2, float3 n0, float3 n1, float3 n2, float3 bary,
                           float tightness, float softness, KisekaePushParams P, out float push, out float s)
{
    float3 b = bary.x * x0 + bary.y * x1 + bary.z * x2;
    float3 nb = bary.x * n0 + bary.y * n1 + bary.z * n2;
    float3 n = KisekaeDirectionOr(nb, nb); // zero stays zero; kisekae:guard
    s = dot(p - b, n);
    push = KisekaePushAmount(s, tightness, softness, P);
    if (push <= 0.0 || dot(n, n) <= 0.0) // kisekae:guard
    {
        push = 0.0;
        return p;
    }
    return p + push * KisekaePushDirection(n, P);
}

// The body follow (kisekae.fit.body_follow): the outward part of what the body does beyond plain skinning
// (correctives, joint planes, volume bulge) at a garment vertex's bound point, added to the skinned garment where the
// per-frame push starts. d0..d2: the bound triangle's corners' posed minus plain-skinned positions (m); n0..n2: their
// posed unit normals; bary: the binding's barycentrics; share: the vertex's share from its rest clearance (1 within
// 2 cm, 0 from 6 cm: kisekae.fit.body_follow.follow_weights, baked per vertex).
//   follow = share * sum_k bary_k max(0, d_k . n_k) n_k
float3 KisekaeBodyFollow(float3 d0, float3 d1, float3 d2, float3 n0, float3 n1, float3 n2, float3 bary, float share)
{
    float3 f = bary.x * max(0.0, dot(d0, n0)) * n0 + bary.y * max(0.0, dot(d1, n1)) * n1
             + bary.z * max(0.0, dot(d2, n2)) * n2;
    return share * f;
}

#if defined(KISEKAE_LOAD_FOLLOW_CORNERS) && defined(KISEKAE_LOAD_BODY_BEYOND) && defined(KISEKAE_LOAD_BODY_NORMAL)
// KisekaeBodyFollow of garment vertex v from the engine's buffers: its baked binding (the surface bake's followCorners,
// followBary and followShare: KISEKAE_LOAD_FOLLOW_CORNERS(v) uint3 body vertex ids, KISEKAE_LOAD_FOLLOW_WEIGHTS(v)
// float4 (bary, share)), the body's displacement beyond plain skinning KISEKAE_LOAD_BODY_BEYOND(i) (posed minus
// plain-skinned, m) and the posed body's unit normals KISEKAE_LOAD_BODY_NORMAL(i).
float3 KisekaeBodyFollowLoad(uint v)
{
    uint3 c = KISEKAE_LOAD_FOLLOW_CORNERS(v);
    float4 w = KISEKAE_LOAD_FOLLOW_WEIGHTS(v);
    return KisekaeBodyFollow(KISEKAE_LOAD_BODY_BEYOND(c.x), KISEKAE_LOAD_BODY_BEYOND(c.y), KISEKAE_LOAD_BODY_BEYOND(c.z),
                             KISEKAE_LOAD_BODY_NORMAL(c.x), KISEKAE_LOAD_BODY_NORMAL(c.y), KISEKAE_LOAD_BODY_NORMAL(c.z),
                             w.xyz, w.w);
}
#endif

#ifdef KISEKAE_LOAD_BODY_POSITION
// KisekaeBoundPushOut with the posed body read through KISEKAE_LOAD_BODY_POSITION / _NORMAL(vertex id).
float3 KisekaeBoundPushOutLoad(float3 p, uint3 corners, float3 bary, float tightness, float softness,
                               KisekaePushParams P, out float push, out float s)
{
    return KisekaeBoundPushOut(p,
        KISEKAE_LOAD_BODY_POSITION(corners.x), KISEKAE_LOAD_BODY_POSITION(corners.y),
        KISEKAE_LOAD_BODY_POSITION(corners.z),
        KISEKAE_LOAD_BODY_NORMAL(corners.x), KISEKAE_LOAD_BODY_NORMAL(corners.y), KISEKAE_LOAD_BODY_NORMAL(corners.z),
        bary, tightness, softness, P, push, s);
}

// The runtime push-out of kisekae.fit.bound.push_out_runtime: capsule field first, then the bound clearance of
// the capsule-pushed position, then the total displacement capped at maxPush (scaled along itself).
// Outputs the push lengths (m; x = capsule step, y = bound step, z = total displacement after the cap), the
// capsule field distance d before the push and the bound clearance s after the capsule step (m).
float3 KisekaeSkinPushOut(float3 p, uint3 corners, float3 bary, float tightness, float softness, KisekaePushParams P,
                          out float3 push, out float d, out float s)
{
    float pushCapsule;
    float pushBound;
    float3 q = KisekaePushOut(p, tightness, softness, P, pushCapsule, d);
    q = KisekaeBoundPushOutLoad(q, corners, bary, tightness, softness, P, pushBound, s);
    float3 disp = q - p;
    float total = length(disp);
    if (total > P.maxPush)
    {
        q = p + disp * (P.maxPush / total);
        total = P.maxPush;
    }
    push = float3(pushCapsule, pushBound, total);
    return q;
}
#endif

#endif // KISEKAE_BOUND_HLSL
