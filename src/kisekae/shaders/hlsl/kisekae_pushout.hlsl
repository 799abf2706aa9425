// kisekae_pushout.hlsl - push garment vertices out of the capsule field (the push law of kisekae.fit.pushout).
//
// Part of the kisekae shader core (include kisekae_core.hlsl). Units are metres; masks are 0..1.
// Per vertex with field distance d and outward direction n:
//   d >= margin: no move.
//   s = stiffness (1 - tightness / 2), gap g = s margin.
//   d < 0 (inside): push = g - d (penetration always resolved).
//   0 <= d < margin: push = g phi(1 - d / margin), phi(x) = (1 - softness) x + softness x^2.
//   skirt bias b: push *= 1 + b, n = normalize(n + b n_h) with n_h the part of n perpendicular to up.
//   push = min(push, maxPush); the vertex moves by push n.
#ifndef KISEKAE_PUSHOUT_HLSL
#define KISEKAE_PUSHOUT_HLSL

struct KisekaePushParams
{
    float margin;      // minimum clearance from the body (m), default 0.002
    float stiffness;   // 0..1, default 0.5
    float maxPush;     // cap on the displacement (m), default 0.10; >= margin
    float skirtBias;   // 0..1 horizontal bulge for skirts, default 0
    float smoothK;     // smooth-union width of the capsule field (m), default 0
    float3 up;         // world up (unit), glTF: (0, 1, 0)
};

// Push length (m) along the push direction for field distance d (m); the masks are 0..1.
float KisekaePushAmount(float d, float tightness, float softness, KisekaePushParams P)
{
    if (d >= P.margin)
    {
        return 0.0;
    }
    float gap = P.stiffness * (1.0 - 0.5 * tightness) * P.margin;
    float amount;
    if (d < 0.0)
    {
        amount = gap - d;
    }
    else
    {
        float x = 1.0 - d / P.margin;
        amount = gap * ((1.0 - softness) * x + softness * x * x);
    }
    amount *= 1.0 + P.skirtBias;
    return min(amount, P.maxPush);
}

// Push direction from the field gradient: normalized, then biased sideways for skirts.
float3 KisekaePushDirection(float3 grad, KisekaePushParams P)
{
    float3 n = normalize(grad);
    if (P.skirtBias > 0.0)
    {
        float3 horizontal = n - dot(n, P.up) * P.up;
        n = normalize(n + P.skirtBias * horizontal);
    }
    return n;
}

// Pushed position of garment vertex p (m, capsule space). Outputs the push length (m) and the field
// distance before the push (m). Vertices at or beyond the margin are returned unchanged.
float3 KisekaePushOut(float3 p, float tightness, float softness, KisekaePushParams P, out float push, out float d)
{
    float3 grad;
    uint nearest;
    d = KisekaeCapsuleField(p, P.smoothK, grad, nearest);
    push = KisekaePushAmount(d, tightness, softness, P);
    if (push <= 0.0 || dot(grad, grad) <= 0.0) // kisekae:guard
    {
        push = 0.0;
        return p;
    }
    return p + push * KisekaePushDirection(grad, P);
}

#endif // KISEKAE_PUSHOUT_HLSL
