// kisekae_contact.hlsl - the body's joint-plane contact, a per-vertex step after skinning (body vertex stage).
//
// Part of the kisekae shader core (include kisekae_core.hlsl); port of kisekae.avatar.contact.contact_planes.
// For each joint whose two bones share a blend ring, the contact surface of a bend is the plane through the
// posed joint centre c whose normal n bisects the joint's rest normal d carried by the child and by the
// parent bone (d: the child's rest direction, or the bisector of both bones' rest directions at a joint bent at
// rest, kisekae.avatar.contact.rest_normal), and the joint's reach in ring radii for this bend (computed per frame on the CPU,
// kisekae.avatar.contact.JointPlanes.posed: reach = clip(2 / |R_c d + R_p d|, ringFactor, maxReach), 0 when
// folded flat). A body vertex keeps to its side (side = +1 child, -1 parent) of each of its (at most four)
// joints, in ascending joint order:
//   s      = side * dot(p - c, n)                           signed distance, + on its own side (m)
//   sRest  = side * dot(pRest - cRest, dRest)               the same at rest
//   off    = sqrt(max(|pRest - cRest|^2 - dot(pRest - cRest, dRest)^2, 0))   distance from the joint's rest axis
//   fade   = min(saturate((reach r - |pRest - cRest|) / ((ringFactor - 1) r)),
//                saturate((1.25 flesh - off) / (0.25 flesh)))
//   t      = min(gap / 2, sRest - band - restSlack) - (1 - fade) r
//   if fade > 0 and s < t + band:  p += side * (t + band * exp((s - t - band) / band) - s) * n
// The map is increasing and moves one joint's vertices along one direction; the rest pose is unchanged.
// Units are metres; positions in the body's (posed) space.
#ifndef KISEKAE_CONTACT_HLSL
#define KISEKAE_CONTACT_HLSL

struct KisekaeJointPlane
{
    float3 centre;      // posed joint centre (m)
    float reach;        // reach this frame in ring radii; 0 when the joint is folded flat (the plane is undefined)
    float3 normal;      // posed unit plane normal
    float radius;       // ring radius (m)
    float3 restCentre;  // rest joint centre (m)
    float flesh;        // radial reach (m): vertices farther than 1.25 flesh from the rest axis d are left alone
    float3 restDir;     // unit rest normal d of the joint's plane (the child's direction or the rest bisector)
};

struct KisekaeContactParams
{
    float gap;          // room left between the two sides (m)
    float band;         // width of the smooth map (m), > 0
    float ringFactor;   // reach of a joint in ring radii in mild bends, > 1 (the fade spans the last ringFactor - 1)
    float restSlack;    // metres kept between the rest distance and the target (1e-9)
};

// The parameters from one float4: gap (m), band (m), ringFactor, restSlack (m), as the data sources store them.
KisekaeContactParams KisekaeMakeContactParams(float4 v)
{
    KisekaeContactParams C;
    C.gap = v.x;
    C.band = v.y;
    C.ringFactor = v.z;
    C.restSlack = v.w;
    return C;
}

// One joint's contact for body vertex p (rest position pRest) on side `side` (+1 / -1).
float3 KisekaeContactPlane(float3 p, float3 pRest, float side, KisekaeJointPlane J, KisekaeContactParams C)
{
    if (J.reach == 0.0 || side == 0.0) // kisekae:guard
    {
        return p;
    }
    float s = dot(p - J.centre, J.normal) * side;
    float3 dr = pRest - J.restCentre;
    float along = dot(dr, J.restDir);
    float sRest = along * side;
    float dist2 = dot(dr, dr);
    float dist = sqrt(dist2);
    float fade = saturate((J.reach * J.radius - dist) / ((C.ringFactor - 1.0) * J.radius));
    float off = sqrt(max(dist2 - along * along, 0.0));
    fade = min(fade, saturate((1.25 * J.flesh - off) / (0.25 * J.flesh)));
    if (fade <= 0.0)
    {
        return p;
    }
    float t = min(0.5 * C.gap, sRest - C.band - C.restSlack) - (1.0 - fade) * J.radius;
    if (s < t + C.band)
    {
        float mapped = t + C.band * exp((s - t - C.band) / C.band); // the exponent is negative here
        p += ((mapped - s) * side) * J.normal;
    }
    return p;
}

#ifdef KISEKAE_LOAD_JOINT_PLANE
// A vertex's four joint slots: ids in ascending order, sides +1 / -1, and side 0 (with any valid id, e.g. 0) for
// an unused slot. The joint data come from the statement macro KISEKAE_LOAD_JOINT_PLANE(id, J), which fills the
// KisekaeJointPlane J of joint id (a data source defines it; the table is updated per frame from
// kisekae.avatar.contact.JointPlanes.posed).
float3 KisekaeContactPlanes(float3 p, float3 pRest, uint4 joints, float4 sides, KisekaeContactParams C)
{
    KisekaeJointPlane J;
    KISEKAE_LOAD_JOINT_PLANE(joints.x, J);
    p = KisekaeContactPlane(p, pRest, sides.x, J, C);
    KISEKAE_LOAD_JOINT_PLANE(joints.y, J);
    p = KisekaeContactPlane(p, pRest, sides.y, J, C);
    KISEKAE_LOAD_JOINT_PLANE(joints.z, J);
    p = KisekaeContactPlane(p, pRest, sides.z, J, C);
    KISEKAE_LOAD_JOINT_PLANE(joints.w, J);
    p = KisekaeContactPlane(p, pRest, sides.w, J, C);
    return p;
}
#endif

#endif // KISEKAE_CONTACT_HLSL
