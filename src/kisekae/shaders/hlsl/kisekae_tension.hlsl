// kisekae_tension.hlsl - cgvirus "Tension Map" (Blender 4.5+) mapping from the edge ratio T to compress/stretch.
//
// Part of the kisekae shader core (include kisekae_core.hlsl). The ratio T_i = mean rest edge length /
// mean deformed edge length over vertex i's edges is computed on the CPU (kisekae.tension) or in a
// compute pass; this file maps it exactly as the node group does.
#ifndef KISEKAE_TENSION_HLSL
#define KISEKAE_TENSION_HLSL

struct KisekaeTensionParams
{
    float falloff;       // F, overall gain (node default 1)
    float stretchArea;   // S, how far below T = 1 stretch starts to show (default 1)
    float compressArea;  // C, how far above T = 1 compression starts to show (default 1)
    float weightLimit;   // W, the colour is multiplied by clamp(W, 0, 1) (default 1)
};

struct KisekaeTension
{
    float compress;      // 0..1, red channel of the Tension Map colour ("Compress Map")
    float stretch;       // 0..1, green channel ("Stretch Map"); blue is 0
};

// Blender's smooth minimum (Math node SMOOTH_MIN) for k > 0: min(x, y) - h^3 k / 6, h = max(k - |x - y|, 0) / k.
// (Blender returns the plain minimum for k = 0; the node group only uses k = 1.)
float KisekaeBlenderSmoothMin(float x, float y, float k)
{
    float h = max(k - abs(x - y), 0.0) / k;
    return min(x, y) - h * h * h * k / 6.0;
}

// Blender's smooth maximum (Math node SMOOTH_MAX) = -smin(-x, -y, k), k > 0.
float KisekaeBlenderSmoothMax(float x, float y, float k)
{
    return -KisekaeBlenderSmoothMin(-x, -y, k);
}

// Blender's Map Range SMOOTHSTEP onto 0..1: (3 - 2t) t^2, t = clamp((x - e0) / (e1 - e0), 0, 1);
// Blender's safe division makes t = 0 when e1 == e0.
float KisekaeMapRangeSmoothstep(float x, float e0, float e1)
{
    float span = e1 - e0;
    float t = span != 0.0 ? clamp((x - e0) / span, 0.0, 1.0) : 0.0;
    return (3.0 - 2.0 * t) * t * t;
}

// The node group's mapping of the ratio T (rest / deformed mean edge length), as kisekae.tension.blender.map_ratio:
// stretch = clamp(F (1 - smoothstep(a, 1, T)), 0, 1) W', compress = clamp(F (1 - smoothstep(b, 1, T)), 0, 1) W'
// with a = smin(S, 1, 1), b = smax(1 / max(C, 0.001), 1, 1), W' = clamp(W, 0, 1). Both channels are the same node
// chain (Map Range From Min a or b, From Max 1), so a collapsed ramp (S >= 2, or C > ~141 where b rounds to 1)
// gives clamp(F) W' everywhere.
KisekaeTension KisekaeTensionFromRatio(float ratio, KisekaeTensionParams P)
{
    float a = KisekaeBlenderSmoothMin(P.stretchArea, 1.0, 1.0);
    float b = KisekaeBlenderSmoothMax(1.0 / max(P.compressArea, 0.001), 1.0, 1.0);
    KisekaeTension o;
    float w = saturate(P.weightLimit);
    o.stretch = saturate(P.falloff * (1.0 - KisekaeMapRangeSmoothstep(ratio, a, 1.0))) * w;
    o.compress = saturate(P.falloff * (1.0 - KisekaeMapRangeSmoothstep(ratio, b, 1.0))) * w;
    return o;
}

#endif // KISEKAE_TENSION_HLSL
