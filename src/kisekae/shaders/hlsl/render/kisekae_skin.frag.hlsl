// Skin fragment shader for the kisekae Python renderer: Lambert + ambient, with the core's tight look
// (normal, AO, SSS) driven by the tightness and pressure the vertex stage passes in. Output is linear RGBA.
#define KISEKAE_NO_DATA
#include "../kisekae_core.hlsl"

cbuffer KisekaeSkin
{
    float4 _Albedo;          // rgb = skin albedo, a = ambient
    float4 _LightDir;        // xyz = direction towards the light (unit, world), w = SSS wrap amount
    float4 _Tight;           // normalStrength, aoStrength, sssStrength, -
};

struct PixelIn
{
    float3 world : TEXCOORD0;
    float3 normal : TEXCOORD1;
    float4 look : TEXCOORD2;      // x = tightness, y = pressure, z = AO visibility, w = SSS amount
    float3 dent : TEXCOORD3;      // dent direction (world), e.g. the pressure gradient
};

float4 main(PixelIn i) : SV_Target
{
    KisekaeTightParams P;
    P.normalStrength = _Tight.x;
    P.aoStrength = _Tight.y;
    P.sssStrength = _Tight.z;
    float3 n = normalize(i.normal);
    float ao = i.look.z;
    float sss = i.look.w;
    KisekaeTightLook(n, ao, sss, i.dent, i.look.x, i.look.y, P);
    float ndl = dot(n, _LightDir.xyz);
    float wrap = _LightDir.w * sss;
    float diffuse = saturate((ndl + wrap) / (1.0 + wrap));
    float3 rgb = _Albedo.rgb * (diffuse + _Albedo.a * ao);
    return float4(rgb, 1.0);
}
