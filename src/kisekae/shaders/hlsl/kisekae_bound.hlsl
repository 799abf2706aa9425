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
