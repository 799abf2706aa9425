// URP unlit-lit garment shader: pushes posed garment vertices out of the kisekae capsule rig in the vertex
// stage (KisekaePushOut) and shades with the main light. Tightness/softness come from a mask texture
// (R = tightness, G = softness) sampled per vertex. Not verified in Unity here (no Unity in CI).
Shader "Kisekae/ClothURP"
{
    Properties
    {
        _BaseMap ("Base Map", 2D) = "white" {}
        _BaseColor ("Base Color", Color) = (1, 1, 1, 1)
        _MaskMap ("Tightness (R) Softness (G)", 2D) = "black" {}
        _Margin ("Margin (m)", Float) = 0.002
        _Stiffness ("Stiffness", Range(0, 1)) = 0.5
        _MaxPush ("Max Push (m)", Float) = 0.1
        _SkirtBias ("Skirt Bias", Range(0, 1)) = 0
        _SmoothK ("Smooth Union (m)", Float) = 0
    }
    SubShader
    {
        Tags { "RenderType" = "Opaque" "RenderPipeline" = "UniversalPipeline" "Queue" = "Geometry+1" }
        Pass
        {
            Name "ForwardLit"
            Tags { "LightMode" = "UniversalForward" }
            HLSLPROGRAM
            #pragma vertex Vert
            #pragma fragment Frag
            #pragma target 3.5
            #include "Packages/com.unity.render-pipelines.universal/ShaderLibrary/Core.hlsl"
            #include "Packages/com.unity.render-pipelines.universal/ShaderLibrary/Lighting.hlsl"
            #include "KisekaeCore.hlsl"

            TEXTURE2D(_BaseMap); SAMPLER(sampler_BaseMap);
            TEXTURE2D(_MaskMap); SAMPLER(sampler_MaskMap);
            CBUFFER_START(UnityPerMaterial)
                float4 _BaseMap_ST;
                float4 _BaseColor;
                float _Margin;
                float _Stiffness;
                float _MaxPush;
                float _SkirtBias;
                float _SmoothK;
            CBUFFER_END

            struct Attributes { float4 positionOS : POSITION; float3 normalOS : NORMAL; float2 uv : TEXCOORD0; };
            struct Varyings { float4 positionCS : SV_POSITION; float3 normalWS : TEXCOORD0; float2 uv : TEXCOORD1; };

            Varyings Vert(Attributes v)
            {
                Varyings o;
                // Unity has already skinned the mesh: positionOS is posed; the rig is in world space.
                float3 world = TransformObjectToWorld(v.positionOS.xyz);
                float2 masks = SAMPLE_TEXTURE2D_LOD(_MaskMap, sampler_MaskMap, v.uv, 0).rg;
                KisekaePushParams P;
                P.margin = _Margin;
                P.stiffness = _Stiffness;
                P.maxPush = _MaxPush;
                P.skirtBias = _SkirtBias;
                P.smoothK = _SmoothK;
                P.up = float3(0.0, 1.0, 0.0);
                float push;
                float d;
                world = KisekaePushOut(world, masks.r, masks.g, P, push, d);
                o.positionCS = TransformWorldToHClip(world);
                o.normalWS = TransformObjectToWorldNormal(v.normalOS);
                o.uv = TRANSFORM_TEX(v.uv, _BaseMap);
                return o;
            }

            half4 Frag(Varyings i) : SV_Target
            {
                Light light = GetMainLight();
                float3 n = normalize(i.normalWS);
                float3 albedo = SAMPLE_TEXTURE2D(_BaseMap, sampler_BaseMap, i.uv).rgb * _BaseColor.rgb;
                float3 rgb = albedo * (light.color * saturate(dot(n, light.direction)) + SampleSH(n));
                return half4(rgb, 1.0);
            }
            ENDHLSL
        }
    }
}
