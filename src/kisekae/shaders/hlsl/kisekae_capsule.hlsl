// kisekae_capsule.hlsl - signed distance of a field of tapered capsules, analytic gradient, smooth union.
//
// Part of the kisekae shader core (include kisekae_core.hlsl, not this file). Units are metres.
// A capsule is the convex hull of two spheres (a, r0) and (b, r1) ("round cone"). All positions must be in
// one space (world or object); the engine transforms the bone-space rig with the posed bone matrices.
//
// Data access: before including the core, define
//   KISEKAE_CAPSULE_COUNT        uint expression, number of capsules
//   KISEKAE_LOAD_CAPSULE(i)      KisekaeCapsule for capsule i (0 <= i < count)
// kisekae_source_*.hlsl provide these for constant arrays, a float texture or a structured buffer.
#ifndef KISEKAE_CAPSULE_HLSL
#define KISEKAE_CAPSULE_HLSL

struct KisekaeCapsule
{
    float3 a;   // first end centre (m)
    float r0;   // radius at a (m)
    float3 b;   // second end centre (m)
    float r1;   // radius at b (m)
};

// Capsule from two packed float4 (xyz = centre, w = radius), the layout every data source uses.
KisekaeCapsule KisekaeMakeCapsule(float4 aR0, float4 bR1)
{
    KisekaeCapsule c;
    c.a = aR0.xyz;
    c.r0 = aR0.w;
    c.b = bR1.xyz;
    c.r1 = bR1.w;
    return c;
}

// Unit vector perpendicular to the unit vector axis (used only when a point lies exactly on an axis):
// normalize(cross(axis, helper)), helper = X unless |axis.x| >= 0.9, then Y (as kisekae.fit.sdf).
float3 KisekaePerpendicular(float3 axis)
{
    float3 helper = abs(axis.x) < 0.9 ? float3(1.0, 0.0, 0.0) : float3(0.0, 1.0, 0.0); // kisekae:guard
    return normalize(cross(axis, helper));
}

// Unit direction of v, or fallback when v is the zero vector.
float3 KisekaeDirectionOr(float3 v, float3 fallback)
{
    float len = length(v);
    return len > 0.0 ? v / len : fallback; // kisekae:guard
}

// Signed distance (m, negative inside) from p to one tapered capsule, and its unit gradient.
// This is the exact Euclidean signed distance of the round cone (kisekae.fit.sdf.capsule_distance):
// with axis u, length L, s = (r0 - r1) / L, co = sqrt(1 - s^2), axial x = (p - a).u, radial y, the side
// coordinate h = x co - y s picks sphere a (h < 0), sphere b (h > L co) or the cone side.
// Gradient fallbacks: -u at the centre a, +u at the centre b, a fixed perpendicular on the axis.
// Outside the reference's domain (one end sphere inside the other, or a == b) the hull is the bigger
// sphere; engines never get such capsules from kisekae, this only keeps bad data finite.
float KisekaeCapsuleDistance(float3 p, KisekaeCapsule c, out float3 grad)
{
    float3 ba = c.b - c.a;
    float len = length(ba);
    float dr = c.r0 - c.r1;
    if (abs(dr) >= len)
    {
        bool firstBigger = dr >= 0.0;
        float3 pc = p - (firstBigger ? c.a : c.b);
        grad = KisekaeDirectionOr(pc, float3(0.0, 1.0, 0.0)); // kisekae:guard
        return length(pc) - (firstBigger ? c.r0 : c.r1);
    }
    float3 axis = ba / len;
    float3 pa = p - c.a;
    float x = dot(pa, axis);                 // axial coordinate
    float3 radial = pa - x * axis;
    float y = length(radial);                // distance from the axis
    float s = dr / len;                      // sine of the side's tilt
    float co = sqrt(1.0 - s * s);            // its cosine
    float h = x * co - y * s;                // position along the side line in the (x, y) half plane
    if (h < 0.0)
    {
        grad = KisekaeDirectionOr(pa, -axis);
        return length(pa) - c.r0;
    }
    if (h > len * co)
    {
        float3 pb = p - c.b;
        grad = KisekaeDirectionOr(pb, axis);
        return length(pb) - c.r1;
    }
    float3 e = y > 0.0 ? radial / y : KisekaePerpendicular(axis); // kisekae:guard
    grad = s * axis + co * e;
    return x * s + y * co - c.r0;
}

// Signed distance (m) of the capsule union at p, its gradient, and the index of the nearest capsule
// (kisekae.fit.sdf.capsule_field). smoothK (m) = 0: hard minimum (first capsule wins ties).
// smoothK > 0: start from the nearest capsule (f = dmin, G = its gradient), then fold every other capsule
// i with d_i < dmin + k, in index order: h = max(0, 1 - (d_i - f) / k), G = (1 - h/2) G + (h/2) g_i,
// f -= k h^2 / 4; finally f = max(f, dmin - k/2) (G = nearest gradient when clamped). The gradient is
// not renormalised. With no capsules the distance is +infinity.
float KisekaeCapsuleField(float3 p, float smoothK, out float3 grad, out uint nearest)
{
    nearest = 0u;
    uint count = KISEKAE_CAPSULE_COUNT;
    if (count == 0u)
    {
        grad = float3(0.0, 1.0, 0.0); // kisekae:guard
        return asfloat(0x7f800000u); // +infinity; kisekae:guard
    }
    float dmin = KisekaeCapsuleDistance(p, KISEKAE_LOAD_CAPSULE(0u), grad);
    [loop]
    for (uint i = 1u; i < count; ++i)
    {
        float3 gi;
        float di = KisekaeCapsuleDistance(p, KISEKAE_LOAD_CAPSULE(i), gi);
        if (di < dmin)
        {
            dmin = di;
            grad = gi;
            nearest = i;
        }
    }
    if (smoothK <= 0.0)
    {
        return dmin;
    }
    float f = dmin;
    float3 g = grad;
    [loop]
    for (uint j = 0u; j < count; ++j)
    {
        float3 gj;
        float dj = KisekaeCapsuleDistance(p, KISEKAE_LOAD_CAPSULE(j), gj);
        if (j != nearest && dj < dmin + smoothK)
        {
            float h = max(0.0, 1.0 - (dj - f) / smoothK);
            g = (1.0 - 0.5 * h) * g + (0.5 * h) * gj;
            f -= 0.25 * smoothK * h * h;
        }
    }
    if (f < dmin - 0.5 * smoothK)
    {
        return dmin - 0.5 * smoothK;
    }
    grad = g;
    return f;
}

#endif // KISEKAE_CAPSULE_HLSL
