// kisekae_render.frag.hlsl - fragment stage of the kisekae Python renderer (kisekae.render).
//
// Effects come from the shader core: the skin's tight look (KisekaeTightLook: normal tilt down the
// pressure slope, AO and SSS loss), the Tension Map colours (KisekaeTensionFromRatio, when the mesh
// carries the ratio T) and the wound morph parameter from the vertex stage. This file adds only what
// a picture needs around them: lights, toon bands, rim, a procedural wrinkle normal pattern blended by
// compression, heat-map colours and sRGB output.
#define KISEKAE_NO_DATA
#include "kisekae_core.hlsl"

cbuffer KisekaeRenderPixel : register(b1)
{
    float4 _Base;       // rgb = base colour (sRGB 0..1), a = material kind (0 skin, 1 cloth, 2 wire, 3 heat, 4 tension)
    float4 _Eye;        // xyz = camera position (m), w = 1 to light heat-map/tension colours
    float4 _KeyDir;     // xyz = unit direction towards the key light, w = toon bands (0 = smooth)
    float4 _FillDir;    // xyz = unit direction towards the fill light, w = contrast exponent
    float4 _Tight;      // core tight look: normalStrength, aoStrength, sssStrength; w = dent depth (m)
    float4 _Look;       // SSS amount, rim strength, specular strength, wrinkle height at compress 1 (m)
    float4 _Wrinkle;    // wrinkle ridges per metre, 1 = tension from the ratio T, heat range lo, hi
    float4 _Tension;    // core tension params: falloff, stretchArea, compressArea, weightLimit
    float4 _WoundColor; // rgb = wound colour at p = 1 (sRGB), a = AO loss at p = 1
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
    if (_Wrinkle.y > 0.5 && i.extra.x > 0.0)
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
    // derivatives first (uniform control flow)
    float3 dpdx = ddx(i.world);
    float3 dpdy = ddy(i.world);
    float k = saturate(max(i.look.x, i.look.y));
    float3 gradK = SurfaceGradient(n, dpdx, dpdy, ddx(k), ddy(k));
    float wrinkleH = _Look.w * compress * WrinklePattern(i.world, _Wrinkle.x);
    float3 gradW = SurfaceGradient(n, dpdx, dpdy, ddx(wrinkleH), ddy(wrinkleH));
    float diffuseWidth = 0.0;

    float3 base = _Base.rgb;
    if (kind == 3)
    {
        float t = saturate((i.extra.y - _Wrinkle.z) / (_Wrinkle.w - _Wrinkle.z));
        base = _Colormap.SampleLevel(_ColormapSampler, float2((t * 255.0 + 0.5) / 256.0, 0.5), 0.0).rgb;
    }
    else if (kind == 4)
    {
        base = float3(compress, stretch, 0.0);
    }
    if ((kind == 3 || kind == 4) && _Eye.w < 0.5)
    {
        return float4(base, 1.0);
    }

    float ao = 1.0;
    float sss = 0.0;
    float wound = saturate(i.extra.z);
    if (kind == 0)
    {
        // the core's tight look; the dent's slope points away from the pressed centre (down the gradient of k)
        sss = _Look.x;
        KisekaeTightParams P;
        P.normalStrength = _Tight.x;
        P.aoStrength = _Tight.y;
        P.sssStrength = _Tight.z;
        KisekaeTightLook(n, ao, sss, -_Tight.w * gradK, i.look.x, i.look.y, P);
        base = lerp(base, _WoundColor.rgb, wound);
        ao *= 1.0 - _WoundColor.a * wound;
    }
    if ((kind == 0 || kind == 1) && _Look.w > 0.0)
    {
        n = normalize(n - gradW);
    }

    float3 v = normalize(_Eye.xyz - i.world);
    float ndl = dot(n, _KeyDir.xyz);
    float diffuse = max((ndl + sss) / (1.0 + sss), 0.0);
    diffuse = pow(Toon(diffuse, _KeyDir.w, fwidth(diffuse)), _FillDir.w);
    float fill = max(dot(n, _FillDir.xyz), 0.0) * 0.25;
    float spec = 0.0;
    if (ndl > 0.0 && kind != 2)
    {
        float3 h = normalize(_KeyDir.xyz + v);
        spec = _Look.z * pow(max(dot(n, h), 0.0), 48.0);
        if (_KeyDir.w > 0.5)
        {
            spec = step(0.5 * _Look.z, spec) * _Look.z;
        }
    }
    float rim = _Look.y * pow(1.0 - max(dot(n, v), 0.0), 3.0);
    float3 albedo = ToLinear(base);
    float3 light = (0.16 + diffuse * 0.9 + fill) * ao;
    if (kind == 0)
    {
        light += sss * float3(0.35, 0.08, 0.05) * (1.0 - max(ndl, 0.0)) * ao;  // warm scattered light on the shadow side
    }
    float3 c = albedo * light + spec + rim * ao;
    return float4(ToSrgb(c), 1.0);
}
