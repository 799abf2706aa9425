// Garment fragment shader for the kisekae Python renderer: Lambert + ambient, tinted by the push length.
#define KISEKAE_NO_DATA
#include "../kisekae_core.hlsl"

cbuffer KisekaeGarmentPixel
{
    float4 _Albedo;          // rgb = cloth albedo, a = ambient
    float4 _LightDir;        // xyz = direction towards the light (unit, world); w = push (m) shown fully red
};

struct PixelIn
{
    float3 world : TEXCOORD0;
    float3 normal : TEXCOORD1;
    float push : TEXCOORD2;
};

float4 main(PixelIn i) : SV_Target
{
    float3 n = normalize(i.normal);
    float diffuse = saturate(dot(n, _LightDir.xyz));
    float3 rgb = _Albedo.rgb * (diffuse + _Albedo.a);
    float pushed = _LightDir.w > 0.0 ? saturate(i.push / _LightDir.w) : 0.0;
    rgb = lerp(rgb, float3(1.0, 0.0, 0.0), pushed);
    return float4(rgb, 1.0);
}
