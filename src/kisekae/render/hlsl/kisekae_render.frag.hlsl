// kisekae_render.frag.hlsl - fragment stage of the kisekae Python renderer (kisekae.render).
//
// Effects come from the shader core: the skin's tight look (KisekaeTightLook: normal tilt down the
// pressure slope, AO and SSS loss), the Tension Map colours (KisekaeTensionFromRatio, when the mesh
// carries the ratio T) and the wound morph parameter from the vertex stage. This file adds only what
// a picture needs around them: lights, toon bands, rim, a procedural wrinkle normal pattern blended by
// compression, heat-map colours and sRGB output.
//
// Feature switches (0/1; the renderer compiles one variant per combination it draws, because a software
// rasterizer such as llvmpipe runs both sides of every branch):
//   KISEKAE_RENDER_MAP      heat-map / Tension Map colours (kinds 3, 4)
//   KISEKAE_RENDER_DENT     the core's tight look (the mesh has tightness or pressure)
//   KISEKAE_RENDER_WRINKLE  the wrinkle normal blend (the mesh has compression; weight from KisekaeWrinkleWeights)
//   KISEKAE_RENDER_RATIO    the core's Tension Map from the ratio T (the mesh has T)
//   KISEKAE_RENDER_WOUND    wound tint by the morph parameter p
//   KISEKAE_RENDER_TOON     toon bands / contrast exponent (the anime look)
#ifndef KISEKAE_RENDER_MAP
#define KISEKAE_RENDER_MAP 1
#endif
#ifndef KISEKAE_RENDER_DENT
#define KISEKAE_RENDER_DENT 1
#endif
#ifndef KISEKAE_RENDER_WRINKLE
#define KISEKAE_RENDER_WRINKLE 1
#endif
#ifndef KISEKAE_RENDER_RATIO
#define KISEKAE_RENDER_RATIO 1
#endif
#ifndef KISEKAE_RENDER_WOUND
#define KISEKAE_RENDER_WOUND 1
#endif
#ifndef KISEKAE_RENDER_TOON
#define KISEKAE_RENDER_TOON 1
#endif
#define KISEKAE_NO_DATA
#include "kisekae_core.hlsl"

cbuffer KisekaeRenderPixel : register(b1)
{
    float4 _Base;       // rgb = base colour (linear 0..1), a = material kind (0 skin, 1 cloth, 2 wire, 3 heat, 4 tension)
    float4 _Eye;        // xyz = camera position (m), w = 1 to light heat-map/tension colours
    float4 _KeyDir;     // xyz = unit direction towards the key light, w = toon bands (0 = smooth)
    float4 _FillDir;    // xyz = unit direction towards the fill light, w = contrast exponent
    float4 _Tight;      // core tight look: normalStrength, aoStrength, sssStrength; w = dent depth (m)
    float4 _Look;       // SSS amount, rim strength, specular strength, wrinkle height at compress 1 (m)
    float4 _Wrinkle;    // wrinkle ridges per metre, 1 = tension from the ratio T, heat range lo, hi
    float4 _Tension;    // core tension params: falloff, stretchArea, compressArea, weightLimit
    float4 _WoundColor; // rgb = wound colour at p = 1 (linear), a = AO loss at p = 1
    float4 _WrinkleMap; // core wrinkle weight of the (procedural) compress-driven map: threshold, gain; zw unused
};

Texture2D<float4> _Colormap : register(t0);      // 256 x 1 heat-map colours
SamplerState _ColormapSampler : register(s0);

struct PixelIn
{
    float3 world : TEXCOORD0;
    float3 normal : TEXCOORD1;
    float4 look : TEXCOORD2;
    float4 extra : TEXCOORD3;
    bool front : SV_IsFrontFace;
};

float3 ToLinear(float3 c) { return pow(max(c, 0.0), 2.2); }
float3 ToSrgb(float3 c) { return pow(saturate(c), 1.0 / 2.2); }

// World-space surface gradient of a scalar h interpolated over the triangle (no tangent frame).
float3 SurfaceGradient(float3 n, float3 dpdx, float3 dpdy, float dhdx, float dhdy)
{
    float3 r1 = cross(dpdy, n);
    float3 r2 = cross(n, dpdx);
    float det = dot(dpdx, r1);
    if (abs(det) < 1e-20)
    {
        return float3(0.0, 0.0, 0.0);
    }
    return (dhdx * r1 + dhdy * r2) / det;
}

// Procedural wrinkle height in -1..1: ridges across the vertical axis, warped so that they read as folds.
float WrinklePattern(float3 p, float freq)
{
    float k = 6.2831853 * freq;
    float warp = 0.35 * sin(0.37 * k * p.x + 1.3) + 0.25 * sin(0.29 * k * p.z + 0.4);
    return sin(k * p.y + 3.0 * warp);
}

float Toon(float x, float bands, float width)
{
    if (bands < 0.5)
    {
        return x;
    }
    float q = x * bands;
    float w = max(width * bands, 1e-4);
    return (floor(q) + smoothstep(0.5 - w, 0.5 + w, frac(q))) / bands;
}

float4 main(PixelIn i) : SV_Target
{
    int kind = (int)(_Base.a + 0.5);
    float3 n = normalize(i.normal);
    if (!i.front)
    {
        n = -n;
    }
    // tension: the core's Tension Map from the ratio T, or the mesh's own compress/stretch
    float compress = saturate(i.look.z);
    float stretch = saturate(i.look.w);
#if KISEKAE_RENDER_RATIO
    if (i.extra.x > 0.0)
    {
        KisekaeTensionParams TP;
        TP.falloff = _Tension.x;
        TP.stretchArea = _Tension.y;
        TP.compressArea = _Tension.z;
        TP.weightLimit = _Tension.w;
        KisekaeTension t = KisekaeTensionFromRatio(i.extra.x, TP);
        compress = t.compress;
        stretch = t.stretch;
    }
#endif
#if KISEKAE_RENDER_DENT || KISEKAE_RENDER_WRINKLE
    float3 dpdx = ddx(i.world);
    float3 dpdy = ddy(i.world);
#endif
    float3 albedo = _Base.rgb;  // linear
#if KISEKAE_RENDER_MAP
    if (kind == 3 || kind == 4)
    {
        float3 mapped = float3(compress, stretch, 0.0);  // the Tension Map colour (display values)
        if (kind == 3)
        {
            float t = saturate((i.extra.y - _Wrinkle.z) / (_Wrinkle.w - _Wrinkle.z));
            mapped = _Colormap.SampleLevel(_ColormapSampler, float2((t * 255.0 + 0.5) / 256.0, 0.5), 0.0).rgb;
        }
        if (_Eye.w < 0.5)
        {
            return float4(mapped, 1.0);
        }
        albedo = ToLinear(mapped);
    }
#endif
    float ao = 1.0;
    float sss = kind == 0 ? _Look.x : 0.0;
#if KISEKAE_RENDER_DENT
    // the core's tight look; the dent's slope points away from the pressed centre (down the gradient of k)
    float k = saturate(max(i.look.x, i.look.y));
    float3 gradK = SurfaceGradient(n, dpdx, dpdy, ddx(k), ddy(k));
    KisekaeTightParams P;
    P.normalStrength = _Tight.x;
    P.aoStrength = _Tight.y;
    P.sssStrength = _Tight.z;
    KisekaeTightLook(n, ao, sss, -_Tight.w * gradK, i.look.x, i.look.y, P);
#endif
#if KISEKAE_RENDER_WOUND
    float wound = saturate(i.extra.z);
    albedo = lerp(albedo, _WoundColor.rgb, wound);
    ao *= 1.0 - _WoundColor.a * wound;
#endif
#if KISEKAE_RENDER_WRINKLE
    // the core's wrinkle-map weight (one map, driven by compression); its normal is blended by adding
    // slopes, as the core's blend does, here through the surface gradient of the weighted height
    KisekaeWrinkleParams WP;
    WP.useStretch = float4(0.0, 0.0, 0.0, 0.0);
    WP.threshold = float4(_WrinkleMap.x, 0.0, 0.0, 0.0);
    WP.gain = float4(_WrinkleMap.y, 0.0, 0.0, 0.0);
    float weight = KisekaeWrinkleWeights(compress, stretch, float4(1.0, 0.0, 0.0, 0.0), WP).x;
    float wrinkleH = _Look.w * weight * WrinklePattern(i.world, _Wrinkle.x);
    n = normalize(n - SurfaceGradient(n, dpdx, dpdy, ddx(wrinkleH), ddy(wrinkleH)));
#endif

    float3 v = normalize(_Eye.xyz - i.world);
    float ndl = dot(n, _KeyDir.xyz);
    float diffuse = max((ndl + sss) / (1.0 + sss), 0.0);
#if KISEKAE_RENDER_TOON
    diffuse = Toon(diffuse, _KeyDir.w, fwidth(diffuse));
    diffuse = pow(max(diffuse, 1e-8), _FillDir.w);
#endif
    float fill = max(dot(n, _FillDir.xyz), 0.0) * 0.25;
    float3 h = normalize(_KeyDir.xyz + v);
    float spec = ndl > 0.0 && kind != 2 ? _Look.z * pow(max(dot(n, h), 1e-8), 48.0) : 0.0;
#if KISEKAE_RENDER_TOON
    spec = _KeyDir.w > 0.5 ? step(0.5 * _Look.z, spec) * _Look.z : spec;
#endif
    float grazing = 1.0 - max(dot(n, v), 0.0);
    float rim = _Look.y * grazing * grazing * grazing;
    float3 light = (0.16 + diffuse * 0.9 + fill) * ao;
    light += sss * float3(0.35, 0.08, 0.05) * (1.0 - max(ndl, 0.0)) * ao;  // warm scattered light on the shadow side
    float3 c = albedo * light + spec + rim * ao;
    return float4(ToSrgb(c), 1.0);
}
