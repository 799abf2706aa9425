// Writes the posed kisekae capsule rig (and wound hits) to the global shader arrays every frame.
// Capsules live in bone space (bone, p0, p1, r0, r1), as in kisekae's capsule JSON; this component
// transforms them with the bones' localToWorldMatrix in LateUpdate, after animation.
// Units: metres (Unity units). Not compiled or run in kisekae's CI (no Unity there).
using System;
using UnityEngine;

namespace Kisekae
{
    [Serializable]
    public struct KisekaeCapsule
    {
        public Transform bone;
        public Vector3 p0;   // bone space, m
        public Vector3 p1;   // bone space, m
        public float r0;     // m
        public float r1;     // m
    }

    [ExecuteAlways]
    public class KisekaeCapsuleRig : MonoBehaviour
    {
        public const int MaxCapsules = 64;   // KISEKAE_MAX_CAPSULES
        public const int MaxHits = 32;       // KISEKAE_MAX_HITS

        public KisekaeCapsule[] capsules = new KisekaeCapsule[0];
        [Tooltip("Hits: xyz = point (world, m), w = body part id")]
        public Vector4[] hits = new Vector4[0];

        static readonly int IdA = Shader.PropertyToID("_KisekaeCapsuleA");
        static readonly int IdB = Shader.PropertyToID("_KisekaeCapsuleB");
        static readonly int IdCount = Shader.PropertyToID("_KisekaeCapsuleCount");
        static readonly int IdHits = Shader.PropertyToID("_KisekaeHits");
        static readonly int IdHitCount = Shader.PropertyToID("_KisekaeHitCount");

        readonly Vector4[] _a = new Vector4[MaxCapsules];
        readonly Vector4[] _b = new Vector4[MaxCapsules];
        readonly Vector4[] _h = new Vector4[MaxHits];

        void LateUpdate()
        {
            int n = Mathf.Min(capsules.Length, MaxCapsules);
            for (int i = 0; i < n; i++)
            {
                var c = capsules[i];
                Matrix4x4 m = c.bone != null ? c.bone.localToWorldMatrix : Matrix4x4.identity;
                // radii scale with the cube root of the determinant (kisekae.fit.capsules.transform_capsules)
                float s = Mathf.Pow(Mathf.Abs(m.determinant), 1.0f / 3.0f);
                Vector3 a = m.MultiplyPoint3x4(c.p0);
                Vector3 b = m.MultiplyPoint3x4(c.p1);
                _a[i] = new Vector4(a.x, a.y, a.z, c.r0 * s);
                _b[i] = new Vector4(b.x, b.y, b.z, c.r1 * s);
            }
            int nh = Mathf.Min(hits.Length, MaxHits);
            for (int i = 0; i < nh; i++) _h[i] = hits[i];
            Shader.SetGlobalVectorArray(IdA, _a);
            Shader.SetGlobalVectorArray(IdB, _b);
            Shader.SetGlobalFloat(IdCount, n);
            Shader.SetGlobalVectorArray(IdHits, _h);
            Shader.SetGlobalFloat(IdHitCount, nh);
        }
    }
}
