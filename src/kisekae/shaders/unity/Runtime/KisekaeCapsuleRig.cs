// Writes the posed kisekae capsule rig (and wound hits) to the global shader arrays every frame.
// Capsules live in bone space (bone, p0, p1, r0, r1), as in kisekae's capsule JSON; this component
// transforms them with the bones' localToWorldMatrix in LateUpdate, after animation.
// Units: metres (Unity units). Not compiled or run in kisekae's CI (no Unity there).
// The shader's constant arrays hold MaxCapsules capsules and MaxHits hits (KISEKAE_MAX_CAPSULES and
// KISEKAE_MAX_HITS of kisekae_source_constants.hlsl; change both together). A shader reads only
// min(count, size) entries, so this component refuses a bigger rig (an error naming the object, and it
// disables itself, writing a capsule count of 0) instead of silently dropping the capsules past the end.
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
        public const int MaxCapsules = 128;  // = KISEKAE_MAX_CAPSULES of the shader (arrays are sized once)
        public const int MaxHits = 32;       // = KISEKAE_MAX_HITS

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

        bool _hitsWarned;

        // Null when the rig fits the shader's arrays, else the message that refuses it.
        public string RigProblem()
        {
            if (capsules.Length > MaxCapsules)
                return $"KisekaeCapsuleRig on '{name}': the rig has {capsules.Length} capsules but the shader's " +
                       $"constant arrays hold {MaxCapsules} (KISEKAE_MAX_CAPSULES); raise KISEKAE_MAX_CAPSULES " +
                       "and MaxCapsules together, or use fewer capsules";
            return null;
        }

        void OnValidate()
        {
            string problem = RigProblem();
            if (problem != null) Debug.LogError(problem, this);
        }

        void OnEnable()
        {
            string problem = RigProblem();
            if (problem != null) Refuse(problem);
        }

        void Refuse(string problem)
        {
            Debug.LogError(problem, this);
            Shader.SetGlobalFloat(IdCount, 0);  // no stale or partial rig stays bound
            enabled = false;
        }

        void LateUpdate()
        {
            string problem = RigProblem();
            if (problem != null)
            {
                Refuse(problem);
                return;
            }
            int n = capsules.Length;
            for (int i = 0; i < n; i++)
            {
                var c = capsules[i];
                Matrix4x4 m = c.bone != null ? c.bone.localToWorldMatrix : Matrix4x4.identity;
                // radii scale with the cube root of the determinant (kisekae.avatar.capsules.transform_capsules)
                float s = Mathf.Pow(Mathf.Abs(m.determinant), 1.0f / 3.0f);
                Vector3 a = m.MultiplyPoint3x4(c.p0);
                Vector3 b = m.MultiplyPoint3x4(c.p1);
                _a[i] = new Vector4(a.x, a.y, a.z, c.r0 * s);
                _b[i] = new Vector4(b.x, b.y, b.z, c.r1 * s);
            }
            if (hits.Length > MaxHits && !_hitsWarned)
            {
                Debug.LogWarning($"KisekaeCapsuleRig on '{name}': {hits.Length} hits, the shader holds " +
                                 $"{MaxHits} (KISEKAE_MAX_HITS); only the first {MaxHits} are drawn", this);
                _hitsWarned = true;
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
