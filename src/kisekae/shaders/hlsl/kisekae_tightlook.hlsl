// kisekae_tightlook.hlsl - the skin's "tight look" where a garment presses on it: normal, AO and SSS.
//
// Part of the kisekae shader core (include kisekae_core.hlsl). Geometry is not changed; the skin's
// fragment shader calls KisekaeTightLook. Reference: kisekae.shaders.reference.tight_look.
//   k   = saturate(max(tightness, pressure))            (garment tightness mask, body pressure map)
//   N'  = normalize(N - normalStrength k (D - (D.N) N)) (tilt towards the dent; D points up the slope,
//                                                       e.g. the pressure gradient; zero = no tilt)
//   ao' = saturate(ao (1 - aoStrength k))               (ao = visibility, 1 = unoccluded)
//   sss'= saturate(sss (1 - sssStrength k))             (pressed tissue scatters less)
#ifndef KISEKAE_TIGHTLOOK_HLSL
#define KISEKAE_TIGHTLOOK_HLSL

struct KisekaeTightParams
{
    float normalStrength;  // tilt of the normal at full tightness (0..1), default 0.15
    float aoStrength;      // AO darkening at full tightness (0..1), default 0.3
    float sssStrength;     // SSS reduction at full tightness (0..1), default 0.25
};

void KisekaeTightLook(inout float3 normal, inout float ao, inout float sss, float3 dentDir,
                      float tightness, float pressure, KisekaeTightParams P)
{
    float k = saturate(max(tightness, pressure));
    float3 tangential = dentDir - dot(dentDir, normal) * normal;
    normal = normalize(normal - (P.normalStrength * k) * tangential);
    ao = saturate(ao * (1.0 - P.aoStrength * k));
    sss = saturate(sss * (1.0 - P.sssStrength * k));
}

#endif // KISEKAE_TIGHTLOOK_HLSL
