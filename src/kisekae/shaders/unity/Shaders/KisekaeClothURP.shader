// URP unlit-lit garment shader: pushes posed garment vertices out of the kisekae capsule rig in the vertex
// stage (KisekaePushOut) and shades with the main light. Tightness/softness come from a mask texture
// (R = tightness, G = softness) sampled per vertex. With "Surface Push" on (keyword KISEKAE_SURFACE_PUSH, shader
// model 4.5), the vertex stage instead draws the corrected garment that KisekaeSurfacePush.cs computes each frame
// (the surface push, KisekaeSurfacePush.compute): world position and normal per vertex, read by SV_VertexID from
// _KisekaeSurfacePositions / _KisekaeSurfaceNormals (set on the renderer by that component).
// Not verified in Unity here (no Unity in CI).
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
        [Toggle(KISEKAE_SURFACE_PUSH)] _KisekaeSurfacePush ("Surface Push (KisekaeSurfacePush.cs)", Float) = 0
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
            #pragma shader_feature_local_vertex _ KISEKAE_SURFACE_PUSH
            #pragma target 4.5 KISEKAE_SURFACE_PUSH
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
        #if defined(KISEKAE_SURFACE_PUSH)
            StructuredBuffer<float4> _KisekaeSurfacePositions;  // xyz = corrected world position (m), w = push (m)
            StructuredBuffer<float4> _KisekaeSurfaceNormals;    // xyz = unit world normal
        #endif

            struct Attributes
            {
                float4 positionOS : POSITION;
                float3 normalOS : NORMAL;
                float2 uv : TEXCOORD0;
                uint vertexID : SV_VertexID;  // = the mesh's vertex index (the bake's garment vertex id)
            };
            struct Varyings { float4 positionCS : SV_POSITION; float3 normalWS : TEXCOORD0; float2 uv : TEXCOORD1; };

            Varyings Vert(Attributes v)
            {
                Varyings o;
            #if defined(KISEKAE_SURFACE_PUSH)
                // The surface push ran in a compute pass on the skinned garment and body (KisekaeSurfacePush.cs).
                o.positionCS = TransformWorldToHClip(_KisekaeSurfacePositions[v.vertexID].xyz);
                o.normalWS = _KisekaeSurfaceNormals[v.vertexID].xyz;
                o.uv = TRANSFORM_TEX(v.uv, _BaseMap);
                return o;
            #else
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
            #endif
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
