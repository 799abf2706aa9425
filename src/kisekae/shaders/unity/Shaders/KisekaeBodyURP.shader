// URP lit body shader with kisekae's contact-aware body in the vertex stage: after Unity's skinning, each
// vertex keeps to its side of the planes of its (at most four) bent joints (KisekaeContactPlanes,
// kisekae_contact.hlsl). The joint table comes from KisekaeBodyContact.cs (global arrays); the per-vertex
// joint ids, sides and rest position from UV channels 4, 5 and 6, which that component writes.
// Normals are Unity's skinned normals (the contact step moves vertices along planes and does not turn them).
// With "Prepared Body" on (keyword KISEKAE_PREPARED_BODY, shader model 4.5) the vertex stage instead draws the body
// that KisekaeSurfacePush prepared this frame, by SV_VertexID from _KisekaeBodyPrepared / _KisekaeBodyPreparedNormals
// (world position and unit normal, set on the body's renderer by that component once its first frame has run): the
// joint planes plus the part contact (KisekaeBodyParts), which needs neighbour passes that a vertex stage cannot
// run, so the body drawn is the one the garments were pushed out of.
// Not verified in Unity here (no Unity in CI); the vertex function's HLSL is compiled with glslang in CI.
Shader "Kisekae/BodyURP"
{
    Properties
    {
        _BaseMap ("Base Map", 2D) = "white" {}
        _BaseColor ("Base Color", Color) = (1, 1, 1, 1)
        [Toggle(KISEKAE_PREPARED_BODY)] _KisekaePreparedBody ("Prepared Body (KisekaeSurfacePush.cs parts)", Float) = 0
    }
    SubShader
    {
        Tags { "RenderType" = "Opaque" "RenderPipeline" = "UniversalPipeline" "Queue" = "Geometry" }
        Pass
        {
            Name "ForwardLit"
            Tags { "LightMode" = "UniversalForward" }
            HLSLPROGRAM
            #pragma vertex Vert
            #pragma fragment Frag
            #pragma target 3.5
            #pragma shader_feature_local_vertex _ KISEKAE_PREPARED_BODY
            #pragma target 4.5 KISEKAE_PREPARED_BODY
            #include "Packages/com.unity.render-pipelines.universal/ShaderLibrary/Core.hlsl"
            #include "Packages/com.unity.render-pipelines.universal/ShaderLibrary/Lighting.hlsl"
            #include "KisekaeCore.hlsl"

            TEXTURE2D(_BaseMap); SAMPLER(sampler_BaseMap);
            CBUFFER_START(UnityPerMaterial)
                float4 _BaseMap_ST;
                float4 _BaseColor;
            CBUFFER_END

            struct Attributes
            {
                float4 positionOS : POSITION;
                float3 normalOS : NORMAL;
                float2 uv : TEXCOORD0;
                float4 joints : TEXCOORD4;   // joint ids (ascending; unused slot: id 0, side 0)
                float4 sides : TEXCOORD5;    // +1 child side, -1 parent side, 0 unused
                float3 restPos : TEXCOORD6;  // rest position, mesh space (m)
                uint vertexID : SV_VertexID; // = the mesh's vertex index (KisekaeSurfacePush's body vertex id)
            };
            struct Varyings { float4 positionCS : SV_POSITION; float3 normalWS : TEXCOORD0; float2 uv : TEXCOORD1; };

        #if defined(KISEKAE_PREPARED_BODY)
            StructuredBuffer<float4> _KisekaeBodyPrepared;         // xyz = prepared world position (m)
            StructuredBuffer<float4> _KisekaeBodyPreparedNormals;  // xyz = unit world normal
        #endif

            Varyings Vert(Attributes v)
            {
                Varyings o;
            #if defined(KISEKAE_PREPARED_BODY)
                o.positionCS = TransformWorldToHClip(_KisekaeBodyPrepared[v.vertexID].xyz);
                o.normalWS = _KisekaeBodyPreparedNormals[v.vertexID].xyz;
            #else
                // Unity has already skinned the mesh: positionOS is posed; the joint planes are in world space.
                float3 world = TransformObjectToWorld(v.positionOS.xyz);
                world = KisekaeContactPlanes(world, v.restPos, (uint4)(v.joints + 0.5), v.sides, KISEKAE_CONTACT_PARAMS);
                o.positionCS = TransformWorldToHClip(world);
                o.normalWS = TransformObjectToWorldNormal(v.normalOS);
            #endif
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
