// kisekae_tightlook.hlsl - the skin's "tight look" where a garment presses on it: normal, AO and SSS.
//
// Part of the kisekae shader core (include kisekae_core.hlsl). Geometry is not changed; the skin's
// fragment shader calls KisekaeTightLook. Reference: kisekae.fit.pressure.tight_look.
//   k   = saturate(max(tightness, pressure))            (garment tightness mask, body pressure map)
//   N   = normalize(N)                                  (interpolated normals need not be unit)
//   N'  = normalize(N - normalStrength k (D - (D.N) N)) (tilt towards the dent; D points up the slope,
//                                                       kisekae.fit.pressure.dent_directions; zero = no tilt)
//   ao' = saturate(ao (1 - aoStrength k))               (ao = visibility, 1 = unoccluded)
//   sss'= saturate(sss (1 - sssStrength k))             (pressed tissue scatters less)
#ifndef KISEKAE_TIGHTLOOK_HLSL
#define KISEKAE_TIGHTLOOK_HLSL

struct KisekaeTightParams
{
    float normalStrength;  // tilt of the normal at full tightness (0..1), preset "seed" 0.15
    float aoStrength;      // AO darkening at full tightness (0..1), preset "seed" 0.30
    float sssStrength;     // SSS reduction at full tightness (0..1), preset "seed" 0.25
};

// The strength presets of kisekae.fit.pressure.PRESETS.
#define KISEKAE_TIGHT_SEED 0u
#define KISEKAE_TIGHT_ANIME 1u
#define KISEKAE_TIGHT_REALISTIC 2u

KisekaeTightParams KisekaeTightPreset(uint preset)
{
    KisekaeTightParams P;
    if (preset == KISEKAE_TIGHT_ANIME)
    {
        P.normalStrength = 0.35;
        P.aoStrength = 0.45;
        P.sssStrength = 0.40;
    }
    else if (preset == KISEKAE_TIGHT_REALISTIC)
    {
        P.normalStrength = 0.08;
        P.aoStrength = 0.12;
        P.sssStrength = 0.30;
    }
    else
    {
        P.normalStrength = 0.15;
        P.aoStrength = 0.30;
        P.sssStrength = 0.25;
    }
    return P;
}

// Apply the tight look to a skin sample: normal (need not be unit; returned unit), ao (visibility) and
// sss in 0..1, dentDir (up the dent's slope, tangential part used), tightness and pressure in 0..1.
void KisekaeTightLook(inout float3 normal, inout float ao, inout float sss, float3 dentDir,
                      float tightness, float pressure, KisekaeTightParams P)
{
    float k = saturate(max(tightness, pressure));
    normal = normalize(normal);
    float3 tangential = dentDir - dot(dentDir, normal) * normal;
    normal = normalize(normal - (P.normalStrength * k) * tangential);
    ao = saturate(ao * (1.0 - P.aoStrength * k));
    sss = saturate(sss * (1.0 - P.sssStrength * k));
}

#endif // KISEKAE_TIGHTLOOK_HLSL
